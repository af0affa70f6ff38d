/// A key to look up in ``JSONTape`` objects, with its hash computed once.
///
/// A decoder creates one per coding key and reuses it for every record: a lookup then compares 24-bit hashes
/// and, on a match, the bytes, without creating any string.
public struct JSONKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let string: String
    let hash: UInt32
    /// The UTF-8 length, and for a key of at most 16 bytes all of its bytes in two words (see ``words(_:)``):
    /// a lookup compares them with a key on the tape without calling `memcmp`.
    let length: UInt32
    let words: (UInt64, UInt64)

    public init(_ string: String) {
        var string = string
        string.makeContiguousUTF8()
        self.string = string
        (hash, length, words) = string.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            return (JSONKey.hash(bytes), UInt32(truncatingIfNeeded: bytes.count), JSONKey.words(bytes))
        }
    }

    public static func == (left: JSONKey, right: JSONKey) -> Bool { left.string == right.string }
    public func hash(into hasher: inout Hasher) { hasher.combine(string) }

    /// Up to 16 bytes as two words that are equal for two byte strings of the same length exactly when their
    /// bytes are: the first and last 8 bytes (overlapping below 16), the first and last 4 (below 8), or the
    /// first, middle and last byte (below 4). Zero for longer strings, which are compared with `memcmp`.
    @inline(__always)
    static func words(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        let count = bytes.count
        if count > 16 { return (0, 0) }
        if count >= 8 {
            return (bytes.loadUnaligned(as: UInt64.self), bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
        }
        if count >= 4 {
            return (
                UInt64(bytes.loadUnaligned(as: UInt32.self)),
                UInt64(bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
            )
        }
        if count > 0 {
            return (UInt64(bytes[0]) | UInt64(bytes[count >> 1]) << 8 | UInt64(bytes[count - 1]) << 16, 0)
        }
        return (0, 0)
    }

    /// What the hinted lookup's common case compares, without the key's `String`: copying it out of an array
    /// costs no reference counting, where copying a `JSONKey` retains and releases its string.
    package var probe: Probe { Probe(hash: hash, length: length, words: words) }

    /// The hash, length and (up to 16) bytes of a key: see ``JSONTape/value(forProbe:in:hint:)``.
    package struct Probe: Sendable {
        let hash: UInt32
        let length: UInt32
        let words: (UInt64, UInt64)
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String { string }

    /// A 24-bit hash of a key's UTF-8, in O(1): the length and the first and last 8 bytes, mixed.
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        let count = bytes.count
        var value = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
        if count >= 8 {
            value ^= bytes.loadUnaligned(as: UInt64.self)
            value = (value &* 0xBF58_476D_1CE4_E5B9) ^ bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 {
            let low = UInt64(bytes.loadUnaligned(as: UInt32.self))
            let high = UInt64(bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
            value ^= low | high << 32
        } else if count > 0 {
            value ^= UInt64(bytes[0]) | UInt64(bytes[count >> 1]) << 8 | UInt64(bytes[count - 1]) << 16
        }
        value = (value ^ (value >> 31)) &* 0x94D0_49BB_1331_11EB
        value ^= value >> 29
        return UInt32(truncatingIfNeeded: value) & 0x00FF_FFFF
    }
}

extension JSONTape {
    /// Remembers where the last lookup in an object stopped (see ``value(forKey:in:hint:)``).
    public struct LookupHint: Sendable {
        var object = -1
        var position = -1

        public init() {}

        init(object: Int, position: Int) {
            self.object = object
            self.position = position
        }
    }

    /// The value of the last member named `key` in the object at `object`; nil if there is none or `object` is not
    /// an object.
    public func value(forKey key: JSONKey, in object: Index) -> Index? {
        var hint = LookupHint()
        return value(forKey: key, in: object, hint: &hint)
    }

    /// The value of the last member named `key`.
    public func value(forKey key: String, in object: Index) -> Index? {
        var key = key
        return key.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            return lookup(bytes, hash: JSONKey.hash(bytes), in: object.position, from: -1).map(Index.init)
        }
    }

    /// The value of the last member named `key`, searching from where the previous lookup with the same `hint`
    /// stopped.
    ///
    /// Decoders ask for keys mostly in document order: keep one hint per object (starting at `LookupHint()`) and
    /// each lookup starts where the previous one found its key. The result is the same as without a hint (the last
    /// duplicate wins: objects with duplicate keys are always searched fully).
    public func value(forKey key: JSONKey, in object: Index, hint: inout LookupHint) -> Index? {
        if let found = value(forProbe: key.probe, in: object, hint: &hint) { return found }
        return searchValue(forKey: key, in: object, hint: &hint)
    }

    /// ``value(forKey:in:hint:)`` after ``value(forProbe:in:hint:)`` found nothing at the hint: the search.
    package func searchValue(forKey key: JSONKey, in object: Index, hint: inout LookupHint) -> Index? {
        if let scanned = scanValue(forProbe: key.probe, in: object, hint: &hint) { return scanned }
        let from = hint.object == object.position ? hint.position : -1
        // The key's string is contiguous UTF-8 (made so by JSONKey.init): read in place, without the copy (and
        // the retain and release) that `withUTF8` needs.
        let found = key.string.utf8.withContiguousStorageIfAvailable { utf8 in
            lookup(UnsafeRawBufferPointer(utf8), hash: key.hash, in: object.position, from: from)
        } ?? {
            var string = key.string
            return string.withUTF8 { lookup(UnsafeRawBufferPointer($0), hash: key.hash, in: object.position, from: from) }
        }()
        guard let found else { return nil }
        hint = LookupHint(object: object.position, position: subtreeEnd(found))
        return Index(found)
    }

    /// The common case of ``value(forKey:in:hint:)``, when keys are asked for in document order: the value of the
    /// member at the hint (without a hint, the first member: the likeliest) if it is the key asked for; nil when
    /// the caller has to search (another key there, a key longer than 16 bytes, an object that may have duplicate
    /// keys). Takes a key's ``JSONKey/probe``, which a caller keeps without reference counting.
    @inline(__always)
    package func value(forProbe probe: JSONKey.Probe, in object: Index, hint: inout LookupHint) -> Index? {
        let from = hint.object == object.position ? hint.position : -1
        guard let found = keyAtHint(probe, in: object.position, at: from >= 0 ? from : object.position + 1) else {
            return nil
        }
        hint = LookupHint(object: object.position, position: subtreeEnd(found))
        return Index(found)
    }

    /// ``searchValue(forKey:in:hint:)`` where it needs nothing but the probe (most searches: keys of at most 16 bytes, in
    /// objects without duplicate keys): the value, or `.some(nil)` when the object has no such key; nil when only the
    /// search by the key itself can tell. A caller that keeps probes apart from keys searches without copying the key.
    @inline(__always)
    package func scanValue(forProbe probe: JSONKey.Probe, in object: Index, hint: inout LookupHint) -> Index?? {
        guard let scanned = scan(for: probe, in: object.position) else { return nil }
        guard let found = scanned else { return .some(nil) }
        hint = LookupHint(object: object.position, position: subtreeEnd(found))
        return Index(found)
    }

    /// Every member of the object at `object` compared with a key of at most 16 bytes by its probe: the position of
    /// the value, or `.some(nil)` when the object has no such key (a field the JSON leaves out: most misses). nil
    /// when this cannot tell: a longer key, an object that may have duplicate keys (the last one wins), not an
    /// object. A member costs a few instructions (its hash and length), where the byte search costs a call.
    @inline(__always)
    private func scan(for probe: JSONKey.Probe, in object: Int) -> Int?? {
        guard probe.length <= 16 else { return nil }
        return nodes.withUnsafeBufferPointer { nodes -> Int?? in
            guard object >= 0, object < nodes.count else { return nil }
            let objectNode = nodes[object]
            guard objectNode.info & (0xF | JSONTape.mayHaveDuplicateKeys) == NodeKind.object.rawValue else { return nil }
            let end = Int(objectNode.a)
            let tag = probe.hash << 8
            var position = object &+ 1
            while position < end {
                let node = nodes[position]
                if node.info & 0xFFFF_FF00 == tag, node.b == probe.length {
                    // Keys are never kept escaped (see JSONTapeBuilderState.key): their bytes are the key's.
                    if let found = keyAtHint(probe, in: object, at: position) { return .some(found) }
                }
                let value = nodes[position &+ 1]
                switch value.info & 0xF {
                case NodeKind.object.rawValue, NodeKind.array.rawValue: position = Int(value.a)
                default: position &+= 2
                }
            }
            return .some(nil)
        }
    }

    /// The member at `position` of the object at `object`: its value's position if its key is the probe's; nil
    /// otherwise, or when the hint does not point at a key of the object.
    @inline(__always)
    private func keyAtHint(_ key: JSONKey.Probe, in object: Int, at position: Int) -> Int? {
        guard key.length <= 16 else { return nil }
        return nodes.withUnsafeBufferPointer { nodes -> Int? in
            guard object >= 0, object < nodes.count else { return nil }
            let objectNode = nodes[object]
            guard objectNode.info & (0xF | JSONTape.mayHaveDuplicateKeys) == NodeKind.object.rawValue,
                position > object, position < Int(objectNode.a)
            else { return nil }
            let node = nodes[position]
            guard node.info & (0xF | JSONTape.escapedInInput) == NodeKind.key.rawValue, node.info >> 8 == key.hash,
                node.b == key.length
            else {
                return nil
            }
            let isInInput = node.info & JSONTape.bytesInInput != 0
            let words: (UInt64, UInt64)? =
                isInInput
                ? input?.buffer.map { JSONKey.words(UnsafeRawBufferPointer(rebasing: $0[Int(node.a)..<Int(node.a + node.b)])) }
                : bytes.withUnsafeBytes { JSONKey.words(UnsafeRawBufferPointer(rebasing: $0[Int(node.a)..<Int(node.a + node.b)])) }
            guard let words, words == key.words else { return nil }
            return position + 1
        }
    }

    /// Whether the key (or string) at `index` is `string`, without creating a `String`.
    public func key(_ index: Index, equals string: String) -> Bool {
        var string = string
        return string.withUTF8 { matches(index.position, UnsafeRawBufferPointer($0)) }
    }

    /// Whether the key (or string) at `index` is `string`, without creating a `String`.
    public func key(_ index: Index, equals string: StaticString) -> Bool {
        guard string.hasPointerRepresentation else { return key(index, equals: string.description) }
        return matches(index.position, UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    @inline(__always)
    private func matches(_ position: Int, _ utf8: UnsafeRawBufferPointer) -> Bool {
        let node = nodes[position]
        guard node.kind == .key || node.kind == .string else { return false }
        // A string kept escaped in its document has the raw length in `b`: compare what it decodes to.
        let isEscaped = node.info & JSONTape.escapedInInput != 0
        guard isEscaped || Int(node.b) == utf8.count else { return false }
        return withBytes(of: node) { bytes in
            bytes.count == utf8.count && Bytes.equal(bytes.baseAddress, utf8.baseAddress, count: utf8.count)
        }
    }

    /// The position of the value of the last member named `utf8` in the object at `object`.
    /// `hint` is the position of a key of this object to start from, or -1.
    func lookup(_ utf8: UnsafeRawBufferPointer, hash: UInt32, in object: Int, from hint: Int) -> Int? {
        let objectNode = nodes[object]
        guard objectNode.kind == .object else { return nil }
        let end = Int(objectNode.a)
        let length = UInt32(truncatingIfNeeded: utf8.count)
        return nodes.withUnsafeBufferPointer { nodes in
            withStorage { storage in
                @inline(__always)
                func isMatch(_ position: Int) -> Bool {
                    let node = nodes[position]
                    guard node.info >> 8 == hash, node.b == length else { return false }
                    return Bytes.equal(storage.bytes(of: node).baseAddress, utf8.baseAddress, count: Int(length))
                }
                @inline(__always)
                func next(_ position: Int) -> Int {
                    let value = nodes[position + 1]
                    switch value.info & 0xF {
                    case NodeKind.object.rawValue, NodeKind.array.rawValue: return Int(value.a)
                    default: return position + 2
                    }
                }
                if objectNode.info & JSONTape.mayHaveDuplicateKeys != 0 {
                    var found: Int?
                    var position = object + 1
                    while position < end {
                        if isMatch(position) { found = position + 1 }
                        position = next(position)
                    }
                    return found
                }
                // No duplicates: the first match is the only one. Start at the hint, then wrap around.
                var start = object + 1
                if hint > object, hint < end, nodes[hint].info & 0xF == NodeKind.key.rawValue { start = hint }
                var position = start
                while position < end {
                    if isMatch(position) { return position + 1 }
                    position = next(position)
                }
                position = object + 1
                while position < start {
                    if isMatch(position) { return position + 1 }
                    position = next(position)
                }
                return nil
            }
        }
    }
}

extension JSONTape {
    /// Whether the value at `index` is a string (or key) whose UTF-8 is `text`'s, byte for byte: compares without
    /// making a `String` (and without Unicode normalization, which `==` on strings applies).
    public func isString(at index: Index, equalTo text: String) -> Bool {
        let node = nodes[index.position]
        guard node.kind == .string || node.kind == .key else { return false }
        var text = text
        return text.withUTF8 { utf8 in
            withBytes(of: node) { bytes in
                utf8.count == bytes.count && Bytes.equal(utf8.baseAddress, bytes.baseAddress, count: utf8.count)
            }
        }
    }
}
