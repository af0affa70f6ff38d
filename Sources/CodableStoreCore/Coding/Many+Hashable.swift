extension Many: Equatable, Hashable {
    /// Whether both hold the same objects in the same order, compared as their ``array``s are: entities by
    /// identity (`===`), unless an entity class declares its own `==`.
    ///
    /// ```swift
    /// Many([ada, grace]) == [ada, grace]       // true
    /// Many([ada, grace]) == [grace, ada]       // false: the order differs
    /// ```
    public static func == (lhs: Many, rhs: Many) -> Bool {
        lhs.array == rhs.array
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(array)
    }
}

extension One: Equatable, Hashable {
    /// Whether both hold the same object (entities compare by identity, `===`, unless their class declares its
    /// own `==`).
    public static func == (lhs: One, rhs: One) -> Bool {
        lhs.object == rhs.object
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(object)
    }
}
