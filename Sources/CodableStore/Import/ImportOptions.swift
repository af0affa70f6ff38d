import Logging

/// How ``Store/importJSON(_:from:options:syncing:)`` reads and writes a dump.
public struct ImportOptions: @unchecked Sendable {
    // @unchecked: `decoder` is a StoreDecoder, whose options are set before the import and only read during it.

    /// Where the records are in the input.
    public enum Layout: Sendable, Equatable {
        /// A top-level JSON array of records.
        case array
        /// The array at a key path inside a wrapper object: `.array(at: "data.items")`.
        case arrayAt(String)
        /// JSON Lines: one record per line.
        case jsonLines
    }

    /// What a record that cannot be decoded does to the import.
    public enum FailurePolicy: String, Sendable, Codable {
        /// Stop at the first bad record; nothing of the failed transaction is kept (with
        /// ``commitEveryBatch``, the batches committed before it are).
        ///
        /// In one transaction (without ``commitEveryBatch``), this is also the fastest import: SQLite writes
        /// each batch, and looks up the identities of the next, on a thread of its own while the calling
        /// thread decodes (see <doc:DecodingAPIDumps>).
        case stop
        /// Leave bad records out and list each one in the report; the rest is imported. This covers records
        /// that do not decode (wrong types, missing identities, references that cannot become stubs) and, in
        /// JSON Lines, lines that are not valid JSON (listed at their syntax error; the next line is a fresh start).
        /// In an array, a JSON syntax error still stops the import: the reader cannot know where the next record
        /// starts.
        ///
        /// Each batch is written before the next is decoded, since a bad record rolls its batch back.
        case skip
    }

    public var layout: Layout
    /// Records decoded and saved together: identities of a batch are looked up with a few queries. While one
    /// batch is decoded, at most three more are in memory (the next, whose identities are being looked up;
    /// one waiting; one being read), and the values of at most two batches wait to be written, so memory
    /// grows with the batch size, not with the input.
    public var batchSize: Int
    public var failurePolicy: FailurePolicy
    /// Under the skip policy, the most records that may be skipped: more fail the import like a bad record under
    /// the stop policy (in one transaction nothing is kept; with ``commitEveryBatch``, the batches before stay),
    /// naming the first record over the limit in input order. Checked after each batch, so a file in the wrong
    /// format stops early instead of "succeeding" with every record skipped. `nil` (the default): no limit.
    public var maximumSkippedRecords: Int?
    /// Commit after every batch instead of once at the end. An interrupted import keeps the committed batches
    /// and can simply be run again: upsert makes it idempotent. Each batch is written (and committed) before
    /// the next is decoded, which is slower than one transaction.
    public var commitEveryBatch: Bool
    /// Whether references kept by the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy whose object
    /// never arrived fail the import (nothing is kept, unless batches were committed), instead of being counted
    /// in ``ImportReport/unresolvedReferences``.
    public var failsOnUnresolvedReferences: Bool
    /// The decoder, with its strategies (dates, keys, references).
    public var decoder: StoreDecoder
    /// Called after every batch with the bytes and records read so far.
    public var progress: (@Sendable (ImportProgress) -> Void)?
    /// Where the import logs: start and end at info, batches at debug, skipped records at warning,
    /// failures at error. Silent by default.
    public var logger: Logger

    public init(
        layout: Layout = .array,
        batchSize: Int = 1_000,
        failurePolicy: FailurePolicy = .stop,
        maximumSkippedRecords: Int? = nil,
        commitEveryBatch: Bool = false,
        failsOnUnresolvedReferences: Bool = false,
        decoder: StoreDecoder = StoreDecoder(),
        progress: (@Sendable (ImportProgress) -> Void)? = nil,
        logger: Logger = Logger(label: "CodableStore.import", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.logger = logger
        self.layout = layout
        self.batchSize = max(1, batchSize)
        self.failurePolicy = failurePolicy
        self.maximumSkippedRecords = maximumSkippedRecords.map { max(0, $0) }
        self.commitEveryBatch = commitEveryBatch
        self.failsOnUnresolvedReferences = failsOnUnresolvedReferences
        self.decoder = decoder
        self.progress = progress
    }
}

/// Where an import reads from.
public enum ImportSource: Sendable {
    /// A file.
    case file(String)
    /// Standard input (`-` on the command line).
    case standardInput
    /// An open file descriptor, which is not closed.
    case fileDescriptor(Int32)
}

/// How far an import has come.
public struct ImportProgress: Sendable {
    /// Bytes of input parsed so far.
    public var bytesRead: Int
    /// The size of the input, when it is a regular file.
    public var totalBytes: Int?
    /// Records read so far.
    public var recordsRead: Int
    /// Seconds since the import started.
    public var elapsed: Double

    /// Records per second so far.
    public var recordsPerSecond: Double { elapsed > 0 ? Double(recordsRead) / elapsed : 0 }

    /// Seconds left, estimated from the bytes read, when the total is known.
    public var estimatedSecondsLeft: Double? {
        guard let totalBytes, bytesRead > 0, elapsed > 0 else { return nil }
        return elapsed * Double(totalBytes - bytesRead) / Double(bytesRead)
    }
}
