extension JSONTape {
    /// The UTF-8 of a JSON string's raw text (between its quotes), escapes decoded. The text was validated
    /// while parsing: every escape is well-formed and `\u` surrogates come in pairs.
    static func unescape(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: raw.count) { buffer, count in count = unescape(raw, into: buffer) }
    }

    /// A JSON string's raw text decoded into a `String` of exactly its size (decoded into a temporary buffer,
    /// on the stack when small).
    static func unescapedString(_ raw: UnsafeRawBufferPointer) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: raw.count) { buffer in
            let count = unescape(raw, into: buffer)
            return String(validatedUTF8: UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[..<count])))
        }
    }

    /// Decodes into `output` (at least `raw.count` bytes: decoding never lengthens) and returns the length.
    static func unescape(_ raw: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var written = 0
        func append(_ byte: UInt8) {
            output[written] = byte
            written += 1
        }
        var position = 0
        let count = raw.count
        while position < count {
            // Copy the run up to the next backslash in one go.
            let end =
                Bytes.firstIndex(of: UInt8(ascii: "\\"), in: raw.baseAddress! + position, count: count - position)
                .map { position + $0 } ?? count
            if end > position {
                UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(output)[written..<written + end - position])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[position..<end]))
                written += end - position
            }
            guard end + 1 < count else { break }
            let escape = raw[end + 1]
            position = end + 2
            switch escape {
            case UInt8(ascii: "b"): append(0x08)
            case UInt8(ascii: "f"): append(0x0C)
            case UInt8(ascii: "n"): append(0x0A)
            case UInt8(ascii: "r"): append(0x0D)
            case UInt8(ascii: "t"): append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(raw, at: position)
                position += 4
                if (0xD800..<0xDC00).contains(scalar), position + 6 <= count, raw[position] == UInt8(ascii: "\\"),
                    raw[position + 1] == UInt8(ascii: "u")
                {
                    let low = hex4(raw, at: position + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        position += 6
                    }
                }
                for unit in UTF8.encode(Unicode.Scalar(scalar) ?? "\u{FFFD}")! { append(unit) }
            default:
                append(escape)  // `"`, `\` and `/` stand for themselves
            }
        }
        return written
    }

    private static func hex4(_ raw: UnsafeRawBufferPointer, at position: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 where position + offset < raw.count {
            let byte = raw[position + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: digit = byte &- UInt8(ascii: "A") &+ 10
            }
            value = value << 4 | UInt32(digit & 0xF)
        }
        return value
    }
}
