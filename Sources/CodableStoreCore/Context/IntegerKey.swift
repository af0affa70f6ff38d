/// An `Int64` as a dictionary key with a cheap hash: the key type of the context's registries (row id → object)
/// and of its identity index for single integer identities, which an import reads and writes about twenty times
/// per record.
///
/// `Int64`'s own hash is SipHash-1-3 over the integer, about a hundred instructions (callgrind: with it, the 100k
/// import's decoding thread ran about 8% more instructions). This one is a 64-bit finalizer (two multiplications) over the integer mixed with the
/// dictionary's seed, which the standard library draws at random per process: keys taken from input (identities
/// in an API's JSON) still cannot be chosen to collide without it. Every other part of `Dictionary` stays.
struct IntegerKey: Hashable {
    let value: Int64

    init(_ value: Int64) { self.value = value }

    func hash(into hasher: inout Hasher) { hasher.combine(value) }

    // The hashing entry point `Dictionary` and `Set` call (an underscored requirement of `Hashable` that the
    // standard library's own integer keys implement too).
    func _rawHashValue(seed: Int) -> Int {
        var mixed = UInt64(bitPattern: value) ^ UInt64(bitPattern: Int64(seed))
        mixed = (mixed ^ (mixed >> 33)) &* 0xFF51_AFD7_ED55_8CCD
        mixed = (mixed ^ (mixed >> 33)) &* 0xC4CE_B9FE_1A85_EC53
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 33))
    }
}

extension Dictionary where Key == IntegerKey {
    /// The value of an integer key, without spelling the wrapper at every use.
    subscript(_ key: Int64) -> Value? {
        get { self[IntegerKey(key)] }
        _modify { yield &self[IntegerKey(key)] }
    }

    subscript(_ key: Int64, default defaultValue: @autoclosure () -> Value) -> Value {
        get { self[IntegerKey(key), default: defaultValue()] }
        _modify { yield &self[IntegerKey(key), default: defaultValue()] }
    }

    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: Int64) -> Value? {
        updateValue(value, forKey: IntegerKey(key))
    }
}
