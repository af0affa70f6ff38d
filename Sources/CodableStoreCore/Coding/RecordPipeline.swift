/// Reads and parses an import's input on a thread of its own, handing complete batches of records to the
/// importer in order, so that reading, yajl and building the records' tapes run on one core while decoding
/// and SQLite run on another. ``StoreDecoder`` uses it the same way for a large in-memory array
/// (``ParallelArrayDecoding``).
///
/// The hand-over is bounded: the reader waits while `capacity` batches are waiting, so at most the batch being
/// decoded, the waiting ones and the one being read are in memory, whatever the size of the input. Items come
/// out in input order, and a failure of the reader (a syntax error, a read error) comes after every batch read
/// before it, so the importer sees errors in record order, as if it had parsed the input itself. A batch cut
/// short by a failure is not handed over: the records before a syntax error in the same batch are not imported
/// (as before; under ``ImportOptions/commitEveryBatch`` the batches committed earlier stay). Under the skip policy,
/// JSON Lines lines that are not valid JSON travel with the batch after them (or on their own, a batch's worth at a
/// time).
package final class RecordPipeline: @unchecked Sendable {
    // @unchecked: `items` is read and written under the worker's monitor.

    package enum Item: Sendable {
        /// Records in input order (with the bytes read and the JSON Lines lines that were not valid JSON), and the
        /// records' identities when the reader collected them (see ``BatchIdentityCollector``).
        case batch(JSONRecordBatcher.Batch, identities: BatchIdentities? = nil)
        /// The input ended after the last batch.
        case end(bytesRead: Int)
        /// The reader failed after the last batch.
        case failure(any Error)
    }

    /// Thrown inside the reader when the importer stopped taking batches (also by a read waiting for input:
    /// see ``JSONInput/forEachChunk(size:isCancelled:_:)``).
    typealias Cancelled = JSONInput.Cancelled

    private let capacity: Int
    private let worker = Worker()
    private var monitor: Monitor { worker.monitor }
    private var items: [Item] = []
    /// Wall-clock seconds ``pop()`` waited for the reader (used by the importer's thread only).
    package private(set) var secondsWaitedForInput = 0.0

    package init(capacity: Int = 1) {
        self.capacity = max(1, capacity)
    }

    /// Whether the importer has stopped taking batches: a reader waiting for input should give up.
    var isCancelled: Bool {
        monitor.withLock { worker.isStopping }
    }

    /// Starts `read` on a new thread. It hands over batches with ``push(_:)`` and returns the number of bytes
    /// read; `.end` (when it returns) or `.failure` (when it throws) is pushed for it.
    package func start(_ read: @escaping @Sendable (RecordPipeline) throws -> Int) throws {
        do {
            try worker.start { [self] in
                do {
                    let bytesRead = try read(self)
                    _ = push(.end(bytesRead: bytesRead))
                } catch is Cancelled {
                    return
                } catch {
                    _ = push(.failure(error))
                }
            }
        } catch {
            throw JSONRecordStream.ReadError(path: nil, operation: "start a reader thread for", code: error.code)
        }
    }

    /// What the reader thread runs (inside ``start(_:)``): reads `input` in chunks, parses it into records and hands
    /// them over in batches, with their identities when `collector` is given; returns the number of bytes read.
    /// A failure to read the input is a `JSONRecordStream.ReadError`, as is a failure to start the thread.
    package func read(_ input: JSONInput, batcher: JSONRecordBatcher, collector: BatchIdentityCollector? = nil) throws -> Int {
        try batcher.read(input, isCancelled: { self.isCancelled }) { batch in
            let identities = collector.map { $0.identities(of: batch.records) }
            guard push(.batch(batch, identities: identities)) else { throw Cancelled() }
        }
    }

    /// Hands an item to the importer, waiting while the queue is full. False when the importer has stopped:
    /// the reader should then return (throw ``Cancelled``).
    func push(_ item: Item) -> Bool {
        monitor.withLock {
            while items.count >= capacity, !worker.isStopping { monitor.wait() }
            if worker.isStopping { return false }
            items.append(item)
            monitor.broadcast()
            return true
        }
    }

    /// The next item, waiting for the reader when there is none.
    package func pop() -> Item {
        monitor.withLock {
            secondsWaitedForInput += monitor.wait(while: { items.isEmpty })
            let item = items.removeFirst()
            monitor.broadcast()
            return item
        }
    }

    /// The next item if the reader has one ready, without waiting.
    package func tryPop() -> Item? {
        monitor.withLock {
            if items.isEmpty { return nil }
            let item = items.removeFirst()
            monitor.broadcast()
            return item
        }
    }

    /// The CPU time the reader thread used, in seconds, once ``finish()`` joined it.
    package var cpuSeconds: Double { worker.cpuSeconds }

    /// Stops the reader (if it still runs) and waits for its thread to end; safe to call more than once. A
    /// reader waiting for input notices within ``JSONInput/pollInterval``.
    package func finish() {
        worker.finish { items.removeAll() }
    }
}
