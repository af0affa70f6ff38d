/// A set of field indexes (0..<128), stored inline: which fields changed, which relationships are unloaded.
public struct FieldSet: Hashable, Sendable {
    /// The largest number of fields an entity may have.
    public static let capacity = 128

    @usableFromInline var low: UInt64 = 0
    @usableFromInline var high: UInt64 = 0

    public init() {}

    @inlinable public var isEmpty: Bool { low == 0 && high == 0 }

    @inlinable public func contains(_ index: Int) -> Bool {
        index < 64 ? low & (1 << UInt64(index)) != 0 : high & (1 << UInt64(index - 64)) != 0
    }

    @inlinable public mutating func insert(_ index: Int) {
        if index < 64 { low |= 1 << UInt64(index) } else { high |= 1 << UInt64(index - 64) }
    }

    @inlinable public mutating func remove(_ index: Int) {
        if index < 64 { low &= ~(1 << UInt64(index)) } else { high &= ~(1 << UInt64(index - 64)) }
    }

    @inlinable public mutating func removeAll() {
        low = 0
        high = 0
    }

    /// Calls `body` with each index, ascending, without making the array ``indexes`` makes (an allocation per call,
    /// per object a save plans).
    @inline(__always)
    func forEachIndex(_ body: (Int) throws -> Void) rethrows {
        var bits = low
        while bits != 0 {
            try body(bits.trailingZeroBitCount)
            bits &= bits - 1
        }
        bits = high
        while bits != 0 {
            try body(64 + bits.trailingZeroBitCount)
            bits &= bits - 1
        }
    }

    /// The indexes, ascending.
    public var indexes: [Int] {
        var result: [Int] = []
        var bits = low
        while bits != 0 {
            result.append(bits.trailingZeroBitCount)
            bits &= bits - 1
        }
        bits = high
        while bits != 0 {
            result.append(64 + bits.trailingZeroBitCount)
            bits &= bits - 1
        }
        return result
    }
}
