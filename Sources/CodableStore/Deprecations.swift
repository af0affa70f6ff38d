// API kept for source compatibility, each with what replaces it.

extension UnresolvedReferencesError {
    /// Descriptions of the first three references.
    @available(*, deprecated, message: "use references, whose elements say which object refers to what")
    public var examples: [String] { references.prefix(Self.describedReferences).map(\.description) }
}
