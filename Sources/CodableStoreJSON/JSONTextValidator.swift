/// The strictness checks yajl 2.1 does not make, run over the raw bytes of each chunk before yajl sees them.
///
/// yajl 2.1 treats `\f` and `\v` as whitespace, accepts overlong UTF-8, UTF-8 encoded surrogates and code points
/// above U+10FFFF, and mangles `\u` surrogate escapes (a lone high surrogate becomes `?`, a lone low one becomes
/// invalid UTF-8, a high one followed by any `\u` escape is combined with it). This scanner rejects all of these,
/// keeping its state (inside a string, inside an escape, inside a UTF-8 sequence) across chunk boundaries.
///
/// It also rejects unescaped control characters and invalid escapes inside strings (yajl does too, but the
/// scanner gives the better message and the exact position), counts the line feeds outside strings (the only
/// place a valid document has them), and records where the strings that yajl will not hand over as a pointer into
/// the chunk start (strings with escapes and strings split across chunks), so the reader can report each string's
/// offset.
///
/// The reader feeds yajl only the bytes before the first failure found here; if yajl finds nothing wrong in them,
/// this failure is the first error of the document.
struct JSONTextValidator {
    /// Where the scanner is.
    enum Mode: UInt8 {
        case structural
        case string
        case escape
        case unicodeEscape
        case surrogateBackslash
        case surrogateU
        case utf8
    }

    /// The first problem found in a chunk.
    struct Failure {
        /// Index in the chunk of the first byte that must not be given to yajl.
        var stopIndex: Int
        /// Absolute offset to report (the start of the invalid sequence or escape, or the offending byte).
        var offset: Int
        var reason: String
    }

    private(set) var mode = Mode.structural

    // Line feeds seen outside strings during the last scan.
    private(set) var lineFeedCount = 0
    private(set) var lastLineFeedOffset = -1

    // The current string.
    private var stringStart = 0
    private var stringRecorded = false
    /// Absolute offsets of the opening quotes of the strings with escapes or split across chunks, in order.
    private var irregularStringStarts: [Int] = []
    private var irregularStringHead = 0

    // The current escape.
    private var escapeStart = 0
    private var unicodeValue: UInt32 = 0
    private var unicodeDigits = 0
    private var highSurrogate: UInt32 = 0
    private var highSurrogateStart = 0

    // The current UTF-8 sequence.
    private var sequenceStart = 0
    private var sequenceBytes: [UInt8] = []
    private var sequenceRemaining = 0
    private var sequenceLower: UInt8 = 0x80
    private var sequenceUpper: UInt8 = 0xBF

    /// Set by the reader after each `yajl_parse` call. yajl's lexer then hands the first token of the next chunk
    /// over from its own buffer (after every chunk it leaves its buffer "in use"), so a string that is the first
    /// token of a chunk must be recorded too.
    var nextTokenIsBuffered = false
    private var recordNextString = false

    /// Whether the scanner is inside a string (possibly inside an escape or a UTF-8 sequence).
    var isInString: Bool { mode != .structural }

    mutating func reset() {
        mode = .structural
        nextTokenIsBuffered = false
        recordNextString = false
        lineFeedCount = 0
        lastLineFeedOffset = -1
        irregularStringStarts.removeAll(keepingCapacity: true)
        irregularStringHead = 0
        highSurrogate = 0
        sequenceBytes.removeAll(keepingCapacity: true)
    }

    /// The start of the next string that yajl hands over from its own buffers, in document order.
    mutating func popIrregularStringStart() -> Int? {
        guard irregularStringHead < irregularStringStarts.count else { return nil }
        let start = irregularStringStarts[irregularStringHead]
        irregularStringHead += 1
        if irregularStringHead == irregularStringStarts.count {
            irregularStringStarts.removeAll(keepingCapacity: true)
            irregularStringHead = 0
        }
        return start
    }

    private mutating func recordIrregularString() {
        if !stringRecorded {
            irregularStringStarts.append(stringStart)
            stringRecorded = true
        }
    }

    /// Scans one chunk whose first byte is at absolute offset `base`.
    mutating func scan(_ bytes: UnsafeRawBufferPointer, base: Int) -> Failure? {
        lineFeedCount = 0
        lastLineFeedOffset = -1
        let count = bytes.count
        guard count > 0 else { return nil }
        if nextTokenIsBuffered {
            if mode == .structural {
                var index = 0
                while index < count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
                if index < count {
                    recordNextString = bytes[index] == UInt8(ascii: "\"")
                    nextTokenIsBuffered = false
                }
            } else {
                nextTokenIsBuffered = false
            }
        }
        let failure = scanBytes(bytes, base: base)
        if failure == nil, isInString {
            // The string continues in the next chunk: yajl will hand it over from its own buffer.
            recordIrregularString()
        }
        return failure
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private mutating func scanBytes(_ bytes: UnsafeRawBufferPointer, base: Int) -> Failure? {
        let count = bytes.count
        var index = 0
        while index < count {
            switch mode {
            case .structural:
                // Only `"`, `\n`, `\v` and `\f` matter here (at most 0x0C); yajl checks everything else outside
                // strings.
                while index < count {
                    index = Self.skipWords(bytes, from: index, until: Self.specialStructuralBytes)
                    guard index < count else { break }
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") {
                        mode = .string
                        stringStart = base + index
                        stringRecorded = false
                        if recordNextString {
                            recordNextString = false
                            recordIrregularString()
                        }
                        index += 1
                        // The string is scanned here while it is plain: going back through `switch mode` at each
                        // string's start and end was an indirect jump, mispredicted 9 times out of 10 (1.5 M times per
                        // 20k records, callgrind's branch simulator).
                        guard skipPlainString(bytes, &index) else {
                            if index < count { break }  // at a byte the `.string` case handles
                            return nil  // the string goes on in the next chunk
                        }
                        mode = .structural
                        continue
                    }
                    if byte <= 0x0C {
                        if byte == 0x0A {
                            lineFeedCount += 1
                            lastLineFeedOffset = base + index
                        } else if byte == 0x0B || byte == 0x0C {
                            return Failure(
                                stopIndex: index,
                                offset: base + index,
                                reason: JSONSyntaxError.unexpected(byte) + ", not JSON whitespace"
                            )
                        }
                    }
                    index += 1
                }

            case .string:
                if skipPlainString(bytes, &index) {
                    mode = .structural
                    break
                }
                guard index < count else { return nil }
                // What a plain string cannot hold: an escape that is not whole in this chunk (or `\u`), a UTF-8
                // sequence that is cut by the chunk or invalid (the byte-by-byte state machine explains failures),
                // or a control character.
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\") {
                    recordIrregularString()
                    mode = .escape
                    escapeStart = base + index
                } else if byte >= 0x80 {
                    if let failure = startSequence(byte, at: index, base: base) { return failure }
                } else {
                    return Failure(
                        stopIndex: index,
                        offset: base + index,
                        reason: "unescaped \(JSONSyntaxError.describe(byte: byte)) in string"
                    )
                }
                index += 1

            case .utf8:
                while sequenceRemaining > 0 {
                    guard index < count else { return nil }
                    let byte = bytes[index]
                    guard byte >= sequenceLower, byte <= sequenceUpper else {
                        return Failure(stopIndex: index, offset: sequenceStart, reason: sequenceFailure(byte))
                    }
                    sequenceBytes.append(byte)
                    sequenceRemaining -= 1
                    sequenceLower = 0x80
                    sequenceUpper = 0xBF
                    index += 1
                }
                mode = .string

            case .escape:
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "u"):
                    mode = .unicodeEscape
                    unicodeValue = 0
                    unicodeDigits = 0
                case _ where Self.isSimpleEscape(byte):
                    mode = .string
                default:
                    return Failure(
                        stopIndex: index,
                        offset: escapeStart,
                        reason: "invalid escape \(Self.escapeText("\\", byte))"
                    )
                }
                index += 1

            case .unicodeEscape:
                while unicodeDigits < 4 {
                    guard index < count else { return nil }
                    let byte = bytes[index]
                    guard let digit = Self.hexValue(byte) else {
                        return Failure(
                            stopIndex: index,
                            offset: escapeStart,
                            reason: "invalid escape \(Self.escapeText("\\u" + partialHexDigits(), byte))"
                                + ", expected 4 hex digits"
                        )
                    }
                    unicodeValue = unicodeValue << 4 | UInt32(digit)
                    unicodeDigits += 1
                    index += 1
                }
                let value = unicodeValue
                if highSurrogate != 0 {
                    guard (0xDC00...0xDFFF).contains(value) else {
                        return Failure(
                            stopIndex: index - 1,
                            offset: highSurrogateStart,
                            reason: "lone surrogate \(Self.escapeName(highSurrogate))"
                        )
                    }
                    highSurrogate = 0
                    mode = .string
                } else if (0xD800...0xDBFF).contains(value) {
                    highSurrogate = value
                    highSurrogateStart = escapeStart
                    mode = .surrogateBackslash
                } else if (0xDC00...0xDFFF).contains(value) {
                    return Failure(
                        stopIndex: index - 1,
                        offset: escapeStart,
                        reason: "lone surrogate \(Self.escapeName(value))"
                    )
                } else {
                    mode = .string
                }

            case .surrogateBackslash, .surrogateU:
                let expected = mode == .surrogateBackslash ? UInt8(ascii: "\\") : UInt8(ascii: "u")
                guard bytes[index] == expected else {
                    return Failure(
                        stopIndex: index,
                        offset: highSurrogateStart,
                        reason: "lone surrogate \(Self.escapeName(highSurrogate))"
                    )
                }
                if mode == .surrogateBackslash {
                    escapeStart = base + index
                    mode = .surrogateU
                } else {
                    mode = .unicodeEscape
                    unicodeValue = 0
                    unicodeDigits = 0
                }
                index += 1
            }
        }
        return nil
    }

    /// A mask with the high bit set in (at least) the first byte of `word` that is a quote, a backslash, a
    /// control character or a non-ASCII byte (the lowest flagged byte is exact; higher ones may be false positives).
    @inline(__always)
    private static func specialStringBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl | word) & highs
    }

    /// Skips 8 bytes at a time from `index` while `special` flags none of them: returns the first flagged
    /// byte's index, or where fewer than 8 bytes are left (the caller goes on byte by byte).
    @inline(__always)
    private static func skipWords(
        _ bytes: UnsafeRawBufferPointer, from index: Int, until special: (UInt64) -> UInt64
    ) -> Int {
        var index = index
        while index &+ 8 <= bytes.count {
            let mask = special(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            if mask != 0 { return index &+ (mask.trailingZeroBitCount &>> 3) }
            index &+= 8
        }
        return index
    }

    /// Skips the plain part of a string from `index` (a string's content, after its opening quote): ASCII, whole
    /// valid UTF-8 sequences, two-byte escapes (`\n`, `\"`, …) and valid `\u` escapes (a surrogate pair whole) in
    /// this chunk. Returns true at the closing quote (`index` after it); false at a byte the `.string` mode handles
    /// one by one (`index` at it), or at the end of the chunk.
    @inline(__always)
    private mutating func skipPlainString(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        let count = bytes.count
        while true {
            index = Self.skipWords(bytes, from: index, until: Self.specialStringBytes)
            guard index < count else { return false }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return true
            }
            if byte >= 0x80 {
                let length = Self.validSequenceLength(bytes, at: index)
                guard length > 0 else { return false }
                index &+= length
            } else if byte == UInt8(ascii: "\\") {
                guard index &+ 1 < count else { return false }
                if Self.isSimpleEscape(bytes[index &+ 1]) {
                    index &+= 2
                } else {
                    // `\u` escapes went through the escape modes byte by byte, about 200 instructions each (a fifth
                    // of the scan of reference records, which have five per record).
                    let length = Self.validUnicodeEscapeLength(bytes, at: index)
                    guard length > 0 else { return false }
                    index &+= length
                }
                recordIrregularString()
            } else if byte < 0x20 {
                return false
            } else {
                index += 1
            }
        }
    }

    /// The length of the `\u` escape at `index` (at its backslash) if it is whole in `bytes` and valid: 6, or 12 for
    /// a high surrogate followed by a low one; 0 otherwise (not `\u`, cut by the chunk, not 4 hex digits, a lone
    /// surrogate), which the escape modes then handle (and explain).
    @inline(__always)
    private static func validUnicodeEscapeLength(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Int {
        guard index &+ 6 <= bytes.count, bytes[index &+ 1] == UInt8(ascii: "u"),
            let value = hexQuad(bytes, at: index &+ 2)
        else { return 0 }
        switch value {
        case 0xD800...0xDBFF:
            guard index &+ 12 <= bytes.count, bytes[index &+ 6] == UInt8(ascii: "\\"),
                bytes[index &+ 7] == UInt8(ascii: "u"), let low = hexQuad(bytes, at: index &+ 8),
                (0xDC00...0xDFFF).contains(low)
            else { return 0 }
            return 12
        case 0xDC00...0xDFFF:
            return 0
        default:
            return 6
        }
    }

    /// The value of the 4 hex digits at `index`, if they are.
    @inline(__always)
    private static func hexQuad(_ bytes: UnsafeRawBufferPointer, at index: Int) -> UInt32? {
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard let digit = hexValue(bytes[index &+ offset]) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Whether `\` followed by `byte` is a complete escape (every one but `\u`).
    @inline(__always)
    private static func isSimpleEscape(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return true
        default:
            return false
        }
    }

    /// A mask with the high bit set in (at least) the first byte of `word` that is a quote or at most 0x0C (the
    /// lowest flagged byte is exact; higher ones may be false positives).
    @inline(__always)
    private static func specialStructuralBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let hasQuote = (quotes &- ones) & ~quotes
        let hasLow = (word &- ones &* 0x0D) & ~word
        return (hasQuote | hasLow) & highs
    }

    /// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, surrogates, or code points
    /// above U+10FFFF) starting at `index` if it ends inside `bytes`; 0 otherwise.
    @inline(__always)
    private static func validSequenceLength(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Int {
        let lead = bytes[index]
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xED: length = 3; upper = 0x9F
        case 0xE1...0xEF: length = 3
        case 0xF0: length = 4; lower = 0x90
        case 0xF4: length = 4; upper = 0x8F
        case 0xF1...0xF3: length = 4
        default: return 0
        }
        guard index &+ length <= bytes.count else { return 0 }
        let second = bytes[index &+ 1]
        guard second >= lower, second <= upper else { return 0 }
        for offset in 2..<length where bytes[index &+ offset] & 0xC0 != 0x80 { return 0 }
        return length
    }

    private mutating func startSequence(_ lead: UInt8, at index: Int, base: Int) -> Failure? {
        sequenceLower = 0x80
        sequenceUpper = 0xBF
        switch lead {
        case 0xC2...0xDF: sequenceRemaining = 1
        case 0xE0: sequenceRemaining = 2; sequenceLower = 0xA0
        case 0xED: sequenceRemaining = 2; sequenceUpper = 0x9F
        case 0xE1...0xEF: sequenceRemaining = 2
        case 0xF0: sequenceRemaining = 3; sequenceLower = 0x90
        case 0xF4: sequenceRemaining = 3; sequenceUpper = 0x8F
        case 0xF1...0xF3: sequenceRemaining = 3
        default:
            let reason: String
            switch lead {
            case 0x80...0xBF: reason = "unexpected UTF-8 continuation byte \(JSONSyntaxError.hex(lead))"
            case 0xC0, 0xC1: reason = "invalid UTF-8 byte \(JSONSyntaxError.hex(lead)) (overlong encoding)"
            default: reason = "invalid UTF-8 byte \(JSONSyntaxError.hex(lead))"
            }
            return Failure(stopIndex: index, offset: base + index, reason: reason)
        }
        sequenceStart = base + index
        sequenceBytes.removeAll(keepingCapacity: true)
        sequenceBytes.append(lead)
        mode = .utf8
        return nil
    }

    private func sequenceFailure(_ byte: UInt8) -> String {
        let seen = (sequenceBytes + [byte]).map(JSONSyntaxError.hex).joined(separator: " ")
        if sequenceBytes.count == 1, byte >= 0x80, byte <= 0xBF {
            switch sequenceBytes[0] {
            case 0xE0, 0xF0: return "overlong UTF-8 sequence \(seen)"
            case 0xED: return "UTF-8 encoded surrogate \(seen)"
            case 0xF4: return "UTF-8 sequence above U+10FFFF \(seen)"
            default: break
            }
        }
        let started = sequenceBytes.map(JSONSyntaxError.hex).joined(separator: " ")
        return "truncated UTF-8 sequence \(started) before \(JSONSyntaxError.describe(byte: byte))"
    }

    private func partialHexDigits() -> String {
        guard unicodeDigits > 0 else { return "" }
        let digits = String(unicodeValue, radix: 16, uppercase: true)
        return String(repeating: "0", count: unicodeDigits - digits.count) + digits
    }

    /// `'\x'` for a printable offending byte, `'\' followed by newline (0x0A)` otherwise.
    private static func escapeText(_ prefix: String, _ byte: UInt8) -> String {
        switch byte {
        case 0x21...0x7E where byte != 0x27: return "'\(prefix)\(Character(Unicode.Scalar(byte)))'"
        default: return "'\(prefix)' followed by \(JSONSyntaxError.describe(byte: byte))"
        }
    }

    /// `\uD800`.
    private static func escapeName(_ value: UInt32) -> String {
        "\\u" + String(value, radix: 16, uppercase: true)
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }
}
