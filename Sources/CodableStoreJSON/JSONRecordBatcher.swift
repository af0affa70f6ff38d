/// Turns input into batches of records: reads it in chunks (``JSONInput``), parses it with a ``JSONRecordStream``
/// and hands the records out in batches, each record a compact copy (the stream's buffers keep the capacity of the
/// largest record so far). The one loop from chunks to record batches: the importer's reader thread and the
/// two-thread array decode both run it.
package struct JSONRecordBatcher {
    /// Records in input order.
    package struct Batch: Sendable {
        package var records: [JSONRecord]
        /// The input bytes consumed when the batch was complete.
        package var bytesRead: Int
        /// The JSON Lines lines since the batch before that were not valid JSON (with ``skipsMalformedLines``).
        package var malformed: [JSONSyntaxError]
    }

    package let mode: JSONRecordStream.Mode
    /// The most records in a batch.
    package let size: Int
    /// A batch ends once it spans this many bytes of input, so that records of a few MiB make small batches.
    package var span = Int.max
    /// JSON Lines lines that are not valid JSON become ``Batch/malformed`` instead of ending the read; a file of
    /// mostly bad lines still moves on a batch's worth at a time.
    package var skipsMalformedLines = false
    package var chunkSize = JSONRecordStream.defaultChunkSize

    package init(mode: JSONRecordStream.Mode, size: Int) {
        precondition(size > 0, "a batch holds at least one record")
        self.mode = mode
        self.size = size
    }

    /// Reads `input` to its end, calling `onBatch` with each batch (the last one may be short; none is empty);
    /// returns the number of bytes read. A syntax error ends the read with the records before it in the same batch
    /// not handed out; `isCancelled` is asked while waiting for input (see ``JSONInput/forEachChunk(size:isCancelled:_:)``).
    package func read(
        _ input: JSONInput, isCancelled: () -> Bool = { false }, _ onBatch: (Batch) throws -> Void
    ) throws -> Int {
        // The stream keeps its malformed-line handler, which hands batches over, only for this call.
        try withoutActuallyEscaping(onBatch) { onBatch in try read(input, isCancelled: isCancelled, handingOverTo: onBatch) }
    }

    private func read(
        _ input: JSONInput, isCancelled: () -> Bool, handingOverTo onBatch: @escaping (Batch) throws -> Void
    ) throws -> Int {
        let stream = JSONRecordStream(mode: mode)
        var records: [JSONRecord] = []
        records.reserveCapacity(size)
        var malformed: [JSONSyntaxError] = []
        func handOver() throws {
            let batch = Batch(records: records, bytesRead: stream.byteOffset, malformed: malformed)
            records = []
            records.reserveCapacity(size)
            malformed = []
            try onBatch(batch)
        }
        defer { stream.malformedLineHandler = nil }
        if skipsMalformedLines {
            stream.malformedLineHandler = { error in
                malformed.append(error)
                if malformed.count >= size { try handOver() }
            }
        }
        try stream.read(input, chunkSize: chunkSize, isCancelled: isCancelled) { record in
            records.append(record.compacted())
            if records.count >= size || record.byteOffset - records[0].byteOffset >= span { try handOver() }
        }
        if !records.isEmpty || !malformed.isEmpty { try handOver() }
        return stream.byteOffset
    }
}
