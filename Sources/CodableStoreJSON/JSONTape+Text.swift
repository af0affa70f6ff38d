extension JSONTape {
    /// The value at `index` as compact JSON text: members in document order (duplicates kept), numbers as written,
    /// strings escaped minimally (`"`, `\`, control characters). For reports and debugging.
    public func jsonText(of index: Index) -> String {
        var output: [UInt8] = []
        var position = index.position
        let end = subtreeEnd(position)
        // For each open container: its end position and whether a separator is due.
        var open: [(end: Int, isObject: Bool, first: Bool)] = []
        withStorage { storage in
            while position < end || !open.isEmpty {
                while let last = open.last, position >= last.end {
                    output.append(last.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
                    open.removeLast()
                }
                guard position < end else { break }
                let node = nodes[position]
                if let last = open.last {
                    let isValueOfMember = last.isObject && node.kind != .key
                    if !isValueOfMember {
                        if !last.first { output.append(UInt8(ascii: ",")) }
                        open[open.count - 1].first = false
                    }
                }
                switch node.kind {
                case .object, .array:
                    let isObject = node.kind == .object
                    output.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
                    open.append((Int(node.a), isObject, true))
                case .key, .string:
                    withBytes(of: node) { Self.appendQuoted($0, to: &output) }
                    if node.kind == .key { output.append(UInt8(ascii: ":")) }
                case .number:
                    output.append(contentsOf: storage.bytes(of: node))
                case .bool:
                    output.append(contentsOf: node.a != 0 ? Array("true".utf8) : Array("false".utf8))
                case .null:
                    output.append(contentsOf: Array("null".utf8))
                }
                position += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func appendQuoted(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        let hexDigits = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                output.append(UInt8(ascii: "\\"))
                output.append(byte)
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                output.append(contentsOf: Array("\\u00".utf8))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0xF)])
            default:
                output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
