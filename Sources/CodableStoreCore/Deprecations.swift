// API kept for source compatibility, each with what replaces it.

extension UnresolvedReferencesError {
    /// Descriptions of the first three references.
    @available(*, deprecated, message: "use references, whose elements say which object refers to what")
    public var examples: [String] { references.prefix(Self.describedReferences).map(\.description) }
}

extension Many {
    /// The objects, in order.
    @available(*, deprecated, renamed: "array")
    public var elements: [Element] {
        get { array }
        set { array = newValue }
    }
}
