// Declarations kept for source compatibility, each pointing to what replaces it.

extension Many {
    /// The objects, in order.
    @available(*, deprecated, renamed: "array")
    public var elements: [Element] {
        get { array }
        set { array = newValue }
    }
}
