extension JSONTape {
    // Conversions straight from the tape's bytes, without creating a `JSONNumber` (no string): the decoder's fast
    // path. Each returns nil when the value is not a number, and throws when the number does not fit (see
    // ``JSONNumber`` for the rules).

    public func int64(at index: Index) throws(JSONNumberError) -> Int64? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        // Identities and counts are short runs of digits: read in place, without the general path's closure and
        // result (about 200 instructions a number there, callgrind; a re-import reads half a million at 100k).
        if node.b <= Self.plainDigitLimit, let plain = withStorage({ Self.plainDigits($0.bytes(of: node)) }) {
            return plain
        }
        return try withNumberBytes(node) { bytes throws(JSONNumberError) in try JSONNumber.int64(bytes) }
    }

    /// The most digits ``plainDigits(_:)`` reads: 18 never overflow an `Int64`.
    static let plainDigitLimit: UInt32 = 18

    /// The value of a number written as 1 to 18 digits, without a sign, a fraction or an exponent; nil for any
    /// other (which the general path reads). A JSON number has no leading zeros, so the digits are the value.
    @inline(__always)
    static func plainDigits(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= Int(plainDigitLimit) else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value &* 10 &+ Int64(digit)
        }
        return value
    }

    public func uint64(at index: Index) throws(JSONNumberError) -> UInt64? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        return try withNumberBytes(node) { bytes throws(JSONNumberError) in try JSONNumber.uint64(bytes) }
    }

    public func integer<T: FixedWidthInteger>(at index: Index, as type: T.Type = T.self) throws(JSONNumberError) -> T? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        return try withNumberBytes(node) { bytes throws(JSONNumberError) in try JSONNumber.integer(bytes, as: type) }
    }

    public func double(at index: Index) throws(JSONNumberError) -> Double? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        return try withNumberBytes(node) { bytes throws(JSONNumberError) in try JSONNumber.double(bytes) }
    }

    public func float(at index: Index) throws(JSONNumberError) -> Float? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        return try withNumberBytes(node) { bytes throws(JSONNumberError) in try JSONNumber.float(bytes) }
    }

    private func withNumberBytes<Result>(
        _ node: Node,
        _ body: (UnsafeRawBufferPointer) throws(JSONNumberError) -> Result
    ) throws(JSONNumberError) -> Result {
        let result: Swift.Result<Result, JSONNumberError> = withBytes(of: node) { bytes in
            do throws(JSONNumberError) {
                return .success(try body(bytes))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
