import Foundation

/// Decodes a large document whose top level is an array of entities (`[Issue]`, `Set<Issue>`, `Many<Issue>`) on
/// two threads: the importer's reader and decode stages over data in memory. A reader thread
/// (``RecordPipeline/read(_:batcher:collector:)``) splits the array into records and hands them over in batches,
/// while the calling thread decodes each batch as it comes (``BatchDecoding``), resolving its identities with one
/// query per entity. Parsing is about 40% of a decode; it overlaps with the rest. What differs from an import is the
/// writing: into the caller's context and transaction, returning the objects. ``StoreDecoder`` chooses it for large
/// arrays (``StoreDecoder/parallelDecodingThreshold``).
///
/// The contract of ``StoreDecoder/decode(_:from:into:)`` stays whole, including "a malformed document changes
/// nothing in the context": decoding starts before the end of the document is known to be valid, so it is
/// optimistic. It runs only on a pristine context (no objects, no pending changes: see ``Context/isPristine``),
/// inside a context savepoint (``Context/inSavepoint(_:)``). If the parser finds a syntax error, the savepoint
/// undoes everything in the store and the context, and ``Malformed`` tells the caller to decode the ordinary way,
/// which throws the very error a one-thread decode throws. A decoding error (a wrong type in record 7) waits for
/// the parser to finish the document first, for the same reason: a syntax error anywhere wins, as it does when the
/// whole document is parsed before anything is decoded.
///
/// What differs from the one-thread path is invisible in the results: identities are looked up per batch of
/// ``batchSize`` records rather than for the whole array at once (still one query per entity and batch, never
/// one per element), and the parser keeps at most a few batches in memory instead of the whole document's tape.
struct ParallelArrayDecoding: EntityArrayDecoding {
    let data: Data
    let session: DecodingSession

    /// The records per batch, and the most bytes of input a batch spans (records of a few MiB make small batches).
    static let batchSize = 1000
    static let batchSpan = 4 << 20
    /// Bytes given to the parser at a time, so that the first batch is ready early.
    static let chunkSize = 64 << 10

    /// The document has a syntax error: nothing was changed; decode it on one thread for the error.
    struct Malformed: Error {}

    /// Whether `data`'s first value (after a byte order mark and whitespace) is an array.
    static func startsWithArray(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var position = 0
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                case UInt8(ascii: "["): return true
                default: return false
                }
            }
            return false
        }
    }

    func decodeEntityArray<Element: EntityObject>(_ type: Element.Type) throws -> [Element] {
        let context = session.context
        let mapping = try context.model.mapping(for: Element.self)
        let pipeline = RecordPipeline(capacity: 2)
        defer { pipeline.finish() }
        do {
            try pipeline.start { [data] pipeline in try Self.readRecords(data, into: pipeline) }
        } catch {
            throw Malformed()  // no thread: the one-thread path decodes it
        }
        var failure: (any Error)?
        // A syntax error undoes everything decoded so far, in the store and in the context.
        let result = try context.inSavepoint(savingAtEnd: false) { () throws -> [Element] in
            var result: [Element] = []
            while true {
                switch pipeline.pop() {
                case .batch(let batch, _):
                    // After a decoding error, only whether the rest of the document is well-formed matters.
                    guard failure == nil else { continue }
                    do {
                        try decode(batch.records, mapping, into: &result)
                    } catch {
                        failure = error
                    }
                case .end:
                    return result
                case .failure:
                    throw Malformed()
                }
            }
        }
        if let failure { throw failure }
        return result
    }

    /// Decodes one batch of records (elements of the top-level array) with the import's decode stage.
    private func decode<Element: EntityObject>(
        _ records: [JSONRecord], _ mapping: EntitySchema, into result: inout [Element]
    ) throws {
        let stage = BatchDecoding(mapping: mapping, session: session)
        let (items, _) = stage.items(for: records)
        result.reserveCapacity(result.count + items.count)
        try stage.decode(items) { result.append(unsafeDowncast($0, to: Element.self)) }
    }

    /// The parser thread: the document's top-level array, in batches of records.
    private static func readRecords(_ data: Data, into pipeline: RecordPipeline) throws -> Int {
        var batcher = JSONRecordBatcher(mode: .array, size: batchSize)
        batcher.span = batchSpan
        batcher.chunkSize = chunkSize
        return try data.withUnsafeBytes { try pipeline.read(.bytes($0), batcher: batcher) }
    }
}
