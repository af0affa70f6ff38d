/// A set of objects by identity, for the bookkeeping that runs for every object an import uses or decodes (see
/// ``ObjectRetention``, and `DecodingSession`'s count of decoded objects).
///
/// `Set<ObjectIdentifier>` hashes each insertion with the standard library's seeded SipHash: about 150 instructions,
/// which made a tenth of an import's hashing (counted with callgrind). An object's address needs no such hash: it is
/// spread by one multiplication (Fibonacci hashing) into a table of addresses with linear probing.
///
/// It does not retain its objects: the caller keeps every object alive while it is in the set (an address freed
/// and reused would otherwise answer for a new object).
package struct ObjectSet {
    /// Addresses, 0 for an empty slot; the count is a power of two, at most three quarters full.
    private var slots: [UInt]
    /// 64 minus log2 of the slot count: the product's top bits pick the slot.
    private var shift: UInt64
    /// The number of objects in the set.
    private(set) var count = 0

    /// A set with room for `minimumCapacity` objects before it grows.
    package init(minimumCapacity: Int = 0) {
        var capacity = 16
        while capacity / 4 * 3 < minimumCapacity { capacity *= 2 }
        slots = Array(repeating: 0, count: capacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private func home(of address: UInt) -> Int {
        Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// Adds `object`; returns whether it was not in the set yet.
    @discardableResult
    package mutating func insert(_ object: AnyObject) -> Bool {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        if (count + 1) > slots.count / 4 * 3 { grow() }
        let mask = slots.count - 1
        var slot = home(of: address)
        while true {
            let found = slots[slot]
            if found == address { return false }
            if found == 0 {
                slots[slot] = address
                count += 1
                return true
            }
            slot = (slot + 1) & mask
        }
    }

    /// Whether `object` is in the set.
    package func contains(_ object: AnyObject) -> Bool {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        let mask = slots.count - 1
        var slot = home(of: address)
        while true {
            let found = slots[slot]
            if found == address { return true }
            if found == 0 { return false }
            slot = (slot + 1) & mask
        }
    }

    /// Empties the set, keeping its room.
    mutating func removeAll() {
        guard count > 0 else { return }
        for slot in slots.indices { slots[slot] = 0 }
        count = 0
    }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: 0, count: old.count * 2)
        shift -= 1
        let mask = slots.count - 1
        for address in old where address != 0 {
            var slot = home(of: address)
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = address
        }
    }
}
