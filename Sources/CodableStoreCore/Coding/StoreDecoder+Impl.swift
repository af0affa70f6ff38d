import Foundation

/// The decoder object: it is the `Decoder` and its own `SingleValueDecodingContainer`; keyed and unkeyed
/// containers are nested structs. One object is reused while descending (`with(node:path:)`), a new one is
/// made only for `superDecoder()` and for containers that escape.
package final class StoreDecoderImpl: Decoder, SingleValueDecodingContainer {
    // Concrete, not generic over the JSON representation: a generic decoder spent a third of its time
    // instantiating generic metadata at run time. Trees (hooks, foreign decoders) are turned into tapes.
    package typealias Node = JSONTape.Index
    /// The JSON, read directly: a record's tape or a whole document's.
    package let tape: JSONTape
    var node: Node
    var path: CodingPathNode
    let session: DecodingSession
    /// Identities in ``tape`` read ahead by the import's reader thread, which ``identityKey(_:_:_:)`` and
    /// ``referenceKey(_:_:_:)`` take instead of reading them again.
    /// Internal, set through ``useKnownIdentities(_:)``: a class property other modules may access is checked for
    /// exclusive access at run time at every read, and ``identityKey(_:_:_:)`` reads it for every identity.
    var known: KnownIdentities?
    /// The stamp of the record ``tape`` holds, when an import may skip it (see ``RowStamps``); set through
    /// ``useRecordStamp(_:)``, internal as ``known`` is.
    var recordStamp: Int64?

    /// Makes the decoder take `known` identities instead of reading them from the tape again.
    package func useKnownIdentities(_ known: KnownIdentities) { self.known = known }
    /// Gives the record its stamp (see ``RowStamps``).
    package func useRecordStamp(_ stamp: Int64?) { recordStamp = stamp }

    init(tape: JSONTape, node: Node, path: CodingPathNode, session: DecodingSession) {
        self.tape = tape
        self.node = node
        self.path = path
        self.session = session
    }

    package var codingPath: [any CodingKey] { path.path }

    // MARK: - Reading the tape
    // A number is converted from its bytes in the tape (no String is made), to nil rather than to a rounded value.

    func bool(_ node: Node) -> Bool { tape.bool(at: node) ?? false }
    func string(_ node: Node) -> String { tape.string(at: node) ?? "" }
    func numberText(_ node: Node) -> String { tape.number(at: node)?.description ?? "" }
    func int64(_ node: Node) -> Int64? { (try? tape.int64(at: node)) ?? nil }
    /// The number as `T` when its value is an integer in `T`'s range; nil otherwise.
    func integer<T: FixedWidthInteger>(_ node: Node, as type: T.Type) -> T? { (try? tape.integer(at: node, as: type)) ?? nil }
    /// The number as a finite `Double`; nil when it overflows.
    func double(_ node: Node) -> Double? {
        guard let value = (try? tape.double(at: node)) ?? nil, value.isFinite else { return nil }
        return value
    }
    func elements(_ node: Node) -> [Node] { Array(tape.elements(of: node)) }
    func member(_ object: Node, key: JSONKey, hint: inout JSONTape.LookupHint) -> Node? {
        tape.value(forKey: key, in: object, hint: &hint)
    }
    /// The members of an object, keys decoded.
    func members(_ object: Node) -> [(key: String, value: Node)] {
        tape.members(of: object).map { (key: tape.string(at: $0.key) ?? "", value: $0.value) }
    }
    package var userInfo: [CodingUserInfoKey: Any] { session.options.userInfo }

    /// Runs `body` with the decoder positioned on another value, then restores it.
    @inline(__always)
    func with<T>(node: Node, path: CodingPathNode, _ body: () throws -> T) rethrows -> T {
        let savedNode = self.node
        let savedPath = self.path
        self.node = node
        self.path = path
        defer {
            self.node = savedNode
            self.path = savedPath
        }
        return try body()
    }

    // MARK: - Decoder

    package func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard tape.kind(of: node) == .object else {
            if tape.kind(of: node) == .null {
                throw DecodingError.valueNotFound(
                    [String: Any].self,
                    DecodingError.Context(
                        codingPath: codingPath,
                        debugDescription: "Cannot get keyed decoding container -- found null value instead"))
            }
            throw typeMismatch([String: Any].self, node, path)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(impl: self, node: node, path: path))
    }

    package func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard tape.kind(of: node) == .array else {
            if tape.kind(of: node) == .null {
                throw DecodingError.valueNotFound(
                    [Any].self,
                    DecodingError.Context(
                        codingPath: codingPath,
                        debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
            }
            throw typeMismatch([Any].self, node, path)
        }
        return UnkeyedContainer(impl: self, node: node, path: path)
    }

    package func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: - Single value

    package func decodeNil() -> Bool { tape.kind(of: node) == .null }
    package func decode(_ type: Bool.Type) throws -> Bool { try unwrapBool(node, path) }
    package func decode(_ type: String.Type) throws -> String { try unwrapString(node, path) }
    package func decode(_ type: Double.Type) throws -> Double { try unwrapFloatingPoint(node, path) }
    package func decode(_ type: Float.Type) throws -> Float { try unwrapFloatingPoint(node, path) }
    package func decode(_ type: Int.Type) throws -> Int { try unwrapInteger(node, path) }
    package func decode(_ type: Int8.Type) throws -> Int8 { try unwrapInteger(node, path) }
    package func decode(_ type: Int16.Type) throws -> Int16 { try unwrapInteger(node, path) }
    package func decode(_ type: Int32.Type) throws -> Int32 { try unwrapInteger(node, path) }
    package func decode(_ type: Int64.Type) throws -> Int64 { try unwrapInteger(node, path) }
    package func decode(_ type: UInt.Type) throws -> UInt { try unwrapInteger(node, path) }
    package func decode(_ type: UInt8.Type) throws -> UInt8 { try unwrapInteger(node, path) }
    package func decode(_ type: UInt16.Type) throws -> UInt16 { try unwrapInteger(node, path) }
    package func decode(_ type: UInt32.Type) throws -> UInt32 { try unwrapInteger(node, path) }
    package func decode(_ type: UInt64.Type) throws -> UInt64 { try unwrapInteger(node, path) }
    package func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(node, as: T.self, path: path) }

    // MARK: - Unwrapping values

    /// Decodes a value of any type at `node`, with fast paths for entities, dates, data, URLs and decimals.
    func unwrap<T: Decodable>(_ node: Node, as type: T.Type, path: CodingPathNode) throws -> T {
        // Metatype comparisons are cheap; protocol casts look up conformances: test the common types first.
        if T.self == String.self { return try unwrapString(node, path) as! T }
        if T.self == Int.self { return try unwrapInteger(node, path) as Int as! T }
        if T.self == Date.self { return try unwrapDate(node, path) as! T }
        if T.self == Double.self { return try unwrapFloatingPoint(node, path) as Double as! T }
        if T.self == Bool.self { return try unwrapBool(node, path) as! T }
        if T.self == Data.self { return try unwrapData(node, path) as! T }
        if T.self == URL.self { return try unwrapURL(node, path) as! T }
        if T.self == Decimal.self { return try unwrapDecimal(node, path) as! T }
        if let entityType = T.self as? any EntityObject.Type {
            return try decodeEntity(entityType, node, path) as! T
        }
        if let collectionType = T.self as? any EntityCollectionDecodable.Type {
            return try with(node: node, path: path) { try collectionType.decodeEntities(from: self) } as! T
        }
        return try with(node: node, path: path) { try T(from: self) }
    }

    func typeMismatch(_ type: Any.Type, _ node: Node, _ path: CodingPathNode) -> DecodingError {
        DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: path.path,
                debugDescription: "Expected to decode \(type) but found \(tape.kind(of: node).foundationDescription) instead."))
    }

    func valueNotFound(_ type: Any.Type, _ path: CodingPathNode) -> DecodingError {
        DecodingError.valueNotFound(
            type,
            DecodingError.Context(
                codingPath: path.path, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
    }

    @inline(__always)
    func check(_ node: Node, _ kind: JSONTape.Kind, _ type: Any.Type, _ path: @autoclosure () -> CodingPathNode) throws {
        let found = tape.kind(of: node)
        if found == kind { return }
        if found == .null { throw valueNotFound(type, path()) }
        throw typeMismatch(type, node, path())
    }

    func unwrapBool(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> Bool {
        try check(node, .bool, Bool.self, path())
        return bool(node)
    }

    func unwrapString(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> String {
        try check(node, .string, String.self, path())
        return string(node)
    }

    func numberDoesNotFit(_ text: String, _ type: Any.Type, _ path: CodingPathNode) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: path.path, debugDescription: "Parsed JSON number <\(text)> does not fit in \(type)."))
    }

    /// An integer of type `T`, exactly: `1e2` and `100.0` are 100 (their value is an integer, as `JSONDecoder`
    /// reads them), while `1.5`, `123456789012345678.9` and anything beyond `T`'s range are a `dataCorrupted`
    /// error at the value's path. The conversion is computed on the decimal digits, never through `Double`, so
    /// two distinct numbers never become one stored value.
    func unwrapInteger<T: FixedWidthInteger>(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> T {
        try check(node, .number, T.self, path())
        if let value = integer(node, as: T.self) { return value }
        throw numberDoesNotFit(numberText(node), T.self, path())
    }

    func unwrapFloatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> T {
        let kind = tape.kind(of: node)
        if kind == .string, case .convertFromString(let positive, let negative, let nan) = session.options.nonConformingFloatDecodingStrategy {
            let text = string(node)
            if text == positive { return .infinity }
            if text == negative { return -.infinity }
            if text == nan { return .nan }
        }
        try check(node, .number, T.self, path())
        if T.self == Float.self {
            // From the text, not through a Double: rounding twice can give a different Float, a number below Float's
            // range would become 0, and one that rounds to Float's largest would read as too large.
            guard let value = (try? tape.float(at: node)) ?? nil, value.isFinite else {
                throw numberDoesNotFit(numberText(node), T.self, path())
            }
            return T(value)
        }
        guard let value = double(node) else {
            throw numberDoesNotFit(numberText(node), T.self, path())
        }
        let converted = T(value)
        if converted.isInfinite {
            throw numberDoesNotFit(numberText(node), T.self, path())
        }
        return converted
    }

    func unwrapDecimal(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> Decimal {
        try check(node, .number, Decimal.self, path())
        let text = numberText(node)
        // Decimal keeps 38 significant digits: `Decimal(string:)` rounds a longer number into another value.
        guard Self.significantDigits(of: text) <= 38, let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
            !value.isNaN
        else {
            throw numberDoesNotFit(text, Decimal.self, path())
        }
        return value
    }

    /// The significant digits of a JSON number's text: its digits before the exponent, less the leading zeros and
    /// the trailing ones (which an exponent holds).
    static func significantDigits(of text: String) -> Int {
        var digits = 0
        var zerosPending = 0
        var seenNonZero = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                return digits
            case UInt8(ascii: "0"):
                if seenNonZero { zerosPending += 1 }
            case UInt8(ascii: "1")...UInt8(ascii: "9"):
                digits += zerosPending + 1
                zerosPending = 0
                seenNonZero = true
            default:
                continue
            }
        }
        return digits
    }

    func unwrapURL(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> URL {
        let text = try unwrapString(node, path())
        guard let url = URL(string: text) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: path().path, debugDescription: "Invalid URL string."))
        }
        return url
    }

    func unwrapDate(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> Date {
        switch session.options.dateDecodingStrategy {
        case .deferredToDate:
            return Date(timeIntervalSinceReferenceDate: try unwrapFloatingPoint(node, path()) as Double)
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try unwrapFloatingPoint(node, path()) as Double)
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: (try unwrapFloatingPoint(node, path()) as Double) / 1000)
        case .iso8601:
            try check(node, .string, String.self, path())
            guard let seconds = iso8601Seconds(node) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: path().path, debugDescription: "Expected date string to be ISO8601-formatted."))
            }
            return Date(timeIntervalSince1970: seconds)
        case .formatted(let formatter):
            let text = try unwrapString(node, path())
            guard let date = formatter.date(from: text) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: path().path, debugDescription: "Date string does not match format expected by formatter."))
            }
            return date
        case .custom(let decode):
            return try with(node: node, path: path()) { try decode(self) }
        }
    }

    /// The ISO 8601 date of a string node, parsed from the tape's bytes (no String for a value read once).
    func iso8601Seconds(_ node: Node) -> Double? {
        tape.parseUTF8(at: node) { ISO8601.parse($0.assumingMemoryBound(to: UInt8.self)) }
    }

    func unwrapData(_ node: Node, _ path: @autoclosure () -> CodingPathNode) throws -> Data {
        switch session.options.dataDecodingStrategy {
        case .base64:
            let text = try unwrapString(node, path())
            guard let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: path().path, debugDescription: "Encountered Data is not valid Base64."))
            }
            return data
        case .deferredToData:
            return try with(node: node, path: path()) { try Data(from: self) }
        case .custom(let decode):
            return try with(node: node, path: path()) { try decode(self) }
        }
    }

    // MARK: - Keys

    /// The member of an object for a (possibly key-path) field key, honoring the key strategy.
    func member(_ object: Node, key: String) -> Node? {
        switch session.options.keyDecodingStrategy {
        case .useDefaultKeys:
            return tape.value(forKey: key, in: object)
        default:
            var found: Node?
            for (raw, value) in members(object) where session.convert(raw, path: path) == key {
                found = value
            }
            return found
        }
    }
}

// MARK: - Keyed container

extension StoreDecoderImpl {
    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let impl: StoreDecoderImpl
        let node: Node
        let path: CodingPathNode

        var codingPath: [any CodingKey] { path.path }

        var allKeys: [Key] {
            impl.members(node).compactMap { Key(stringValue: impl.session.convert($0.key, path: path)) }
        }

        func contains(_ key: Key) -> Bool { impl.member(node, key: key.stringValue) != nil }

        private func value(_ key: Key) throws -> Node {
            guard let value = impl.member(node, key: key.stringValue) else {
                throw DecodingError.keyNotFound(
                    key,
                    DecodingError.Context(
                        codingPath: codingPath,
                        debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
            }
            return value
        }

        private func childPath(_ key: Key) -> CodingPathNode { path.appending(key.stringValue) }

        func decodeNil(forKey key: Key) throws -> Bool { impl.tape.kind(of: try value(key)) == .null }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try impl.unwrapBool(try value(key), childPath(key)) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try impl.unwrapString(try value(key), childPath(key)) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try impl.unwrapFloatingPoint(try value(key), childPath(key)) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try impl.unwrapFloatingPoint(try value(key), childPath(key)) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try impl.unwrapInteger(try value(key), childPath(key)) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try impl.unwrap(try value(key), as: T.self, path: childPath(key))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            let child = try value(key)
            return try StoreDecoderImpl(tape: impl.tape, node: child, path: childPath(key), session: impl.session)
                .container(keyedBy: NestedKey.self)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let child = try value(key)
            return try StoreDecoderImpl(tape: impl.tape, node: child, path: childPath(key), session: impl.session)
                .unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            let key = "super"
            let child = impl.member(node, key: key)
            return StoreDecoderImpl(tape: impl.tape, node: child ?? node, path: path.appending(key), session: impl.session)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            StoreDecoderImpl(tape: impl.tape, node: try value(key), path: childPath(key), session: impl.session)
        }
    }
}

// MARK: - Unkeyed container

extension StoreDecoderImpl {
    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let impl: StoreDecoderImpl
        let elements: [Node]
        let path: CodingPathNode
        private(set) var currentIndex = 0

        init(impl: StoreDecoderImpl, node: Node, path: CodingPathNode) {
            self.impl = impl
            self.elements = impl.elements(node)
            self.path = path
        }

        var codingPath: [any CodingKey] { path.path }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        private mutating func next(_ type: Any.Type) throws -> (Node, CodingPathNode) {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    type,
                    DecodingError.Context(
                        codingPath: path.appending(index: currentIndex).path, debugDescription: "Unkeyed container is at end."))
            }
            defer { currentIndex += 1 }
            return (elements[currentIndex], path.appending(index: currentIndex))
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    Any?.self,
                    DecodingError.Context(
                        codingPath: path.appending(index: currentIndex).path, debugDescription: "Unkeyed container is at end."))
            }
            if impl.tape.kind(of: elements[currentIndex]) == .null {
                currentIndex += 1
                return true
            }
            return false
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { let (n, p) = try next(type); return try impl.unwrapBool(n, p) }
        mutating func decode(_ type: String.Type) throws -> String { let (n, p) = try next(type); return try impl.unwrapString(n, p) }
        mutating func decode(_ type: Double.Type) throws -> Double { let (n, p) = try next(type); return try impl.unwrapFloatingPoint(n, p) }
        mutating func decode(_ type: Float.Type) throws -> Float { let (n, p) = try next(type); return try impl.unwrapFloatingPoint(n, p) }
        mutating func decode(_ type: Int.Type) throws -> Int { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let (n, p) = try next(type); return try impl.unwrapInteger(n, p) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (node, path) = try next(type)
            return try impl.unwrap(node, as: T.self, path: path)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let (node, path) = try next([String: Any].self)
            return try StoreDecoderImpl(tape: impl.tape, node: node, path: path, session: impl.session).container(keyedBy: NestedKey.self)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let (node, path) = try next([Any].self)
            return try StoreDecoderImpl(tape: impl.tape, node: node, path: path, session: impl.session).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            let (node, path) = try next(Any.self)
            return StoreDecoderImpl(tape: impl.tape, node: node, path: path, session: impl.session)
        }
    }
}
