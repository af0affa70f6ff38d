extension Many: RandomAccessCollection, MutableCollection, RangeReplaceableCollection {
    public typealias Index = Int

    public var startIndex: Int { array.startIndex }
    public var endIndex: Int { array.endIndex }

    /// The object at `position`, read or replaced.
    ///
    /// ```swift
    /// many[0] = other          // the collection holds `other` first; the store is not changed
    /// ```
    public subscript(position: Int) -> Element {
        get { array[position] }
        set { array[position] = newValue }
    }

    /// Replaces the objects in `subrange` with `newElements`: what `append`, `insert`, `remove` and the other
    /// `RangeReplaceableCollection` operations do.
    ///
    /// - Parameters:
    ///   - subrange: The positions to replace, within the collection's indices.
    ///   - newElements: The objects that take their place.
    public mutating func replaceSubrange<C: Collection>(_ subrange: Range<Int>, with newElements: C) where C.Element == Element {
        array.replaceSubrange(subrange, with: newElements)
    }

    public mutating func reserveCapacity(_ minimumCapacity: Int) {
        array.reserveCapacity(minimumCapacity)
    }

    // The array's own versions, rather than the defaults built on replaceSubrange.

    public mutating func append(_ newElement: Element) {
        array.append(newElement)
    }

    public mutating func append<S: Sequence>(contentsOf newElements: S) where S.Element == Element {
        array.append(contentsOf: newElements)
    }

    public mutating func insert(_ newElement: Element, at position: Int) {
        array.insert(newElement, at: position)
    }

    @discardableResult
    public mutating func remove(at position: Int) -> Element {
        array.remove(at: position)
    }

    public mutating func removeAll(keepingCapacity keepCapacity: Bool = false) {
        array.removeAll(keepingCapacity: keepCapacity)
    }

    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R? {
        try array.withContiguousStorageIfAvailable(body)
    }

    public mutating func withContiguousMutableStorageIfAvailable<R>(
        _ body: (inout UnsafeMutableBufferPointer<Element>) throws -> R
    ) rethrows -> R? {
        try array.withContiguousMutableStorageIfAvailable(body)
    }
}

extension Many: ExpressibleByArrayLiteral {
    /// A collection of the literal's objects, in order.
    ///
    /// ```swift
    /// let pair: Many<Issue> = [first, second]
    /// ```
    public init(arrayLiteral elements: Element...) {
        array = elements
    }
}
