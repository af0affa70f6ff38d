import CYajl

/// A strict (RFC 8259), streaming JSON push parser: chunks of bytes in, events out to a ``JSONEventHandler``.
///
/// It drives yajl 2.1 with every `allow_*` option off and fixes what yajl gets wrong (see
/// `JSONTextValidator`): form feed and vertical tab are not whitespace; UTF-8 is validated strictly (no overlong
/// forms, no encoded surrogates, nothing above U+10FFFF) with state carried across chunks; `\u` surrogate escapes
/// must pair; unescaped control characters are rejected; numbers are handed on as their exact text (yajl's integer
/// and double callbacks are never used, so `1e400`, `-9223372036854775808` and 30-digit integers all arrive intact);
/// nesting is limited (``Options/maximumDepth``).
///
/// Decisions (also in the DocC catalog):
/// - **Byte order mark**: a UTF-8 BOM (`EF BB BF`) at the very start is skipped. Offsets still count it; columns
///   on line 1 start after it. A BOM anywhere else is an error outside strings and U+FEFF inside them.
/// - **Duplicate keys** are allowed and delivered in document order; ``JSONTape`` keeps them all and its lookup
///   returns the last one (as `JSONDecoder` does).
/// - **`\u0000`** is allowed and decoded to U+0000 (a NUL byte in the key or string).
/// - **Empty input** (nothing but whitespace) is an error (`empty input`), and so is anything but whitespace after
///   the top-level value.
/// - **Columns** in ``JSONSyntaxError`` count UTF-8 bytes.
///
/// ```swift
/// let reader = JSONReader(handler: myHandler)
/// try bytes.withUnsafeBytes { try reader.parse($0) }   // as many chunks as you like
/// try reader.finish()
/// ```
///
/// Errors: ``JSONSyntaxError`` with the absolute byte offset, line and column, whatever the chunking; errors thrown
/// by the handler are rethrown unchanged. After an error the reader stays failed and rethrows it.
public final class JSONReader {
    public struct Options: Sendable, Equatable {
        /// The maximum number of nested arrays and objects; one more is an error (`nesting deeper than 512`).
        public var maximumDepth: Int

        public init(maximumDepth: Int = 512) {
            self.maximumDepth = maximumDepth
        }
    }

    /// What the last event was, to know what the grammar expects next when yajl reports an error.
    private enum LastEvent {
        case none
        case startObject
        case startArray
        case key
        case value
    }

    /// The most source bytes kept to diagnose an error in a token that spans chunks.
    private static let maximumRetainedBytes = 1 << 20
    /// The source bytes kept before the current chunk for error snippets.
    private static let snippetContext = 64
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// What changes during a parse, behind a pointer: stored properties of a class are checked for exclusive
    /// access at run time (`swift_beginAccess`) when a mutation calls out (an array append, a validator scan),
    /// which is measurable at one event every few bytes. Memory behind a pointer is not checked; the computed
    /// properties below give the rest of the reader the same syntax.
    private struct State {
        var validator = JSONTextValidator()
        var containers: [Bool] = []
        var history: [UInt8] = []
    }

    public let options: Options
    private let handler: any JSONEventHandler
    /// The handler when it is a record stream's, which gets nearly every event of an import: called as its own
    /// (final) class, its methods are direct calls that the compiler inlines, where calls through the protocol go
    /// through a witness thunk into an out-of-line method (callgrind: about 20 instructions an event).
    private let splitter: RecordSplitter?
    private let callbacks: UnsafeMutablePointer<yajl_callbacks>
    private let state: UnsafeMutablePointer<State>
    private var handle: OpaquePointer?

    private var validator: JSONTextValidator {
        get { state.pointee.validator }
        _modify { yield &state.pointee.validator }
    }

    // The chunk being parsed: the part given to yajl, and the whole input (for snippets).
    private var chunkBase = 0
    private var chunk = UnsafeRawBufferPointer(start: nil, count: 0)
    private var currentInput = UnsafeRawBufferPointer(start: nil, count: 0)

    // Lines before the current chunk, and where the line containing `chunkBase` starts.
    private var lineFeedsBeforeChunk = 0
    private var lineStartOfChunk = 0
    // A cursor to compute the lines of increasing offsets in the current chunk without rescanning it.
    private var cursorOffset = -1
    private var cursorLine = 1
    private var cursorLineStart = 0

    // Source bytes before the current chunk: from the resume point (or the last `snippetContext` bytes).
    private var history: [UInt8] {
        get { state.pointee.history }
        _modify { yield &state.pointee.history }
    }
    private var historyStart = 0

    // Parser state, for diagnostics: the open containers (`true` for an object) and what was read last.
    private var containers: [Bool] {
        get { state.pointee.containers }
        _modify { yield &state.pointee.containers }
    }
    private var lastEvent = LastEvent.none
    private var resumeOffset = 0
    private var zeroNumberEnd = -1

    private var byteOrderMarkMatched = 0
    private var byteOrderMarkResolved = false
    private var finished = false
    private var pendingError: (any Error)?
    private var failure: (any Error)?
    /// Whether a byte other than whitespace was given since the start (or the last ``startNextValue()``).
    private(set) var hasContent = false
    /// Changes the wording of errors at the end of a value (`end of line`) and after it.
    var isJSONLines = false
    /// JSON Lines: the value being parsed is the last line, which has no line feed: it ends at the end of input.
    var isLastLine = false
    /// How errors name the end of the current value.
    private var endName: String { isJSONLines && !isLastLine ? "line" : "input" }

    public init(options: Options = Options(), handler: any JSONEventHandler) {
        precondition(options.maximumDepth > 0, "maximumDepth must be positive")
        self.options = options
        self.handler = handler
        splitter = handler as? RecordSplitter
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: Self.makeCallbacks())
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        handle = yajl_alloc(callbacks, nil, Unmanaged.passUnretained(self).toOpaque())
        codablestore_yajl_skip_string_validation(handle)
    }

    deinit {
        yajl_free(handle)
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// The number of bytes consumed so far (the absolute offset of the next byte).
    public var byteOffset: Int { chunkBase }

    /// The number of open arrays and objects.
    public var depth: Int { containers.count }

    /// Parses the next chunk of the document. Events are delivered before this returns.
    public func parse(_ input: UnsafeRawBufferPointer) throws {
        precondition(!finished, "JSONReader.parse(_:) called after finish()")
        if let failure { throw failure }
        var bytes = input
        if !byteOrderMarkResolved {
            var matched = 0
            while matched < bytes.count, byteOrderMarkMatched < 3,
                bytes[matched] == Self.byteOrderMark[byteOrderMarkMatched]
            {
                byteOrderMarkMatched += 1
                matched += 1
            }
            if byteOrderMarkMatched == 3 {
                byteOrderMarkResolved = true
                chunkBase = 3
                historyStart = 3
                lineStartOfChunk = 3
                resumeOffset = 3
            } else if matched == bytes.count {
                return  // Maybe a byte order mark: wait for more.
            } else {
                byteOrderMarkResolved = true
                if byteOrderMarkMatched > 0 {
                    try Self.byteOrderMark[0..<byteOrderMarkMatched].withUnsafeBytes { try feed($0) }
                }
            }
            bytes = UnsafeRawBufferPointer(rebasing: bytes[matched...])
        }
        try feed(bytes)
    }

    /// Ends the document: parses what yajl still buffers (a number at the very end) and checks that the top-level
    /// value is complete.
    public func finish() throws {
        precondition(!finished, "JSONReader.finish() called twice")
        if let failure { throw failure }
        try flushPendingByteOrderMark()
        try completeValue()
        finished = true
    }

    /// Gives yajl the first bytes kept back because they might have started a byte order mark.
    func flushPendingByteOrderMark() throws {
        guard !byteOrderMarkResolved else { return }
        byteOrderMarkResolved = true
        if byteOrderMarkMatched > 0 {
            try Self.byteOrderMark[0..<byteOrderMarkMatched].withUnsafeBytes { try feed($0) }
        }
    }

    /// A ``JSONSyntaxError`` at `offset` with the line, column and snippet filled in, for handlers that reject
    /// well-formed JSON (a record stream that expects an array, say). Exact for offsets in the current chunk, or in
    /// the token that started in an earlier one.
    public func syntaxError(_ reason: String, at offset: Int) -> JSONSyntaxError {
        withWindow { window, windowStart in
            makeError(reason, at: offset, window: window, windowStart: windowStart)
        }
    }

    // MARK: - Feeding yajl

    private func feed(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        if !hasContent {
            hasContent = bytes.contains { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }
        }
        let invalid = validator.scan(bytes, base: chunkBase)
        let length = invalid?.stopIndex ?? bytes.count
        currentInput = bytes
        chunk = UnsafeRawBufferPointer(rebasing: bytes[0..<length])
        defer {
            currentInput = UnsafeRawBufferPointer(start: nil, count: 0)
            chunk = currentInput
        }
        if length > 0 {
            let status = yajl_parse(handle, chunk.baseAddress!.assumingMemoryBound(to: UInt8.self), length)
            if status != yajl_status_ok { throw fail(yajlFailure(status, atEnd: false)) }
            validator.nextTokenIsBuffered = true
        }
        if let invalid { throw fail(syntaxError(invalid.reason, at: invalid.offset)) }
        commit(chunk)
    }

    /// Completes the current top-level value (`yajl_complete_parse`).
    func completeValue() throws {
        if let failure { throw failure }
        let status = yajl_complete_parse(handle)
        if status != yajl_status_ok { throw fail(yajlFailure(status, atEnd: true)) }
        if validator.isInString {
            throw fail(syntaxError("unexpected end of \(endName) in string", at: chunkBase))
        }
    }

    /// Starts a new top-level value (JSON Lines): a fresh yajl handle, same offsets and lines.
    func startNextValue() {
        yajl_free(handle)
        handle = yajl_alloc(callbacks, nil, Unmanaged.passUnretained(self).toOpaque())
        codablestore_yajl_skip_string_validation(handle)
        validator.reset()
        containers.removeAll(keepingCapacity: true)
        lastEvent = .none
        resumeOffset = chunkBase
        zeroNumberEnd = -1
        hasContent = false
        byteOrderMarkResolved = true
    }

    /// JSON Lines: gives up the current value after a syntax error. Everything up to the absolute offset `end` (the
    /// end of the line, without its line feed) counts as read; `bytes` are the input that ends there, kept for
    /// snippets of later errors. ``startNextValue()`` at the end of the line starts over.
    ///
    /// By offset, not by a count of bytes: a failed parse commits none of its chunk, and a byte order mark kept
    /// back from an earlier chunk was never counted.
    func discard(through end: Int, _ bytes: UnsafeRawBufferPointer) {
        failure = nil
        pendingError = nil
        let missing = end - chunkBase
        guard missing > 0 else { return }
        let tail = UnsafeRawBufferPointer(rebasing: bytes[max(0, bytes.count - missing)...])
        chunkBase = end - tail.count
        retainHistory(tail)
        chunkBase = end
    }

    /// Consumes a line feed that is not given to yajl (the end of a JSON Lines line).
    func skipLineFeed() {
        let lineFeed: [UInt8] = [0x0A]
        lineFeed.withUnsafeBytes { retainHistory($0) }
        chunkBase += 1
        lineFeedsBeforeChunk += 1
        lineStartOfChunk = chunkBase
    }

    private func commit(_ bytes: UnsafeRawBufferPointer) {
        lineFeedsBeforeChunk += validator.lineFeedCount
        if validator.lastLineFeedOffset >= 0 { lineStartOfChunk = validator.lastLineFeedOffset + 1 }
        retainHistory(bytes)
        chunkBase += bytes.count
    }

    /// Keeps the bytes from the resume point (a token that may continue in the next chunk) or at least the last
    /// `snippetContext` bytes, so that an error in the next chunk can be diagnosed and shown.
    private func retainHistory(_ bytes: UnsafeRawBufferPointer) {
        let end = chunkBase + bytes.count
        let keepFrom = max(min(resumeOffset, end - Self.snippetContext), historyStart)
        if keepFrom >= chunkBase {
            history.removeAll(keepingCapacity: true)
            history.append(contentsOf: bytes[(keepFrom - chunkBase)...])
        } else {
            let dropped = keepFrom - historyStart
            if dropped > 0 { history.removeFirst(dropped) }
            history.append(contentsOf: bytes)
        }
        historyStart = keepFrom
        if history.count > Self.maximumRetainedBytes {
            let dropped = history.count - Self.snippetContext
            history.removeFirst(dropped)
            historyStart += dropped
        }
    }

    private func fail(_ error: any Error) -> any Error {
        failure = error
        return error
    }

    // MARK: - Errors and locations

    private func yajlFailure(_ status: yajl_status, atEnd: Bool) -> any Error {
        if status == yajl_status_client_canceled, let pendingError {
            self.pendingError = nil
            return pendingError
        }
        return withWindow { window, windowStart in
            let diagnoser = JSONSyntaxDiagnoser(
                window: window,
                windowStart: windowStart,
                atEnd: atEnd,
                endName: endName,
                isJSONLines: isJSONLines
            )
            var finding: JSONSyntaxDiagnoser.Finding?
            if resumeOffset >= windowStart {
                finding = diagnoser.diagnose(
                    resumeOffset: resumeOffset,
                    expectation: expectation,
                    containers: containers,
                    zeroNumberEnd: zeroNumberEnd
                )
            }
            let (offset, reason) = finding ?? yajlFinding(atEnd: atEnd)
            return makeError(reason, at: offset, window: window, windowStart: windowStart)
        }
    }

    /// yajl's own message, when the diagnoser cannot tell (a token longer than `maximumRetainedBytes`).
    private func yajlFinding(atEnd: Bool) -> JSONSyntaxDiagnoser.Finding {
        var message = "invalid JSON"
        if let text = yajl_get_error(handle, 0, nil, 0) {
            message = String(cString: text).trimmingWhitespace()
            yajl_free_error(handle, text)
        }
        for prefix in ["lexical error: ", "parse error: "] where message.hasPrefix(prefix) {
            message.removeFirst(prefix.count)
        }
        let consumed = atEnd ? 0 : min(yajl_get_bytes_consumed(handle), chunk.count)
        return (chunkBase + consumed, message)
    }

    private var expectation: JSONSyntaxDiagnoser.Expectation {
        switch lastEvent {
        case .none: return .topValue
        case .startObject: return .objectFirst
        case .startArray: return .arrayFirst
        case .key: return .colon
        case .value: return .afterValue
        }
    }

    /// Calls `body` with the source bytes available (the retained history and the current input) and the absolute
    /// offset of the first one.
    private func withWindow<Result>(_ body: (UnsafeRawBufferPointer, Int) -> Result) -> Result {
        var bytes = history
        bytes.append(contentsOf: currentInput)
        return bytes.withUnsafeBytes { body($0, historyStart) }
    }

    private func makeError(
        _ reason: String,
        at offset: Int,
        window: UnsafeRawBufferPointer,
        windowStart: Int
    ) -> JSONSyntaxError {
        let (line, lineStart) = lineAndLineStart(of: offset, window: window, windowStart: windowStart)
        let (excerpt, caret) = JSONSyntaxError.excerpt(
            window: window,
            windowStart: windowStart,
            offset: offset,
            lineStart: lineStart
        )
        return JSONSyntaxError(
            byteOffset: offset,
            line: line,
            column: offset - lineStart + 1,
            reason: reason,
            sourceExcerpt: excerpt,
            caretPosition: caret
        )
    }

    /// The line (1-based) of `offset` and the offset where that line starts.
    private func lineAndLineStart(
        of offset: Int,
        window: UnsafeRawBufferPointer,
        windowStart: Int
    ) -> (Int, Int) {
        let chunkIndex = chunkBase - windowStart
        let target = min(max(offset - windowStart, 0), window.count)
        var line = lineFeedsBeforeChunk + 1
        var lineStart = lineStartOfChunk
        if target >= chunkIndex {
            for index in chunkIndex..<target where window[index] == 0x0A {
                line += 1
                lineStart = windowStart + index + 1
            }
        } else {
            // In a token that started before the chunk: normally no line feed in between.
            var crossed = 0
            for index in target..<chunkIndex where window[index] == 0x0A { crossed += 1 }
            if crossed > 0 {
                line -= crossed
                lineStart = windowStart
                for index in stride(from: target - 1, through: 0, by: -1) where window[index] == 0x0A {
                    lineStart = windowStart + index + 1
                    break
                }
            }
        }
        return (line, lineStart)
    }

    /// The line and column (1-based, in bytes) of an offset in the current chunk, cheap for increasing offsets.
    func lineAndColumn(of offset: Int) -> (line: Int, column: Int) {
        let chunkEnd = chunkBase + chunk.count
        guard offset >= chunkBase, offset <= chunkEnd, let base = chunk.baseAddress else {
            let (line, lineStart) = withWindow { window, windowStart in
                lineAndLineStart(of: offset, window: window, windowStart: windowStart)
            }
            return (line, offset - lineStart + 1)
        }
        if cursorOffset < chunkBase || cursorOffset > offset || cursorOffset > chunkEnd {
            cursorOffset = chunkBase
            cursorLine = lineFeedsBeforeChunk + 1
            cursorLineStart = lineStartOfChunk
        }
        var position = cursorOffset - chunkBase
        let end = offset - chunkBase
        while position < end, let found = Bytes.firstIndex(of: 0x0A, in: base + position, count: end - position) {
            let index = position + found
            cursorLine += 1
            cursorLineStart = chunkBase + index + 1
            position = index + 1
        }
        cursorOffset = offset
        return (cursorLine, offset - cursorLineStart + 1)
    }

    // MARK: - Events

    /// The handler took an event: records it and where parsing resumes (1: go on).
    ///
    /// Events are handed over in a `do` block of each callback rather than a closure given to a common function:
    /// with the record splitter's methods inlined into it, the closure stayed a function of its own, one more call
    /// per event.
    @inline(__always)
    private func delivered(_ event: LastEvent, resumeAt offset: Int) -> Int32 {
        lastEvent = event
        resumeOffset = offset
        return 1
    }

    /// The handler threw: the error is kept for `feed` to rethrow, since it cannot cross yajl (0: stop).
    @inline(__always)
    private func rejected(_ error: any Error) -> Int32 {
        pendingError = error
        return 0
    }

    /// The absolute offset just after the token yajl has just read.
    @inline(__always)
    private var tokenEnd: Int { chunkBase + yajl_get_bytes_consumed(handle) }

    fileprivate func onStartContainer(isObject: Bool) -> Int32 {
        let start = tokenEnd - 1
        guard containers.count < options.maximumDepth else {
            pendingError = syntaxError("nesting deeper than \(options.maximumDepth)", at: start)
            return 0
        }
        containers.append(isObject)
        do {
            if let splitter {
                if isObject { try splitter.startObject(at: start) } else { try splitter.startArray(at: start) }
            } else if isObject {
                try handler.startObject(at: start)
            } else {
                try handler.startArray(at: start)
            }
        } catch {
            return rejected(error)
        }
        return delivered(isObject ? .startObject : .startArray, resumeAt: start + 1)
    }

    fileprivate func onEndContainer(isObject: Bool) -> Int32 {
        let start = tokenEnd - 1
        containers.removeLast()
        do {
            if let splitter {
                if isObject { try splitter.endObject(at: start) } else { try splitter.endArray(at: start) }
            } else if isObject {
                try handler.endObject(at: start)
            } else {
                try handler.endArray(at: start)
            }
        } catch {
            return rejected(error)
        }
        return delivered(.value, resumeAt: start + 1)
    }

    /// Strings and numbers that yajl hands over as a pointer into the chunk end where their bytes (and a string's
    /// closing quote) end, which is where ``tokenEnd`` would say, without calling into yajl for it.
    fileprivate func onString(_ text: UnsafePointer<UInt8>?, _ length: Int, isKey: Bool) -> Int32 {
        let start: Int
        let end: Int
        let pointer = UnsafeRawPointer(text)
        if let pointer, let base = chunk.baseAddress, pointer >= base, pointer < base + chunk.count {
            start = chunkBase + (pointer - base) - 1
            end = start + length + 2
        } else {
            // Escaped, or split across chunks: yajl hands it over from its own buffer.
            end = tokenEnd
            start = validator.popIrregularStringStart() ?? max(end - length - 2, 0)
        }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
        do {
            if let splitter {
                if isKey { try splitter.key(bytes, at: start) } else { try splitter.string(bytes, at: start) }
            } else if isKey {
                try handler.key(bytes, at: start)
            } else {
                try handler.string(bytes, at: start)
            }
        } catch {
            return rejected(error)
        }
        return delivered(isKey ? .key : .value, resumeAt: end)
    }

    fileprivate func onNumber(_ text: UnsafeRawPointer?, _ length: Int) -> Int32 {
        let end: Int
        if let text, let base = chunk.baseAddress, text >= base, text < base + chunk.count {
            end = chunkBase + (text - base) + length
        } else {
            end = tokenEnd  // split across chunks: from yajl's buffer
        }
        let start = end - length
        let bytes = UnsafeRawBufferPointer(start: text, count: length)
        if bytes[length - 1] == UInt8(ascii: "0"), length == 1 || (length == 2 && bytes[0] == UInt8(ascii: "-")) {
            zeroNumberEnd = end
        }
        do {
            if let splitter { try splitter.number(bytes, at: start) } else { try handler.number(bytes, at: start) }
        } catch {
            return rejected(error)
        }
        return delivered(.value, resumeAt: end)
    }

    fileprivate func onBool(_ value: Bool) -> Int32 {
        let end = tokenEnd
        let start = end - (value ? 4 : 5)
        do {
            if let splitter { try splitter.bool(value, at: start) } else { try handler.bool(value, at: start) }
        } catch {
            return rejected(error)
        }
        return delivered(.value, resumeAt: end)
    }

    fileprivate func onNull() -> Int32 {
        let end = tokenEnd
        do {
            if let splitter { try splitter.null(at: end - 4) } else { try handler.null(at: end - 4) }
        } catch {
            return rejected(error)
        }
        return delivered(.value, resumeAt: end)
    }

    // MARK: - yajl callbacks

    /// Static C callbacks: they never throw; a failure is stored in `pendingError`, the callback returns 0 so that
    /// yajl stops, and `feed` rethrows it after `yajl_parse` returns. yajl's integer and double callbacks stay nil:
    /// with a number callback, yajl hands every number over as text.
    private static func makeCallbacks() -> yajl_callbacks {
        yajl_callbacks(
            yajl_null: { context in withReader(context) { $0.onNull() } },
            yajl_boolean: { context, value in withReader(context) { $0.onBool(value != 0) } },
            yajl_integer: nil,
            yajl_double: nil,
            yajl_number: { context, text, length in withReader(context) { $0.onNumber(UnsafeRawPointer(text), length) }
            },
            yajl_string: { context, text, length in withReader(context) { $0.onString(text, length, isKey: false) } },
            yajl_start_map: { context in withReader(context) { $0.onStartContainer(isObject: true) } },
            yajl_map_key: { context, text, length in withReader(context) { $0.onString(text, length, isKey: true) } },
            yajl_end_map: { context in withReader(context) { $0.onEndContainer(isObject: true) } },
            yajl_start_array: { context in withReader(context) { $0.onStartContainer(isObject: false) } },
            yajl_end_array: { context in withReader(context) { $0.onEndContainer(isObject: false) } }
        )
    }
}

/// The reader behind a yajl context pointer, without retaining it (the reader owns the yajl handle, so it is alive
/// while yajl calls back). A retain and a release per callback (`takeUnretainedValue()`) cost the 100k import's
/// reading thread 712 M instructions (+19%, callgrind): the splitter's `weak` reference to the reader gives it a
/// side table, through which all its reference counting goes.
@inline(__always)
private func withReader(_ context: UnsafeMutableRawPointer?, _ body: (JSONReader) -> Int32) -> Int32 {
    Unmanaged<JSONReader>.fromOpaque(context!)._withUnsafeGuaranteedRef(body)
}

/// A reader belongs to one parse on one thread.
@available(*, unavailable)
extension JSONReader: Sendable {}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        return String(scalars)
    }
}
