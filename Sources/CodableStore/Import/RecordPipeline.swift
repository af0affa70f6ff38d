#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and parses an import's input on a thread of its own, handing complete batches of records to the
/// importer in order, so that reading, yajl and building the records' tapes run on one core while decoding
/// and SQLite run on another.
///
/// The hand-over is bounded: the reader waits while `capacity` batches are waiting, so at most the batch being
/// decoded, the waiting ones and the one being read are in memory, whatever the size of the input. Items come
/// out in input order, and a failure of the reader (a syntax error, a read error) comes after every batch read
/// before it, so the importer sees errors in record order, as if it had parsed the input itself. A batch cut
/// short by a failure is not handed over: the records before a syntax error in the same batch are not imported
/// (as before; under ``ImportOptions/commitEveryBatch`` the batches committed earlier stay).
final class RecordPipeline: @unchecked Sendable {
    // @unchecked: `items` and `cancelled` are read and written under `mutex`; `thread` only by the importer.

    enum Item: Sendable {
        /// Records in input order, with the number of input bytes consumed when the batch was complete.
        case batch([JSONRecord], bytesRead: Int)
        /// The input ended after the last batch.
        case end(bytesRead: Int)
        /// The reader failed after the last batch.
        case failure(any Error)
    }

    /// Thrown inside the reader when the importer stopped taking batches.
    struct Cancelled: Error {}

    /// How long the reader waits for input before checking whether the importer stopped, in milliseconds: a
    /// failed import from a pipe that stays open (`tail -f dump.jsonl | codable-store import …`) still ends.
    static let pollInterval: Int32 = 100

    private let capacity: Int
    // Allocated: the address of a stored property is not guaranteed stable, and pthread objects must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var items: [Item] = []
    private var cancelled = false
    private var thread: pthread_t?

    init(capacity: Int = 1) {
        self.capacity = max(1, capacity)
        mutex.initialize(to: pthread_mutex_t())
        changed.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        precondition(thread == nil, "RecordPipeline released while its reader runs: call finish()")
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    /// Whether the importer has stopped taking batches: a reader waiting for input should give up.
    var isCancelled: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return cancelled
    }

    /// Starts `read` on a new thread. It hands over batches with ``push(_:)`` and returns the number of bytes
    /// read; `.end` (when it returns) or `.failure` (when it throws) is pushed for it.
    func start(_ read: @escaping @Sendable (RecordPipeline) throws -> Int) throws {
        final class Job {
            let pipeline: RecordPipeline
            let read: @Sendable (RecordPipeline) throws -> Int
            init(_ pipeline: RecordPipeline, _ read: @escaping @Sendable (RecordPipeline) throws -> Int) {
                self.pipeline = pipeline
                self.read = read
            }
            func run() {
                do {
                    let bytesRead = try read(pipeline)
                    _ = pipeline.push(.end(bytesRead: bytesRead))
                } catch is Cancelled {
                    return
                } catch {
                    _ = pipeline.push(.failure(error))
                }
            }
        }
        let job = Unmanaged.passRetained(Job(self, read)).toOpaque()
        // Glibc's pthread_t is an integer; Darwin's and Musl's are pointers, imported as optionals here.
        #if canImport(Glibc)
        var created = pthread_t()
        #else
        var created: pthread_t? = nil
        #endif
        let status = pthread_create(
            &created, nil,
            { argument in
                // Optional on Glibc and Musl, not on Darwin: the cast makes one spelling work on all of them.
                Unmanaged<Job>.fromOpaque((argument as UnsafeMutableRawPointer?)!).takeRetainedValue().run()
                return nil
            }, job)
        guard status == 0 else {
            Unmanaged<Job>.fromOpaque(job).release()
            let error = JSONRecordStream.ReadError(path: nil, operation: "start a reader thread for", code: status)
            throw ImportError(reason: error.description, underlyingError: error)
        }
        thread = created
    }

    /// Hands an item to the importer, waiting while the queue is full. False when the importer has stopped:
    /// the reader should then return (throw ``Cancelled``).
    func push(_ item: Item) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while items.count >= capacity, !cancelled { pthread_cond_wait(changed, mutex) }
        if cancelled { return false }
        items.append(item)
        pthread_cond_broadcast(changed)
        return true
    }

    /// The next item, waiting for the reader when there is none.
    func pop() -> Item {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while items.isEmpty { pthread_cond_wait(changed, mutex) }
        let item = items.removeFirst()
        pthread_cond_broadcast(changed)
        return item
    }

    /// Stops the reader (if it still runs) and waits for its thread to end; safe to call more than once. A
    /// reader waiting for input notices within ``pollInterval``.
    func finish() {
        pthread_mutex_lock(mutex)
        cancelled = true
        items.removeAll()
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }
}
