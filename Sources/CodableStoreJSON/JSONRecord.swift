/// One record of a dump, as handed out by ``JSONRecordStream``: its position and its value as a ``JSONTape``.
///
/// The stream reuses the tape's buffers for the next record. Copying the record (or its tape) is safe and keeps
/// the value, but costs an allocation per record: decode it inside the callback instead.
public struct JSONRecord: Sendable {
    /// The record's position in the dump, 0-based (array element index, or non-blank line index in JSON Lines).
    public let index: Int
    /// The absolute byte offset of the record's first byte.
    public let byteOffset: Int
    /// The line (1-based) where the record starts.
    public let line: Int
    /// The column (1-based, in bytes) where the record starts.
    public let column: Int
    /// The record's value.
    public internal(set) var tape: JSONTape

    /// The record's value: ``JSONTape/root`` of ``tape``.
    public var root: JSONTape.Index { tape.root }
}

extension JSONRecord {
    /// A copy whose tape owns buffers of exactly its size.
    ///
    /// A plain copy shares the stream's buffers, whose capacity is that of the largest record so far; the stream
    /// then reallocates that capacity for the next record. A batch of such copies holds the slack of every record,
    /// which is why the importer's reader hands over compact copies instead.
    package func compacted() -> JSONRecord {
        JSONRecord(index: index, byteOffset: byteOffset, line: line, column: column, tape: tape.compacted())
    }
}

extension JSONTape {
    /// A copy that owns buffers of exactly its size. Made field by field: copying the whole tape first (then
    /// replacing its arrays) retained and released both arrays, about 220 instructions a record (callgrind).
    func compacted() -> JSONTape {
        var copy = JSONTape()
        copy.nodes = nodes.compacted()
        copy.bytes = bytes.compacted()
        copy.input = input
        copy.baseOffset = baseOffset
        return copy
    }
}
