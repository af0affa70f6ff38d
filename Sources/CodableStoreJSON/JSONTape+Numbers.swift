extension JSONTape {
    // Conversions straight from the tape's bytes, without creating a `JSONNumber` (no string): the decoder's fast
    // path. Each returns nil when the value is not a number, and throws when the number does not fit (see
    // ``JSONNumber`` for the rules).

    public func int64(at index: Index) throws(JSONNumberError) -> Int64? {
        let node = nodes[index.position]
        guard node.kind == .number else { return nil }
        return try withNumberBytes(node) { bytes throws(JSONNumberError) in try JSONNumber.int64(bytes) }
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
