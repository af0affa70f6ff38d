/// A key to look up in ``JSONTape`` objects, with its hash computed once.
///
/// A decoder creates one per coding key and reuses it for every record: a lookup then compares 24-bit hashes
/// and, on a match, the bytes, without creating any string.
public struct JSONKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let string: String
    let hash: UInt32

    public init(_ string: String) {
        var string = string
        string.makeContiguousUTF8()
        self.string = string
        hash = string.withUTF8 { JSONKey.hash(UnsafeRawBufferPointer($0)) }
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
