import CodableStoreCore
import Logging

/// How `Store/importJSON(_:from:options:syncing:)` reads and writes a dump.
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
        /// thread decodes (see the article "Decoding API dumps" of CodableStoreCore).
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
    ///
    /// `nil` (the default): the backend's. On SQLite 500 records, which leaves more of the import's memory to the
    /// page cache (``cacheSizeKiB``); on PostgreSQL 2,000, since each batch costs a few statements per table, each a
    /// round trip and a plan (1M reference records into a new schema: 19.0 s against 23.0 s with batches of 1,000,
    /// peak RSS 57 MiB against 46; their re-import, which skips unchanged records, 0.86-0.92x the time of batches of
    /// 1,000, peak 58 MiB against 47).
    public var batchSize: Int?
    /// The SQLite page cache of the store's writer connection while the import runs, in KiB (the store's own
    /// `Store/Options/cacheSizeKiB` if that is larger; restored when the import ends). An import changes tables
    /// and indexes far larger than any cache, at random places (the rows of repeated identities, the indexes of tables
    /// that had rows): every changed page the cache cannot hold is written to the WAL and read back when it changes
    /// again. The default, 20 MiB, re-imports a million reference records as fast as 24 MiB did (farm-bench: 0.95x,
    /// spread 0.90-1.05), since the rows of users and labels are cached apart (``rowCacheKiB``), and an import into
    /// empty tables, whose indexes are built at the end, as fast with 12 MiB. `nil`: the store's own. Not used on
    /// PostgreSQL, whose buffers are the server's.
    public var cacheSizeKiB: Int?
    /// How many objects of the entities records refer to (users, labels, repositories: every entity but the records'
    /// own) the import keeps in memory after the batches that used them, while it writes behind (the stop policy in
    /// one transaction). A record that mentions one of them again then needs no lookup and no new object: dumps
    /// mention the same users and labels over and over. The objects retained longest without being mentioned go first.
    /// Each costs a few hundred bytes (its attribute values, with no relationship loaded): the default, 8,192, peaks at
    /// about 3 MiB.
    ///
    /// When an entity's retained objects are mostly let go before being mentioned again (far more distinct objects than
    /// the limit, mentioned at random), retaining them costs more than it saves, and the import stops retaining that
    /// entity. Measured on the reference dumps: 4% less CPU on 100,000 records mentioning 5,000 users; the same time on a
    /// million mentioning 50,000 users at random. 0 keeps only the objects of the batch just decoded.
    public var retainedObjectLimit: Int
    /// How much memory, in KiB, the import may give to stored rows of the entities records refer to (every entity with
    /// an identity but the records' own), while it writes behind (the stop policy in one transaction). A record that
    /// mentions a user whose object is no longer in memory (beyond ``retainedObjectLimit``) then needs no query: the
    /// row found the last time answers, and the object is made from it. A row costs far less than an object: about
    /// 50 bytes for a user's id and login, so the default, 4 MiB, holds some 80,000 of them. When it is full, the
    /// rows are forgotten and it fills again.
    ///
    /// A row changed by the import is read again. Stores with triggers keep no rows (a trigger changes rows the
    /// import cannot see). On PostgreSQL, a row another session changes while the import runs may be answered as it
    /// was, as a retained object would be. Measured on a million records mentioning 50,000 users at random: the
    /// user lookups (a quarter of SQLite's time) are gone. 0: none.
    public var rowCacheKiB: Int
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
    /// Whether the import takes the SQLite store for itself while it runs (off by default). The store then uses a
    /// rollback journal instead of its write-ahead log until the import ends: SQLite writes each page once, into the
    /// database, instead of twice (into the WAL, then into the database by a checkpoint). Measured on a million reference
    /// records into empty tables: half the page writes and reads, and 0.86x to 0.94x the wall time of the same import
    /// in WAL mode (farm-bench, two calls). A re-import, which changes pages that exist, gains nothing: a rollback
    /// journal writes those twice too.
    ///
    /// Meanwhile nobody else can use the store: other connections, this store's own `Store/read(_:)-mvnk` calls and
    /// other processes included, wait for it (up to their busy timeout, then fail with `SQLITE_BUSY`). Use it for
    /// bulk loads nobody reads during, not on a server that answers from the store while it imports.
    ///
    /// It is only granted when no other connection has the store open (this store's idle readers are closed first),
    /// checked without waiting; otherwise the import runs in WAL mode as usual. ``ImportReport/exclusiveAccess`` says
    /// which. While it holds the store, SQLite syncs as `synchronous = FULL` (a rollback journal with `NORMAL` could
    /// be corrupted by a power loss at the wrong moment); when it ends, committed or rolled back, the store is in WAL
    /// mode again. Ignored for in-memory stores.
    ///
    /// On PostgreSQL, an import in one transaction into tables that are empty when it begins (a new store, a new
    /// entity) holds those tables alone when nobody else uses them at that moment: it drops their foreign keys and
    /// non-unique indexes and makes them again once its rows are in, one check per key instead of one per row and one
    /// sorted build per index (100k reference records into a new store: 0.58x the time of the same import beside
    /// others). Until it commits, other sessions' reads and writes of
    /// those tables wait for it (up to their busy timeout). Not granted when the tables hold rows, another session
    /// uses one of them, the store's role does not own them, or the import commits every batch.
    public var exclusiveAccess: Bool
    /// Whether references kept by the `StoreDecoder/UnknownReferencePolicy/deferred` policy whose object
    /// never arrived fail the import (nothing is kept, unless batches were committed), instead of being counted
    /// in ``ImportReport/unresolvedReferences`` and listed in ``ImportReport/unresolvedReferenceList``. The check
    /// is at the end of the import (a reference may find its object in any later batch); a ``decoder`` whose
    /// `StoreDecoder/failsOnUnresolvedReferences` is set asks for the same.
    ///
    /// ```swift
    /// do {
    ///     _ = try store.importJSON(Comment.self, from: .file("comments.json"), options: .init(failsOnUnresolvedReferences: true))
    /// } catch let error as ImportError {
    ///     let unresolved = error.underlyingError as? UnresolvedReferencesError
    ///     unresolved?.references.first   // Comment id = 7: issue → Issue id = 99 never arrived
    /// }
    /// ```
    public var failsOnUnresolvedReferences: Bool
    /// How many unresolved references an import lists, the first ones in the order of
    /// `Context/listUnresolvedReferences(limit:)`, in ``ImportReport/unresolvedReferenceList`` and in the
    /// `UnresolvedReferencesError` of ``failsOnUnresolvedReferences``: 100 by default. The counts
    /// (``ImportReport/unresolvedReferences``, `UnresolvedReferencesError/count`) are always complete; a dump
    /// whose references mostly miss could otherwise fill the report with millions of them.
    public var unresolvedReferenceListLimit = 100
    /// Whether records stored exactly as they would be written are skipped without decoding them (their nested
    /// objects are still upserted): a re-import of a dump that changed little does a fraction of the work. On by
    /// default.
    ///
    /// Each row keeps a keyed digest of the record an import last wrote it from (`_digest`), which
    /// every other change clears: updates, link changes from either side and deletions of rows it refers to made
    /// through CodableStore, migrations, and the same changes made by SQL of other programs (triggers that the import,
    /// or on PostgreSQL the schema, installs; see `Store/forgetImportDigests()`). A record whose digest matches its row's is skipped and counted
    /// as unchanged (``ImportReport/unchangedRecordsSkipped``): the store ends as an import that decodes every record
    /// would leave it.
    ///
    /// It applies to the default import (stop policy, one transaction) of entities with an identity and without
    /// custom decoding, `prepareForDecoding` or to-many relationships stored by foreign key, with a decoder whose
    /// strategies are not closures or formatters, into a store without triggers of its own (one could change a row
    /// after its digest was written); elsewhere records are decoded as usual.
    public var skipsUnchangedRecords: Bool
    /// The decoder, with its strategies (dates, keys, references).
    public var decoder: StoreDecoder
    /// Called after every batch with the bytes and records read so far.
    public var progress: (@Sendable (ImportProgress) -> Void)?
    /// Where the import logs: start and end at info, batches at debug, skipped records at warning,
    /// failures at error. Silent by default.
    public var logger: Logger

    public init(
        layout: Layout = .array,
        batchSize: Int? = nil,
        cacheSizeKiB: Int? = 20 * 1_024,
        retainedObjectLimit: Int = 8_192,
        rowCacheKiB: Int = 4 * 1_024,
        failurePolicy: FailurePolicy = .stop,
        maximumSkippedRecords: Int? = nil,
        commitEveryBatch: Bool = false,
        exclusiveAccess: Bool = false,
        failsOnUnresolvedReferences: Bool = false,
        skipsUnchangedRecords: Bool = true,
        decoder: StoreDecoder = StoreDecoder(),
        progress: (@Sendable (ImportProgress) -> Void)? = nil,
        logger: Logger = Logger(label: "CodableStore.import", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.logger = logger
        self.layout = layout
        self.batchSize = batchSize.map { max(1, $0) }
        self.cacheSizeKiB = cacheSizeKiB.map { max(64, $0) }
        self.retainedObjectLimit = max(0, retainedObjectLimit)
        self.rowCacheKiB = max(0, rowCacheKiB)
        self.failurePolicy = failurePolicy
        self.maximumSkippedRecords = maximumSkippedRecords.map { max(0, $0) }
        self.commitEveryBatch = commitEveryBatch
        self.exclusiveAccess = exclusiveAccess
        self.failsOnUnresolvedReferences = failsOnUnresolvedReferences
        self.skipsUnchangedRecords = skipsUnchangedRecords
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
