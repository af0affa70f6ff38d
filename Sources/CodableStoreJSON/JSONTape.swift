#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One JSON value (a document or one record of a dump), stored compactly for random access by a decoder.
///
/// The design follows swift-foundation's `JSONMap`: no tree of objects, no dictionaries, no strings created until
/// asked for. A tape is two contiguous buffers: an array of 16-byte nodes in document order (depth-first), and one
/// byte buffer holding the decoded UTF-8 of every string and key and the text of every number. A container node
/// knows its child count and where its subtree ends, so skipping a value is O(1); an object's children are its
/// keys and values, alternating.
///
/// ```swift
/// let tape = try JSONTape.parse(#"{"id": 7, "tags": ["a", "b"]}"#)
/// let id = try tape.value(forKey: "id", in: tape.root).flatMap(tape.number(at:))?.int64()   // 7
/// for tag in tape.elements(of: tape.value(forKey: "tags", in: tape.root)!) { print(tape.string(at: tag)!) }
/// ```
///
/// - Duplicate keys are all kept, in document order (``members(of:)`` shows them); lookups return the **last**
///   one, as `JSONDecoder` does. Objects without duplicates (checked while building) let lookups stop at the first
///   match and start from a hint.
/// - Every node keeps the byte offset of its value in the source (``byteOffset(of:)``), for error messages.
/// - A tape is a value (copy-on-write). A ``JSONRecordStream`` reuses the same buffers for every record: memory
///   stays at the size of the largest record, unless you keep a copy of a record's tape, which is safe (the stream
///   then starts new buffers).
/// - Limits: 4 GiB of source, of string bytes, and 4 billion values per tape.
public struct JSONTape: Sendable, Equatable {
    /// The position of a value in a tape. Only meaningful for the tape it came from.
    public struct Index: Hashable, Comparable, Sendable, CustomStringConvertible {
        public let position: Int

        @inlinable
        init(_ position: Int) {
            self.position = position
        }

        public static func < (lhs: Index, rhs: Index) -> Bool { lhs.position < rhs.position }
        public var description: String { "#\(position)" }
    }

    /// The kind of a JSON value.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        case object, array, string, number, bool, null

        public var description: String {
            switch self {
            case .object: return "an object"
            case .array: return "an array"
            case .string: return "a string"
            case .number: return "a number"
            case .bool: return "a boolean"
            case .null: return "null"
            }
        }
    }

    /// A tape that exceeds the limits (4 GiB, 4 billion values).
    public struct LimitError: Error, Sendable, CustomStringConvertible {
        public var description: String { "JSON value too large for a tape (over 4 GiB or 4 billion values)" }
    }

    /// 16 bytes: `info` = kind (bits 0-3) | flags (bits 4-7) | key hash (bits 8-31);
    /// `offset` = source offset relative to `baseOffset`;
    /// strings, keys and numbers: `a` = start in `bytes`, `b` = length;
    /// objects and arrays: `a` = index after the last node of the subtree, `b` = member or element count;
    /// booleans: `a` = 0 or 1.
    @usableFromInline
    struct Node: Equatable, Sendable {
        @usableFromInline var info: UInt32
        @usableFromInline var offset: UInt32
        @usableFromInline var a: UInt32
        @usableFromInline var b: UInt32

        @inlinable @inline(__always) var kind: NodeKind { NodeKind(rawValue: info & 0xF)! }
        @inline(__always) var keyHash: UInt32 { info >> 8 }
    }

    @usableFromInline
    enum NodeKind: UInt32 {
        case object, array, string, number, bool, null, key
    }

    /// Set on an object that has (or, beyond 64 members, may have) duplicate keys.
    static let mayHaveDuplicateKeys: UInt32 = 1 << 4
    /// Set on a string, key or number whose bytes are in ``input`` (at `a`) rather than in ``bytes``.
    static let bytesInInput: UInt32 = 1 << 5
    /// Set (with ``bytesInInput``) on a string whose text in ``input`` still has its escapes: decoded when read.
    static let escapedInInput: UInt32 = 1 << 6

    // Reached by the inlinable accessors below: the decoder (in another module) reads the tape on every value.
    @usableFromInline var nodes = NodeBuffer()
    var bytes = ByteBuffer()
    /// The document a whole-document parse read (``withDocumentTape(_:maximumDepth:_:)``), so that strings
    /// without escapes and numbers are not copied: a tape of a 47 MiB dump holds 30 MB less. `nil` when every
    /// value's bytes are in ``bytes`` (a record stream reuses its input buffer, so it copies).
    var input: BorrowedBytes?

    /// Bytes a tape may read only while their owner lends them; reading after that stops the program instead of
    /// reading freed memory.
    final class BorrowedBytes: @unchecked Sendable {
        fileprivate(set) var buffer: UnsafeRawBufferPointer?
        init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }
    }
    /// The absolute source offset of the value (a record's offset in the dump); node offsets are relative to it.
    public internal(set) var baseOffset = 0

    /// An empty tape (no value).
    public init() {}

    init(nodes: NodeBuffer, bytes: ByteBuffer, input: BorrowedBytes?, baseOffset: Int) {
        self.nodes = nodes
        self.bytes = bytes
        self.input = input
        self.baseOffset = baseOffset
    }

    /// Whether the tape holds no value.
    public var isEmpty: Bool { nodes.isEmpty }

    /// The number of values in the tape, keys included.
    public var nodeCount: Int { nodes.count }

    /// The top-level value.
    public var root: Index {
        precondition(!nodes.isEmpty, "JSONTape.root on an empty tape")
        return Index(0)
    }

    // MARK: - Scalars

    @inlinable @inline(__always)
    public func kind(of index: Index) -> Kind {
        switch nodes[index.position].kind {
        case .object: return .object
        case .array: return .array
        case .string, .key: return .string
        case .number: return .number
        case .bool: return .bool
        case .null: return .null
        }
    }

    @inlinable
    public func isNull(_ index: Index) -> Bool { nodes[index.position].kind == .null }

    @inlinable
    public func bool(at index: Index) -> Bool? {
        let node = nodes[index.position]
        return node.kind == .bool ? node.a != 0 : nil
    }

    /// The string (or key) at `index`, decoded; nil for other kinds.
    public func string(at index: Index) -> String? {
        let node = nodes[index.position]
        guard node.kind == .string || node.kind == .key else { return nil }
        if node.info & JSONTape.escapedInInput != 0 {
            return withStorage { JSONTape.unescapedString($0.bytes(of: node)) }
        }
        return withBytes(of: node) { String(validatedUTF8: $0) }
    }

    /// The number at `index`; nil for other kinds.
    public func number(at index: Index) -> JSONNumber? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        return JSONNumber(unchecked: withBytes(of: node) { String(decoding: $0, as: UTF8.self) })
    }

    /// Calls `body` with the UTF-8 of a string or key, or the text of a number, without copying; nil for other kinds.
    public func withUTF8<Result>(
        at index: Index,
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result? {
        let node = nodes[index.position]
        switch node.kind {
        case .string, .key, .number: return try withBytes(of: node, body)
        default: return nil
        }
    }

    /// Reads a `Double` from the UTF-8 bytes of a string, key or number (a date's seconds, say); nil for other
    /// values, or when `parse` returns nil. ``withUTF8(at:_:)`` without its generic closure and result, which a caller
    /// in another module pays for unspecialized (about 200 instructions a call, callgrind).
    public func parseUTF8(at index: Index, _ parse: (UnsafeRawBufferPointer) -> Double?) -> Double? {
        let node = nodes[index.position]
        switch node.kind {
        case .string, .key, .number: return withBytes(of: node, parse)
        default: return nil
        }
    }

    @inline(__always)
    func withBytes<Result>(of node: Node, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withStorage { storage in
            guard node.info & JSONTape.escapedInInput != 0 else { return try body(storage.bytes(of: node)) }
            return try JSONTape.unescape(storage.bytes(of: node)).withUnsafeBytes(body)
        }
    }

    /// Where scalar bytes are: the tape's own buffer, and the borrowed input (empty when there is none).
    struct Storage {
        let owned: UnsafeRawBufferPointer
        let borrowed: UnsafeRawBufferPointer

        @inline(__always)
        func bytes(of node: Node) -> UnsafeRawBufferPointer {
            let buffer = node.info & JSONTape.bytesInInput != 0 ? borrowed : owned
            return UnsafeRawBufferPointer(rebasing: buffer[Int(node.a)..<Int(node.a + node.b)])
        }
    }

    @inline(__always)
    func withStorage<Result>(_ body: (Storage) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBytes { owned in
            var borrowed = UnsafeRawBufferPointer(start: nil, count: 0)
            if let input {
                guard let buffer = input.buffer else {
                    preconditionFailure("a JSON tape was used after the document it borrowed from was released")
                }
                borrowed = buffer
            }
            return try body(Storage(owned: owned, borrowed: borrowed))
        }
    }

    /// Tapes are equal when they hold the same values at the same offsets, wherever their bytes are kept.
    public static func == (left: JSONTape, right: JSONTape) -> Bool {
        guard left.baseOffset == right.baseOffset, left.nodes.count == right.nodes.count else { return false }
        let flags = bytesInInput | escapedInInput
        for (a, b) in zip(left.nodes, right.nodes) {
            guard a.info & ~flags == b.info & ~flags, a.offset == b.offset else { return false }
            switch a.kind {
            case .string, .key, .number:
                let equal = left.withBytes(of: a) { a in right.withBytes(of: b) { b in a.elementsEqual(b) } }
                guard equal else { return false }
            default:
                guard a.a == b.a, a.b == b.b else { return false }
            }
        }
        return true
    }

    /// The absolute byte offset of the value in the source.
    @inlinable
    public func byteOffset(of index: Index) -> Int {
        baseOffset + Int(nodes[index.position].offset)
    }

    // MARK: - Containers

    /// The number of members of an object or elements of an array; 0 for other kinds.
    @inlinable
    public func count(of index: Index) -> Int {
        let node = nodes[index.position]
        switch node.kind {
        case .object, .array: return Int(node.b)
        default: return 0
        }
    }

    /// The position just after the value at `position` and everything inside it.
    @inlinable @inline(__always)
    func subtreeEnd(_ position: Int) -> Int {
        let node = nodes[position]
        switch node.kind {
        case .object, .array: return Int(node.a)
        default: return position + 1
        }
    }

    /// The elements of an array, in order (empty for other kinds).
    @inlinable
    public func elements(of index: Index) -> Elements {
        let node = nodes[index.position]
        guard node.kind == .array else { return Elements(tape: self, start: 0, end: 0) }
        return Elements(tape: self, start: index.position + 1, end: Int(node.a))
    }

    /// The `n`th element of an array (O(n): elements have different sizes; iterate for sequential access).
    public func element(_ n: Int, of index: Index) -> Index? {
        guard n >= 0, n < count(of: index), kind(of: index) == .array else { return nil }
        var position = index.position + 1
        for _ in 0..<n { position = subtreeEnd(position) }
        return Index(position)
    }

    /// The members of an object, in document order, duplicates included (empty for other kinds).
    public func members(of index: Index) -> Members {
        let node = nodes[index.position]
        guard node.kind == .object else { return Members(tape: self, start: 0, end: 0) }
        return Members(tape: self, start: index.position + 1, end: Int(node.a))
    }

    public struct Elements: Sequence {
        @usableFromInline let tape: JSONTape
        @usableFromInline let start: Int
        @usableFromInline let end: Int

        @inlinable
        init(tape: JSONTape, start: Int, end: Int) {
            self.tape = tape
            self.start = start
            self.end = end
        }

        @inlinable
        public func makeIterator() -> Iterator { Iterator(tape: tape, position: start, end: end) }

        public struct Iterator: IteratorProtocol {
            @usableFromInline let tape: JSONTape
            @usableFromInline var position: Int
            @usableFromInline let end: Int

            @inlinable
            init(tape: JSONTape, position: Int, end: Int) {
                self.tape = tape
                self.position = position
                self.end = end
            }

            @inlinable
            public mutating func next() -> Index? {
                guard position < end else { return nil }
                let element = Index(position)
                position = tape.subtreeEnd(position)
                return element
            }
        }
    }

    public struct Members: Sequence {
        let tape: JSONTape
        let start: Int
        let end: Int

        public func makeIterator() -> Iterator { Iterator(tape: tape, position: start, end: end) }

        public struct Iterator: IteratorProtocol {
            let tape: JSONTape
            var position: Int
            let end: Int

            public mutating func next() -> (key: Index, value: Index)? {
                guard position < end else { return nil }
                let member = (key: Index(position), value: Index(position + 1))
                position = tape.subtreeEnd(position + 1)
                return member
            }
        }
    }

    // MARK: - Parsing

    /// Parses a whole (small) document into a tape. For dumps, use ``JSONRecordStream``.
    public static func parse(_ bytes: some ContiguousBytes, maximumDepth: Int = 512) throws -> JSONTape {
        try bytes.withUnsafeBytes { buffer in try build(buffer, borrowing: nil, maximumDepth: maximumDepth) }
    }

    /// Parses a whole document into a tape that copies its scalars, or (`borrowing`) points into the document.
    private static func build(
        _ buffer: UnsafeRawBufferPointer, borrowing: BorrowedBytes?, maximumDepth: Int
    ) throws -> JSONTape {
        let builder = JSONTapeBuilder()
        let reader = JSONReader(options: .init(maximumDepth: maximumDepth), handler: builder)
        builder.input = borrowing
        builder.reserveCapacity(forInputSize: buffer.count, borrowing: borrowing == nil ? nil : buffer)
        try reader.parse(buffer)
        try reader.finish()
        builder.endBorrowing()
        return builder.tape
    }

    /// Parses a whole document and calls `body` with its tape, which reads strings without escapes and numbers
    /// straight from `data` instead of copying them. The tape must not be used after `body` returns.
    package static func withDocumentTape<Result>(
        _ data: Data, maximumDepth: Int = 512, _ body: (JSONTape) throws -> Result
    ) throws -> Result {
        try data.withUnsafeBytes { buffer in
            let borrowed = BorrowedBytes(buffer)
            defer { borrowed.buffer = nil }
            return try body(try build(buffer, borrowing: borrowed, maximumDepth: maximumDepth))
        }
    }

    /// Parses a whole (small) document into a tape.
    public static func parse(_ text: String, maximumDepth: Int = 512) throws -> JSONTape {
        try parse(Array(text.utf8), maximumDepth: maximumDepth)
    }
}
