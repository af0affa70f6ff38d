/// Splits a JSON dump of any size into records, one ``JSONTape`` at a time, in bounded memory.
///
/// Feed it chunks (``feed(_:_:)``), then call ``finish(_:)``; each complete record is handed to your closure as soon
/// as its last byte is parsed, with its index and position. Only the current record is kept, in buffers reused from
/// one record to the next, so memory depends on the largest record, not on the size of the dump. Everything outside
/// the records (a wrapper object around the array) is skipped without building any value.
///
/// ```swift
/// let stream = JSONRecordStream(mode: .array(atPath: "data.items"))
/// try stream.read(contentsOfFile: "dump.json") { record in
///     try importer.decode(record.tape, index: record.index)
/// }
/// ```
///
/// Modes:
/// - ``Mode/array``: the document is an array of records (`[{…}, {…}]`).
/// - ``Mode/array(atPath:separator:)``: the records are the array at a key path in a wrapper object
///   (`{"data": {"items": [{…}, {…}]}, "next": …}`). A missing path, a value that is not an array at the path,
///   or a key of the path that appears twice is an error.
/// - ``Mode/jsonLines``: one value per line (`\n` or `\r\n`); blank lines are skipped.
///
/// A syntax error inside (or in place of) record N is a ``JSONSyntaxError`` whose ``JSONSyntaxError/recordIndex``
/// is N, with the absolute byte offset, line and column. Errors thrown by your closure are rethrown unchanged. After
/// an error the stream stays failed, except for a JSON Lines line that is not valid JSON when a
/// ``malformedLineHandler`` is set.
public final class JSONRecordStream {
    /// Where the records are.
    public struct Mode: Sendable, Hashable, CustomStringConvertible {
        enum Storage: Sendable, Hashable {
            case array(path: [String])
            case jsonLines
        }

        let storage: Storage

        /// The document is an array of records.
        public static let array = Mode(storage: .array(path: []))

        /// The records are the array at `path` (keys separated by `separator`) inside a wrapper object.
        /// An empty `path` is the top-level array.
        public static func array(atPath path: String, separator: Character = ".") -> Mode {
            guard !path.isEmpty else { return .array }
            return array(atKeys: path.split(separator: separator, omittingEmptySubsequences: false).map(String.init))
        }

        /// The records are the array at the key path `keys` inside a wrapper object (`[]` for a top-level array).
        public static func array(atKeys keys: [String]) -> Mode {
            Mode(storage: .array(path: keys))
        }

        /// JSON Lines: one value per line.
        public static let jsonLines = Mode(storage: .jsonLines)

        public var description: String {
            switch storage {
            case .array(let path) where path.isEmpty: return "top-level array"
            case .array(let path): return "array at '\(path.joined(separator: "."))'"
            case .jsonLines: return "JSON Lines"
            }
        }
    }

    public typealias RecordHandler = (borrowing JSONRecord) throws -> Void

    public let mode: Mode
    private let splitter: RecordSplitter
    private let reader: JSONReader
    private let isJSONLines: Bool
    private var failure: (any Error)?
    private var finished = false
    /// JSON Lines: the rest of the current line is skipped (its value had a syntax error).
    private var discardingLine = false
    /// JSON Lines: the absolute offset of the chunk being fed.
    private var chunkOffset = 0

    /// JSON Lines only: when set, a line that is not valid JSON does not end the stream. The handler gets the
    /// line's syntax error (with its record index, offset, line and column) and the stream goes on with the next
    /// line. The bad line takes a record index, so the records after it keep the index of their line. An error
    /// the handler throws ends the stream.
    ///
    /// A syntax error in an array always ends the stream: where the next record would start cannot be known.
    public var malformedLineHandler: ((JSONSyntaxError) throws -> Void)?

    public init(mode: Mode, maximumDepth: Int = 512) {
        self.mode = mode
        switch mode.storage {
        case .array(let path):
            splitter = RecordSplitter(path: path, isJSONLines: false)
            isJSONLines = false
        case .jsonLines:
            splitter = RecordSplitter(path: [], isJSONLines: true)
            isJSONLines = true
        }
        reader = JSONReader(options: .init(maximumDepth: maximumDepth), handler: splitter)
        reader.isJSONLines = isJSONLines
        splitter.reader = reader
    }

    /// The number of records handed out so far, and of JSON Lines lines given to the ``malformedLineHandler``.
    public var recordCount: Int { splitter.nextIndex }

    /// The number of bytes consumed so far.
    public var byteOffset: Int { reader.byteOffset }

    /// Parses the next chunk and calls `onRecord` for every record completed in it.
    public func feed(_ chunk: UnsafeRawBufferPointer, _ onRecord: RecordHandler) throws {
        precondition(!finished, "JSONRecordStream.feed(_:_:) called after finish(_:)")
        if let failure { throw failure }
        try run(onRecord) {
            if isJSONLines {
                defer { chunkOffset += chunk.count }
                try feedLines(chunk)
            } else {
                try reader.parse(chunk)
            }
        }
    }

    /// Ends the input: completes the last record (a JSON Lines line without a final line feed) and checks that the
    /// document is complete.
    public func finish(_ onRecord: RecordHandler) throws {
        precondition(!finished, "JSONRecordStream.finish(_:) called twice")
        if let failure { throw failure }
        try run(onRecord) {
            if isJSONLines {
                if !discardingLine {
                    reader.isLastLine = true
                    try recoveringLine(through: chunkOffset, UnsafeRawBufferPointer(start: nil, count: 0), endLine)
                }
            } else {
                try reader.finish()
                try splitter.checkComplete()
            }
        }
        finished = true
    }

    private func run(_ onRecord: RecordHandler, _ body: () throws -> Void) throws {
        try withoutActuallyEscaping(onRecord) { onRecord in
            splitter.onRecord = onRecord
            defer { splitter.onRecord = nil }
            do {
                try body()
            } catch var error as JSONSyntaxError where !splitter.callbackFailed {
                // A malformed-line handler's error already has its line's index.
                if splitter.isInRecordArea, error.recordIndex == nil { error.recordIndex = splitter.nextIndex }
                failure = error
                throw error
            } catch {
                failure = error
                throw error
            }
        }
    }

    /// JSON Lines: each line goes to a fresh parse; the line feed itself is not given to yajl, so an incomplete
    /// value is reported at the end of its line.
    private func feedLines(_ chunk: UnsafeRawBufferPointer) throws {
        var rest = chunk
        while !rest.isEmpty {
            let found = Bytes.firstIndex(of: 0x0A, in: rest.baseAddress!, count: rest.count)
            let length = found ?? rest.count
            let segment = UnsafeRawBufferPointer(rebasing: rest[0..<length])
            let segmentEnd = chunkOffset + (rest.baseAddress! - chunk.baseAddress!) + length
            if discardingLine {
                reader.discard(through: segmentEnd, segment)
            } else {
                try recoveringLine(through: segmentEnd, segment) { try reader.parse(segment) }
            }
            guard found != nil else { return }
            if !discardingLine { try recoveringLine(through: segmentEnd, segment, endLine) }
            discardingLine = false
            reader.skipLineFeed()
            reader.startNextValue()
            rest = UnsafeRawBufferPointer(rebasing: rest[(length + 1)...])
        }
    }

    /// JSON Lines: completes the value of the line that ends and hands out its record.
    private func endLine() throws {
        try reader.flushPendingByteOrderMark()
        if reader.hasContent { try reader.completeValue() }
        try splitter.flushPendingRecord()
    }

    /// Runs `body` on the current line; with a ``malformedLineHandler``, a syntax error gives the line up instead
    /// of ending the stream: what was read of it so far ends at the absolute offset `end`, with `bytes` the input
    /// that ends there.
    private func recoveringLine(through end: Int, _ bytes: UnsafeRawBufferPointer, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch var error as JSONSyntaxError where malformedLineHandler != nil && !splitter.callbackFailed {
            error.recordIndex = splitter.nextIndex
            reader.discard(through: end, bytes)
            splitter.abandonRecord()
            discardingLine = true
            try malformedLineHandler?(error)
        }
    }
}

/// A stream belongs to one import on one thread.
@available(*, unavailable)
extension JSONRecordStream: Sendable {}

// MARK: - Splitting

/// The reader's handler: finds the records and builds each one's tape.
final class RecordSplitter: JSONEventHandler {
    private enum Phase {
        /// Looking for the records array (through the wrapper objects of the path).
        case seeking
        /// Inside the records array.
        case records
        /// After the records array.
        case done
    }

    /// The path to the records array, as UTF-8.
    private let path: [[UInt8]]
    private let pathText: [String]
    private let isJSONLines: Bool
    weak var reader: JSONReader?
    var onRecord: JSONRecordStream.RecordHandler?
    private(set) var callbackFailed = false

    private let builder = JSONTapeBuilder()
    private var phase: Phase
    /// Open containers.
    private var depth = 0
    /// The depth of the records (values directly inside the records array; 0 in JSON Lines).
    private var recordDepth: Int
    /// How many keys of the path have been matched (the matched objects still open, after the array).
    private var matched = 0
    /// Whether the last key read is the next key of the path.
    private var keyMatched = false
    private var inRecord = false
    private var recordStart = 0
    private var recordLine = 0
    private var recordColumn = 0
    private var hasPendingRecord = false
    private(set) var nextIndex = 0

    init(path: [String], isJSONLines: Bool) {
        self.path = path.map { Array($0.utf8) }
        pathText = path
        self.isJSONLines = isJSONLines
        phase = isJSONLines ? .records : .seeking
        recordDepth = isJSONLines ? 0 : path.count + 1
    }

    /// Whether an error now concerns record `nextIndex`.
    var isInRecordArea: Bool { phase == .records }

    /// At the end of the document: the records array must have been found.
    func checkComplete() throws {
        guard phase == .done || isJSONLines else {
            // Unreachable for a complete document (the root's end is checked), kept as a safety net.
            throw error("no array of records at \(pathDescription(path.count))", at: reader?.byteOffset ?? 0)
        }
    }

    // MARK: Events

    // Inside a record (nearly every event), an event goes straight to the builder; what happens outside records
    // is out of line, so that the reader, which calls these methods directly (`JSONReader.splitter`), inlines
    // only the common path.

    @inline(__always)
    func startObject(at offset: Int) throws {
        if inRecord {
            depth += 1
            return try builder.startObject(at: offset)
        }
        try containerStartsOutside(isObject: true, at: offset)
    }

    @inline(__always)
    func startArray(at offset: Int) throws {
        if inRecord {
            depth += 1
            return try builder.startArray(at: offset)
        }
        try containerStartsOutside(isObject: false, at: offset)
    }

    @inline(never)
    private func containerStartsOutside(isObject: Bool, at offset: Int) throws {
        try valueStarts(isObject ? .object : .array, at: offset)
        depth += 1
        if inRecord {
            if isObject { try builder.startObject(at: offset) } else { try builder.startArray(at: offset) }
        }
    }

    @inline(__always)
    func endObject(at offset: Int) throws {
        depth -= 1
        if inRecord {
            try builder.endObject(at: offset)
            if depth == recordDepth { try emitRecord() }
            return
        }
        try objectEndsOutside(at: offset)
    }

    @inline(never)
    private func objectEndsOutside(at offset: Int) throws {
        if phase == .seeking, depth == matched {
            let key = pathText[matched]
            let place = matched == 0 ? "the top-level object" : "'\(pathText[0..<matched].joined(separator: "."))'"
            throw error(
                "no key '\(key)' in \(place), expected the array of records at \(pathDescription(path.count))",
                at: offset
            )
        }
        if phase == .done, depth < matched { matched = depth }
    }

    @inline(__always)
    func endArray(at offset: Int) throws {
        depth -= 1
        if inRecord {
            try builder.endArray(at: offset)
            if depth == recordDepth { try emitRecord() }
            return
        }
        if phase == .records, depth == recordDepth - 1 { phase = .done }
    }

    @inline(__always)
    func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        if inRecord { return try builder.key(utf8, at: offset) }
        try keyOutside(utf8, at: offset)
    }

    @inline(never)
    private func keyOutside(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        guard !path.isEmpty, depth >= 1, depth <= path.count else { return }
        let component = path[depth - 1]
        guard utf8.elementsEqual(component) else { return }
        if phase == .seeking, depth == matched + 1 {
            keyMatched = true
        } else if depth <= matched {
            throw error(
                "duplicate key '\(pathText[depth - 1])' on the path to the records (\(pathDescription(path.count)))",
                at: offset
            )
        }
    }

    @inline(__always)
    func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        if inRecord { return try builder.string(utf8, at: offset) }
        try scalarOutside(.string, at: offset) { try builder.string(utf8, at: offset) }
    }

    @inline(__always)
    func number(_ text: UnsafeRawBufferPointer, at offset: Int) throws {
        if inRecord { return try builder.number(text, at: offset) }
        try scalarOutside(.number, at: offset) { try builder.number(text, at: offset) }
    }

    @inline(__always)
    func bool(_ value: Bool, at offset: Int) throws {
        if inRecord { return try builder.bool(value, at: offset) }
        try scalarOutside(.bool, at: offset) { try builder.bool(value, at: offset) }
    }

    @inline(__always)
    func null(at offset: Int) throws {
        if inRecord { return try builder.null(at: offset) }
        try scalarOutside(.null, at: offset) { try builder.null(at: offset) }
    }

    /// A scalar outside a record may start (and be) a whole record.
    @inline(never)
    private func scalarOutside(_ kind: JSONTape.Kind, at offset: Int, _ append: () throws -> Void) throws {
        try valueStarts(kind, at: offset)
        if inRecord {
            try append()
            try emitRecord()
        }
    }

    // MARK: Records

    /// A value starts outside any record, at `depth`: a record, a step on the path, or something to skip.
    private func valueStarts(_ kind: JSONTape.Kind, at offset: Int) throws {
        switch phase {
        case .records:
            if depth == recordDepth { beginRecord(at: offset) }
        case .done:
            break
        case .seeking:
            if depth == 0 {
                if path.isEmpty {
                    guard kind == .array else {
                        throw error("expected a top-level array of records, found \(kind)", at: offset)
                    }
                    phase = .records
                } else {
                    guard kind == .object else {
                        let path = pathDescription(path.count)
                        let reason = "expected a top-level object with the records at \(path), found \(kind)"
                        throw error(reason, at: offset)
                    }
                }
            } else if keyMatched {
                keyMatched = false
                matched += 1
                if matched == path.count {
                    guard kind == .array else {
                        throw error(
                            "expected an array of records at \(pathDescription(matched)), found \(kind)",
                            at: offset
                        )
                    }
                    phase = .records
                } else {
                    guard kind == .object else {
                        throw error("expected an object at \(pathDescription(matched)), found \(kind)", at: offset)
                    }
                }
            }
        }
    }

    private func beginRecord(at offset: Int) {
        builder.reset(baseOffset: offset)
        recordStart = offset
        (recordLine, recordColumn) = reader?.lineAndColumn(of: offset) ?? (0, 0)
        inRecord = true
    }

    /// JSON Lines: the current line is not valid JSON. It takes a record index (records are numbered by
    /// non-blank line), and the next line starts afresh.
    func abandonRecord() {
        inRecord = false
        hasPendingRecord = false
        depth = 0
        nextIndex += 1
    }

    /// The record is complete. In JSON Lines it is handed out only once its line is known to hold nothing else
    /// (``flushPendingRecord()``), so that a bad line produces no record at all.
    private func emitRecord() throws {
        inRecord = false
        if isJSONLines {
            hasPendingRecord = true
        } else {
            try deliverRecord()
        }
    }

    /// JSON Lines: hands out the record of the line that just ended, if any.
    func flushPendingRecord() throws {
        guard hasPendingRecord else { return }
        hasPendingRecord = false
        try deliverRecord()
    }

    private func deliverRecord() throws {
        let record = JSONRecord(
            index: nextIndex,
            byteOffset: recordStart,
            line: recordLine,
            column: recordColumn,
            tape: builder.tape
        )
        nextIndex += 1
        if let onRecord {
            do {
                try onRecord(record)
            } catch {
                callbackFailed = true
                throw error
            }
        }
    }

    private func pathDescription(_ count: Int) -> String {
        "'\(pathText[0..<count].joined(separator: "."))'"
    }

    private func error(_ reason: String, at offset: Int) -> JSONSyntaxError {
        reader?.syntaxError(reason, at: offset)
            ?? JSONSyntaxError(byteOffset: offset, line: 0, column: 0, reason: reason)
    }
}
