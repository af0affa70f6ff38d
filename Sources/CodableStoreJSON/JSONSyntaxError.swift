/// A JSON text that is not valid JSON (RFC 8259), or that does not have the shape a ``JSONRecordStream`` expects.
///
/// The location is exact whatever the chunking of the input: ``byteOffset`` counts from the first byte ever fed
/// (a skipped byte order mark included), ``line`` and ``column`` are 1-based, and **``column`` counts UTF-8 bytes**
/// from the start of the line (a line starts after `\n`; the byte order mark is not part of line 1, so the first
/// byte after it is column 1). The snippet shown by ``detailedDescription()`` places its caret under the character.
///
/// `description` is one stable line:
///
///     JSON syntax error at line 3, column 14 (byte 57): unexpected character '}', expected a value
///
/// `detailedDescription()` renders the source line, like rustc and swift-parsing:
///
///     error: unexpected character '}', expected a value
///      --> line 3:14 (byte 57)
///       |
///     3 |   "tags": [1, 2,}
///       |                 ^
///
/// Error positions follow one rule: the error is reported at the first byte where the text stops being the start
/// of some valid JSON text (the end of input for a truncated document), except for sequences that are invalid as
/// a whole (an invalid UTF-8 sequence, an invalid or lone-surrogate `\u` escape, an invalid literal), which are
/// reported where the sequence starts.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The offset of the error from the first byte of the input, 0-based.
    public var byteOffset: Int
    /// The line of the error, 1-based.
    public var line: Int
    /// The column of the error, 1-based, in UTF-8 bytes from the start of the line.
    public var column: Int
    /// What is wrong, in a few words: `unexpected character '}', expected a value`, `invalid UTF-8 byte 0xC0`,
    /// `lone surrogate \uD800`, `nesting deeper than 512`.
    public var reason: String
    /// The index (0-based) of the record being read when the error occurred, when the error comes from a
    /// ``JSONRecordStream`` and happened inside (or in place of) a record.
    public var recordIndex: Int?
    /// The source line around the error, escaped (control characters and invalid UTF-8 are shown as escapes) and
    /// truncated to about 60 characters, with `…` where it was cut. May be shorter when the input after the error
    /// was not available yet (a chunk ending right after the error).
    public var sourceExcerpt: String
    /// The position of the error in ``sourceExcerpt``, in characters from its start.
    public var caretPosition: Int

    public init(
        byteOffset: Int,
        line: Int,
        column: Int,
        reason: String,
        recordIndex: Int? = nil,
        sourceExcerpt: String = "",
        caretPosition: Int = 0
    ) {
        self.byteOffset = byteOffset
        self.line = line
        self.column = column
        self.reason = reason
        self.recordIndex = recordIndex
        self.sourceExcerpt = sourceExcerpt
        self.caretPosition = caretPosition
    }

    public var description: String {
        var text = "JSON syntax error"
        if let recordIndex { text += " in record \(recordIndex)" }
        text += " at line \(line), column \(column) (byte \(byteOffset)): \(reason)"
        return text
    }

    /// A multi-line rendering with the source line and a caret under the error.
    public func detailedDescription() -> String {
        let number = String(line)
        let gutter = String(repeating: " ", count: number.count)
        var location = "--> line \(line):\(column) (byte \(byteOffset)"
        if let recordIndex { location += ", record \(recordIndex)" }
        location += ")"
        return [
            "error: \(reason)",
            gutter + location,
            gutter + " |",
            number + " | " + sourceExcerpt,
            gutter + " | " + String(repeating: " ", count: caretPosition) + "^",
        ].joined(separator: "\n")
    }
}

// MARK: - Rendering helpers

extension JSONSyntaxError {
    /// How a single byte is named in a reason: `'x'` for printable ASCII, a name for control characters,
    /// `byte 0xC3` for anything else.
    static func describe(byte: UInt8) -> String {
        switch byte {
        case 0x27: return "\"'\""
        case 0x21...0x7E: return "'\(Character(Unicode.Scalar(byte)))'"
        case 0x20: return "space"
        case 0x00: return "NUL (0x00)"
        case 0x08: return "backspace (0x08)"
        case 0x09: return "tab (0x09)"
        case 0x0A: return "newline (0x0A)"
        case 0x0B: return "vertical tab (0x0B)"
        case 0x0C: return "form feed (0x0C)"
        case 0x0D: return "carriage return (0x0D)"
        case 0x7F: return "DEL (0x7F)"
        case 0x00..<0x20: return "control character \(hex(byte))"
        default: return "byte \(hex(byte))"
        }
    }

    /// `unexpected character 'x'`, `unexpected byte 0xC3`, `unexpected form feed (0x0C)`.
    static func unexpected(_ byte: UInt8) -> String {
        switch byte {
        case 0x21...0x7E: return "unexpected character \(describe(byte: byte))"
        default: return "unexpected \(describe(byte: byte))"
        }
    }

    /// `0xC0`.
    static func hex(_ byte: UInt8) -> String {
        let digits: [Character] = Array("0123456789ABCDEF")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
    }

    /// The escaped excerpt of the line around `offset` and the caret position in it.
    ///
    /// - Parameters:
    ///   - window: the source bytes available, starting at absolute offset `windowStart`.
    ///   - offset: the absolute offset of the error (may be the end of the window).
    ///   - lineStart: the absolute offset where the error's line starts (may be before the window).
    static func excerpt(
        window: UnsafeRawBufferPointer,
        windowStart: Int,
        offset: Int,
        lineStart: Int
    ) -> (text: String, caret: Int) {
        let before = 40
        let after = 30
        let errorIndex = min(max(offset - windowStart, 0), window.count)
        var start = max(lineStart - windowStart, 0, errorIndex - before)
        // Do not start in the middle of a UTF-8 sequence.
        var skipped = 0
        while start < errorIndex, skipped < 3, window[start] & 0xC0 == 0x80 {
            start += 1
            skipped += 1
        }
        let cutBefore = start > max(lineStart - windowStart, 0)
        var end = errorIndex
        while end < window.count, end - errorIndex < after, window[end] != 0x0A, window[end] != 0x0D {
            end += 1
        }
        let cutAfter = end < window.count && window[end] != 0x0A && window[end] != 0x0D

        var text = cutBefore ? "…" : ""
        var caret = cutBefore ? 1 : 0
        var index = start
        var caretPlaced = false
        while index < end {
            if !caretPlaced, index >= errorIndex {
                caret = text.count
                caretPlaced = true
            }
            let byte = window[index]
            switch byte {
            case 0x20...0x7E:
                text.append(Character(Unicode.Scalar(byte)))
                index += 1
            case 0x09: text += "\\t"; index += 1
            case 0x0A: text += "\\n"; index += 1
            case 0x0D: text += "\\r"; index += 1
            case 0x00..<0x20, 0x7F:
                text += "\\u{\(String(byte, radix: 16, uppercase: true))}"
                index += 1
            default:
                if let (scalar, length) = decodeScalar(window, at: index, end: end) {
                    text.unicodeScalars.append(scalar)
                    index += length
                } else {
                    text += "\\x" + String(hex(byte).dropFirst(2))
                    index += 1
                }
            }
        }
        if !caretPlaced { caret = text.count }
        if cutAfter { text += "…" }
        return (text, caret)
    }

    /// A valid, complete UTF-8 sequence starting at `index` (strictly validated), or nil.
    private static func decodeScalar(
        _ bytes: UnsafeRawBufferPointer,
        at index: Int,
        end: Int
    ) -> (Unicode.Scalar, Int)? {
        let lead = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; value = UInt32(lead & 0x1F)
        case 0xE0: length = 3; lower = 0xA0; value = UInt32(lead & 0x0F)
        case 0xED: length = 3; upper = 0x9F; value = UInt32(lead & 0x0F)
        case 0xE1...0xEF: length = 3; value = UInt32(lead & 0x0F)
        case 0xF0: length = 4; lower = 0x90; value = UInt32(lead & 0x07)
        case 0xF4: length = 4; upper = 0x8F; value = UInt32(lead & 0x07)
        case 0xF1...0xF3: length = 4; value = UInt32(lead & 0x07)
        default: return nil
        }
        guard index + length <= end else { return nil }
        for position in 1..<length {
            let byte = bytes[index + position]
            guard byte >= lower, byte <= upper else { return nil }
            lower = 0x80
            upper = 0xBF
            value = value << 6 | UInt32(byte & 0x3F)
        }
        guard let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }
}
