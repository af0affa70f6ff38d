import CodableStoreCore
import Logging

/// One import run: the read loop, batches, transactions and the report.
final class Importer {
    let connection: any DatabaseConnection
    let storage: SQLStorage
    let model: Schema
    let mapping: EntitySchema
    let options: ImportOptions
    let context: Context
    var report = ImportReport()
    /// The errors of skipped records by record index, kept only with a limit on skipped records (see checkSkipLimit).
    var skippedErrors: [Int: any Error] = [:]
    /// The batch being decoded.
    var batch: [JSONRecord] = []
    /// When the import began (``monotonicSeconds()``).
    let start: Double
    var totalBytes: Int?
    var bytesRead = 0
    /// The writer thread, while writing behind (stop policy, one transaction).
    var writer: WriteBehind?
    /// While writing behind: the number of plans handed to the writer before the current batch.
    var plansBeforeThisBatch = 0
    /// For a sync import: deletes what the dump did not have, once it is written (see ``SyncScope``).
    let deleteUnseen: ((Context, SyncTracker) throws -> (deleted: [Int: Int], missing: Int))?
    /// For a sync import: the identities of stored objects that the dump has.
    var syncTracker: SyncTracker?
    /// While unchanged records are skipped: the hasher each record's digest starts from (see ``RecordDigests``).
    var stamper: BatchIdentityCollector.Stamper?
    /// In one transaction: whether the store has triggers besides its stamp guards (asked once the write lock is
    /// held, so that nobody adds one meanwhile).
    var storeHasTriggers = true
    /// How many times a batch committed alone runs at most (`Store.Options.maximumWriteAttempts`).
    let maximumWriteAttempts: Int
    /// Whether the import's transaction runs with no other writer beside it: the import runs again after meeting
    /// another writer's (see `DatabaseConnection.beginWriteTransaction(alone:)`).
    let alone: Bool

    init(
        connection: any DatabaseConnection, storage: SQLStorage, mapping: EntitySchema, options: ImportOptions,
        maximumWriteAttempts: Int = 1, alone: Bool = false,
        deleteUnseen: ((Context, SyncTracker) throws -> (deleted: [Int: Int], missing: Int))? = nil
    ) {
        self.maximumWriteAttempts = maximumWriteAttempts
        self.alone = alone
        self.deleteUnseen = deleteUnseen
        self.connection = connection
        self.storage = storage
        self.model = storage.model
        self.mapping = mapping
        self.options = options
        self.context = Context(connection: connection, storage: storage, isReadOnly: false)
        self.start = monotonicSeconds()
    }

    /// Records per batch: the options', or the backend's.
    private(set) var batchSize = 0

    var elapsed: Double { monotonicSeconds() - start }

    /// Imports `source`: opens it, starts the reader (and, writing behind, the writer), decodes and saves batch
    /// after batch, and commits; on failure rolls back (what was not committed) and throws an ``ImportError``.
    func run(_ source: ImportSource) throws -> ImportReport {
        let decodingCPUStart = threadCPUSeconds()
        let (descriptor, path) = try open(source)
        defer { if path != nil { JSONInput.close(descriptor) } }
        totalBytes = JSONInput.fileDescriptor(descriptor, path: path).totalBytes
        batchSize = options.batchSize ?? storage.dialect.importBatchSize
        options.logger.info(
            "import started",
            metadata: [
                "entity": "\(mapping.name)", "input": "\(path ?? "standard input")", "layout": "\(mode)",
                "batchSize": "\(batchSize)", "failurePolicy": "\(options.failurePolicy.rawValue)",
            ])
        var restoredCacheSize: Int?
        var foreignKeysOff = false
        var deferredBuilds: (any DeferredBuilds)?
        var exclusive = false
        // Other writers' rows (an identity another import inserted) are waited for as long as they are held.
        connection.setWaitsForWriters(true)
        // Once the import is over (or failed to begin), the writer thread too: the connection is this thread's again,
        // and outside a transaction, where the foreign keys can be turned on again.
        defer {
            connection.setWaitsForWriters(false)
            deferredBuilds?.cancel()
            if let restoredCacheSize { try? connection.setPageCacheSize(kibibytes: restoredCacheSize) }
            if foreignKeysOff { _ = try? connection.setForeignKeyEnforcement(true) }
            if exclusive {
                do {
                    try connection.releaseExclusiveAccess()
                } catch {
                    // What was imported is committed (or rolled back) all the same; the store's next opening
                    // switches to WAL mode again.
                    options.logger.warning("the store stays in rollback-journal mode", metadata: ["error": "\(error)"])
                }
            }
        }
        do {
            // On a server (writers in parallel), the import's tables are taken inside its transaction instead (below).
            if options.exclusiveAccess, !connection.writesInParallel {
                exclusive = try connection.takeExclusiveAccess()
                report.exclusiveAccess = exclusive
                if !exclusive {
                    options.logger.notice("exclusive access not granted: another connection has the store open; importing in WAL mode")
                }
            }
            restoredCacheSize = try enlargePageCache()
            // SQLite checks a row's foreign keys on every insert, update and delete of it: a B-tree search of the
            // row it refers to (two per link), 14% of the writer's instructions at 100k reference records. The
            // context writes only links and references to rows that exist, so the import runs without the checks;
            // the keys' ON DELETE actions are then done by whoever deletes rows (context.enforcesForeignKeys). Not
            // under a sync, whose deletions run as SQL over pages of rows.
            foreignKeysOff = deleteUnseen == nil ? try connection.setForeignKeyEnforcement(false) : false
            context.enforcesForeignKeys = !foreignKeysOff
            if !options.commitEveryBatch {
                try connection.beginWriteTransaction(alone: alone)
                storeHasTriggers = try connection.hasTriggers()
            }
        } catch {
            throw Self.importError(error)
        }
        var readingCPU = 0.0
        var waits = ImportReport.Waits()
        do {
            if deleteUnseen != nil { syncTracker = try context.startSync(of: mapping) }
            if !options.commitEveryBatch {
                try prepareIdentityFilter()
                // Indexes (SQLite), or foreign keys and indexes (PostgreSQL), of empty tables are built once the rows are
                // in (see IndexDeferral, LoadDeferral). Only in one transaction, not under a sync (whose deletions
                // run as SQL over pages of rows, and rely on the database's ON DELETE actions).
                if deleteUnseen == nil {
                    deferredBuilds = try connection.deferBuildsOfEmptyTables(writing: tablesWritten(), alone: options.exclusiveAccess)
                    if deferredBuilds?.suspendsForeignKeys == true { context.enforcesForeignKeys = false }
                }
            }
            if options.exclusiveAccess, connection.writesInParallel {
                report.exclusiveAccess = deferredBuilds != nil
                if deferredBuilds == nil {
                    options.logger.notice(
                        "exclusive access not granted: the import commits every batch, its tables hold rows, or another session uses them; foreign keys are checked and indexes updated row by row")
                }
            }
            try startWriting()
            try prepareDigests()
            // Reading and parsing run on a thread of their own (see RecordPipeline); batches come back here in
            // input order, and so do the reader's errors.
            let pipeline = try startReading(descriptor, path: path)
            defer {
                pipeline.finish()
                readingCPU = pipeline.cpuSeconds
                waits.input = pipeline.secondsWaitedForInput
            }
            try decodeBatches(from: pipeline)
            try writer?.drain()
            waits.lookups = writer?.secondsWaitedForLookups ?? 0
            waits.writing = writer?.secondsWaitedForWriting ?? 0
            let buildStart = monotonicSeconds()
            // On the writer's thread: the pages of the cache it frees are that thread's memory (glibc's arena of the
            // thread that allocated them), which the build takes again. Built on this thread, it took 11 MiB more
            // at 1M records (peak 72 MiB instead of 63). For the same reason the writer's cached rows go first, and
            // the filter of inserted identities: nothing needs them after the last batch.
            context.storedKeys[mapping.index] = nil
            if let writer, let deferredBuilds {
                try writer.withConnection {
                    writer.rowCache?.clear(keepingCapacity: false)
                    try deferredBuilds.build()
                }
            }
            writer?.finish()
            context.writeBehind = nil
            try deferredBuilds?.build()
            if deferredBuilds != nil { waits.indexBuilds = monotonicSeconds() - buildStart }
            try checkUnresolvedReferences()
            try finishSync()
            if !options.commitEveryBatch {
                try connection.announceChanges(to: model.mappings.map(\.name))
                try connection.commit()
            }
            reportProgress()
        } catch {
            writer?.finish()  // before the rollback: the connection is then this thread's alone
            context.writeBehind = nil
            connection.rollbackIgnoringErrors()
            context.reset()
            let importError = Self.importError(error)
            options.logger.error("import failed", metadata: ["error": "\(importError)", "cause": "\(error)"])
            throw importError
        }
        context.reset()
        // Lines that were not JSON arrive with the batch after them: the list goes in record order.
        report.skippedRecords.sort { $0.index < $1.index }
        report.bytesRead = bytesRead
        report.duration = elapsed
        report.cpu = ImportReport.CPUTime(
            reading: readingCPU, decoding: threadCPUSeconds() - decodingCPUStart, writing: writer?.cpuSeconds ?? 0)
        report.waits = waits
        if stamper != nil { report.unchangedRecordsSkipped = context.unchangedRecordsSkipped }
        options.logger.info(
            "import finished",
            metadata: [
                "records": "\(report.recordsRead)", "imported": "\(report.recordsImported)",
                "skipped": "\(report.recordsSkipped)", "seconds": "\(report.duration)",
            ])
        return report
    }

    /// Gives the writer connection the import's page cache (``ImportOptions/cacheSizeKiB``) unless its own is
    /// larger; returns the size to restore afterwards, if it changed.
    private func enlargePageCache() throws -> Int? {
        guard let requested = options.cacheSizeKiB, let own = try connection.pageCacheSize(), own < requested else { return nil }
        try connection.setPageCacheSize(kibibytes: requested)
        return own
    }

    /// The input's descriptor, and its path when this import opened it (and closes it).
    private func open(_ source: ImportSource) throws -> (descriptor: Int32, path: String?) {
        switch source {
        case .file(let file):
            do {
                return (try JSONInput.open(file), file)
            } catch {
                throw ImportError(reason: "cannot open '\(file)': \(error.systemMessage)", underlyingError: error)
            }
        case .standardInput:
            return (0, nil)
        case .fileDescriptor(let given):
            return (given, nil)
        }
    }

    private var mode: JSONRecordStream.Mode {
        switch options.layout {
        case .array: .array
        case .arrayAt(let keyPath): .array(atPath: keyPath)
        case .jsonLines: .jsonLines
        }
    }

    /// The tables the records may write: the imported entity's, those its relationships reach (transitively), and
    /// their join tables.
    func tablesWritten() -> Set<String> {
        var reached: Set<Int> = [mapping.index]
        var pending = [mapping.index]
        while let entity = pending.popLast() {
            for relationship in model.mappings[entity].relationships.lazy.compactMap({ $0 })
            where reached.insert(relationship.destination).inserted {
                pending.append(relationship.destination)
            }
        }
        return Set(reached.map { model.mappings[$0].name })
            .union(model.joinTables.lazy.filter { reached.contains($0.source) && reached.contains($0.target) }.map(\.name))
    }

    /// Under the stop policy in one transaction, SQLite writes each batch on a thread of its own while the next
    /// batch is decoded (see WriteBehind); a failure anywhere rolls everything back. The skip policy and committed
    /// batches need each batch written before the next begins.
    private func startWriting() throws {
        guard options.failurePolicy == .stop, !options.commitEveryBatch else { return }
        // Rows of the entities records refer to, for lookups of the same keys (see RowCache).
        let keepsRows = options.rowCacheKiB > 0 && !storeHasTriggers
        let rowCache = keepsRows ? RowCache(model: model, excluding: mapping.index, budget: options.rowCacheKiB * 1_024) : nil
        let started = WriteBehind(
            connection: connection, storage: storage, clearsReferences: !context.enforcesForeignKeys,
            retention: ObjectRetention(limit: options.retainedObjectLimit, excluding: mapping.index),
            rowCache: rowCache)
        do {
            try started.start()
        } catch {
            throw ImportError(reason: "cannot start the import's writer thread: pthread_create failed (\(error.code))", underlyingError: error)
        }
        writer = started
        context.writeBehind = started
    }

    /// Reads which entities have digests (every save of the import keeps them right), and, when this import may skip
    /// unchanged records, marks the entity as one with digests, guards them (`DatabaseConnection.installStampGuards`)
    /// and reads the store's key (see ``RecordDigests``). Digests of an entity that was not guarded may be stale: the
    /// key is then forgotten.
    /// On the connection before the reader starts: the writer thread has nothing to do yet.
    private func prepareDigests() throws {
        guard storage.dialect.storesStamps else { return }
        // A trigger of the user's could change a row after the import wrote its digest.
        let skips = writer != nil && options.skipsUnchangedRecords && !storeHasTriggers && RecordDigests.qualifies(mapping)
        let fingerprint = skips ? RecordDigests.fingerprint(model, options: options.decoder.options) : nil
        func prepare() throws {
            let digested = try RowStamps.stampedEntities(model, on: connection)
            guard let fingerprint else {
                context.stampedEntityIndexes = digested
                return
            }
            var marked = try RowStamps.markStamped(mapping.index, model, on: connection)
            if try !connection.installStampGuards(guarding: marked, previous: digested, storage: storage) {
                options.logger.notice("import digests were not guarded: every record is decoded once more")
                try RowStamps.forgetAll(on: connection)
                marked = try RowStamps.markStamped(mapping.index, model, on: connection)
                _ = try connection.installStampGuards(guarding: marked, previous: [], storage: storage)
            }
            context.stampedEntityIndexes = marked
            stamper = RecordDigests.stamper(key: try RowStamps.key(on: connection), fingerprint: fingerprint)
        }
        if let writer { try writer.withConnection(prepare) } else { try prepare() }
    }

    /// Into an empty table in one transaction, every stored row of the entity is one this import inserted: a filter
    /// of those identities answers most lookups of new records without a query.
    private func prepareIdentityFilter() throws {
        guard !mapping.identityColumns.isEmpty, try context.isTableEmpty(mapping.index) else { return }
        context.storedKeys[mapping.index] = IdentityFilter(expectedCount: (totalBytes ?? 0) / 256)
    }

    /// Starts the reader thread on the input.
    private func startReading(_ descriptor: Int32, path: String?) throws -> RecordPipeline {
        var batcher = JSONRecordBatcher(mode: mode, size: batchSize)
        // Under the skip policy, a JSON Lines line that is not valid JSON is a skipped record; in an array, a syntax
        // error ends the import under either policy (where the next record starts cannot be known).
        batcher.skipsMalformedLines = options.failurePolicy == .skip && mode == .jsonLines
        // While writing behind, the reader also collects each batch's identities (see BatchIdentityCollector).
        let collector =
            writer == nil ? nil : BatchIdentityCollector(mapping, model: model, options: options.decoder.options, stamper: stamper)
        let pipeline = RecordPipeline()
        do {
            try pipeline.start { [batcher] pipeline in
                do {
                    return try pipeline.read(.fileDescriptor(descriptor, path: path), batcher: batcher, collector: collector)
                } catch let error as JSONRecordStream.ReadError {
                    throw ImportError(reason: "cannot read input: \(error.systemMessage)", underlyingError: error)
                }
            }
        } catch let error as JSONRecordStream.ReadError {
            throw ImportError(reason: error.description, underlyingError: error)
        }
        return pipeline
    }

    /// Decodes and saves the batches as they come. While writing behind, each batch's lookups are handed to the
    /// writer thread as soon as the batch arrives, and the batch waits while the one before it is decoded: the
    /// writer looks up batch N+1 while batch N is decoded (see BatchLookup). A batch never waits for input,
    /// though: with nothing more read yet (a slow pipe), it is decoded at once.
    private func decodeBatches(from pipeline: RecordPipeline) throws {
        var waiting: (records: [JSONRecord], bytesRead: Int, prepared: BatchLookup)?
        func decodeWaiting() throws {
            guard let (records, bytes, prepared) = waiting else { return }
            waiting = nil
            try process(records, bytesRead: bytes, prepared)
        }
        while true {
            let item: RecordPipeline.Item
            if waiting == nil {
                item = pipeline.pop()
            } else if let ready = pipeline.tryPop() {
                item = ready
            } else {
                try decodeWaiting()
                continue
            }
            switch item {
            case .batch(let arrived, let identities):
                skip(arrived.malformed)
                if let writer {
                    let prepared = try BatchLookup(
                        arrived.records, mapping: mapping, context: context, options: options.decoder.options,
                        collected: identities, writer: writer, stamper: stamper)
                    try decodeWaiting()
                    waiting = (arrived.records, arrived.bytesRead, prepared)
                } else {
                    try process(arrived.records, bytesRead: arrived.bytesRead, nil)
                }
            case .end(let bytes):
                try decodeWaiting()
                bytesRead = bytes
                return
            case .failure(let error):
                try decodeWaiting()
                throw error
            }
        }
    }

    private func process(_ records: [JSONRecord], bytesRead bytes: Int, _ prepared: BatchLookup?) throws {
        report.recordsRead += records.count
        bytesRead = bytes
        batch = records
        try processBatch(prepared)
    }

    /// Deferred references that never found their object: counted and listed in the report, and an error when asked
    /// (by the import's options or its decoder's).
    private func checkUnresolvedReferences() throws {
        guard context.pendingReferenceCount > 0 else { return }
        let counts = context.unresolvedReferences
        // Their owners were written by earlier batches, and let go: their identities are read from the store.
        let listed = try context.listUnresolvedReferences(limit: options.unresolvedReferenceListLimit)
        report.unresolvedReferences = counts
        report.unresolvedReferenceList = listed.isEmpty ? nil : listed
        guard options.failsOnUnresolvedReferences || options.decoder.failsOnUnresolvedReferences else { return }
        let error = UnresolvedReferencesError(count: context.pendingReferenceCount, counts: counts, references: listed)
        throw ImportError(
            reason: "\(error)" + (options.commitEveryBatch ? "; the batches before were committed" : "; nothing was imported"),
            underlyingError: error)
    }

    /// For a sync import, deletes the stored objects of the scope that the dump did not have, in the import's
    /// transaction (in a transaction of its own after the last batch's when batches are committed), unless a record
    /// was skipped: the dump is then not the whole truth.
    private func finishSync() throws {
        guard let tracker = syncTracker, let deleteUnseen else { return }
        var sync = ImportReport.Sync(entity: mapping.name, present: tracker.seen.count)
        defer { report.sync = sync }
        if report.recordsSkipped > 0 {
            let skipped = report.recordsSkipped
            sync.withheldReason = "\(skipped) record\(skipped == 1 ? " was" : "s were") skipped, so the dump is not the whole truth: nothing was deleted"
            options.logger.warning("sync deletions withheld", metadata: ["skipped": "\(skipped)"])
            return
        }
        if options.commitEveryBatch { try connection.beginWriteTransaction() }
        let (counts, missing) = try deleteUnseen(context, tracker)
        if options.commitEveryBatch {
            try connection.announceChanges(to: model.mappings.map(\.name))
            try connection.commit()
        }
        for (entity, count) in counts {
            report.entities[model.mappings[entity].name, default: .init()].deleted += count
        }
        sync.deleted = missing
        options.logger.info("sync deleted what the dump did not have", metadata: ["deleted": "\(sync.deleted)"])
    }

    static func importError(_ error: any Error) -> ImportError {
        if let error = error as? ImportError { return error }
        if let syntax = error as? JSONSyntaxError {
            return ImportError(
                recordIndex: syntax.recordIndex, byteOffset: syntax.byteOffset, line: syntax.line, column: syntax.column,
                reason: syntax.reason, underlyingError: syntax)
        }
        let (reason, codingPath) = ImportError.describe(error)
        return ImportError(codingPath: codingPath, reason: reason, underlyingError: error)
    }

    private struct SkipRecord: Error {
        let position: Int
        let error: any Error
    }

    /// Tells the progress callback how far the import got.
    func reportProgress() {
        options.progress?(ImportProgress(bytesRead: bytesRead, totalBytes: totalBytes, recordsRead: report.recordsRead, elapsed: elapsed))
    }

    /// Reports JSON Lines lines that were not valid JSON as skipped records (skip policy). Their position is
    /// that of the syntax error, which is more use than the start of the line.
    func skip(_ malformed: [JSONSyntaxError]) {
        for error in malformed {
            let index = error.recordIndex ?? report.recordsRead
            report.recordsRead += 1
            recordSkipped(
                ImportReport.SkippedRecord(
                    index: index, byteOffset: error.byteOffset, line: error.line, column: error.column, codingPath: nil,
                    reason: "invalid JSON: \(error.reason)"),
                error)
        }
    }

    /// Lists a skipped record in the report and logs it.
    func recordSkipped(_ record: ImportReport.SkippedRecord, _ error: any Error) {
        report.skippedRecords.append(record)
        report.recordsSkipped += 1
        if options.maximumSkippedRecords != nil { skippedErrors[record.index] = error }
        options.logger.warning(
            "record skipped", metadata: ["record": "\(record.index)", "line": "\(record.line)", "reason": "\(record.reason)"])
    }

    /// Fails the import when more records were skipped than ``ImportOptions/maximumSkippedRecords`` allows, naming
    /// the first one over the limit in input order. Checked once a batch is decoded, before it is committed: bad
    /// JSON Lines lines arrive with the batch after them, so counting as they come would not follow the input.
    func checkSkipLimit() throws {
        guard let limit = options.maximumSkippedRecords, report.recordsSkipped > limit else { return }
        report.skippedRecords.sort { $0.index < $1.index }
        let record = report.skippedRecords[limit]
        throw ImportError(
            recordIndex: record.index, byteOffset: record.byteOffset, line: record.line, column: record.column,
            codingPath: record.codingPath,
            reason: "more than \(limit) record\(limit == 1 ? "" : "s") skipped (the limit); the next: \(record.reason)",
            underlyingError: skippedErrors[record.index] ?? StoreError(.invalidObject, record.reason))
    }

    /// Decodes and saves the current batch (see ``decodeAndSaveBatch(_:)``), committing it when batches are committed.
    func processBatch(_ prepared: BatchLookup?) throws {
        guard !batch.isEmpty else {
            // Only lines that were not JSON (skip policy): nothing to decode, but the input moved on.
            try checkSkipLimit()
            reportProgress()
            return
        }
        guard options.commitEveryBatch else {
            try decodeAndSaveBatch(prepared)
            return
        }
        // A batch that meets another writer's transaction (a deadlock, an identity both inserted at once) is rolled
        // back and runs again, from the counts, deferred references and report it started with (see
        // Store.Options.maximumWriteAttempts).
        let (mark, reportMark, skippedMark) = (context.transactionMark(), report, skippedErrors)
        let dialect = storage.dialect
        do {
            try Store.retryingConflicts(
                maximumAttempts: maximumWriteAttempts, logger: options.logger, operation: "batch",
                isConflict: { Self.isTransientConflict($0, dialect) }
            ) { retries in
                if retries > 0 {
                    context.restore(mark)
                    (report, skippedErrors) = (reportMark, skippedMark)
                    report.retries = retries + (reportMark.retries ?? 0)
                }
                do {
                    try connection.beginWriteTransaction(alone: Store.writesAlone(afterRetries: retries))
                    try decodeAndSaveBatch(prepared)
                    try connection.announceChanges(to: model.mappings.map(\.name))
                    try connection.commit()
                } catch {
                    connection.rollbackIgnoringErrors()
                    throw error
                }
            }
        } catch let error as StoreError where error.code == .writeConflict {
            throw ImportError(
                reason: "batch of records \(batch.first?.index ?? 0)-\(batch.last?.index ?? 0): \(error.message); "
                    + "the batches before were committed",
                underlyingError: error)
        }
        // Another import may mark an entity as having digests between two batches: read them again.
        context.stampedEntityIndexes = nil
        batch.removeAll(keepingCapacity: true)
        options.logger.debug("batch saved", metadata: ["records": "\(report.recordsRead)", "bytes": "\(bytesRead)"])
        reportProgress()
    }

    /// Whether an import's error is a conflict with another writer's transaction that running again resolves (see
    /// `SQLDialect.isTransientConflict`), the import's own wrapping aside.
    static func isTransientConflict(_ error: any Error, _ dialect: any SQLDialect) -> Bool {
        dialect.isTransientConflict((error as? ImportError)?.underlyingError ?? error)
    }

    /// Decodes and saves the current batch (without committing it), leaving out (and reporting) records that fail
    /// under the skip policy: a failing record rolls the batch back, and the batch is decoded again without it.
    private func decodeAndSaveBatch(_ prepared: BatchLookup?) throws {
        var excluded = Set<Int>()
        while true {
            let before = context.writeCounts
            let decoded: [Int]
            do {
                if options.failurePolicy == .skip {
                    // A failing record undoes the batch, in the store and in the context, and the batch is decoded
                    // again without it. Under the stop policy a failure rolls back the whole transaction, and a
                    // savepoint would make SQLite copy every page the batch touches into a statement journal.
                    decoded = try context.inSavepoint { try decodeAndSave(prepared, excluding: excluded) }
                } else {
                    decoded = try decodeAndSave(prepared, excluding: excluded)
                }
            } catch let skip as SkipRecord {
                excluded.insert(skip.position)
                let record = batch[skip.position]
                let (reason, codingPath) = ImportError.describe(skip.error)
                recordSkipped(
                    ImportReport.SkippedRecord(
                        index: record.index, byteOffset: record.byteOffset, line: record.line, column: record.column,
                        codingPath: codingPath, reason: reason),
                    skip.error)
                continue
            }
            count(decoded: decoded, writtenSince: before)
            report.recordsImported += batch.count - excluded.count
            break
        }
        if let writer {
            // The objects of the previous batch may go once its plans are written (see ObjectRetention).
            try writer.waitUntilWritten(plansBeforeThisBatch)
            plansBeforeThisBatch = writer.enqueued
            writer.evict(from: context)
        } else {
            context.reset()
        }
        try checkSkipLimit()
        if !options.commitEveryBatch {
            batch.removeAll(keepingCapacity: true)
            options.logger.debug("batch saved", metadata: ["records": "\(report.recordsRead)", "bytes": "\(bytesRead)"])
            reportProgress()
        }
    }

    /// Decodes the batch's records but `excluded` (skipped ones, by position) and saves them (hands them to the
    /// writer thread); returns the number of objects decoded per entity. A record that fails throws
    /// ``SkipRecord`` under the skip policy, else its located ``ImportError``.
    private func decodeAndSave(_ prepared: BatchLookup?, excluding excluded: Set<Int>) throws -> [Int] {
        let session = prepared?.session ?? DecodingSession(context: context, options: options.decoder.options)
        session.startCounting()
        session.track(syncTracker)
        let stage = BatchDecoding(mapping: mapping, session: session)
        let items: [BatchDecoding.Item]
        let positions: [Int]
        if let prepared {
            (items, positions) = (prepared.items, Array(prepared.items.indices))
            try context.adoptLookup(prepared.lookahead)
        } else {
            (items, positions) = stage.items(for: batch, excluding: excluded)
        }
        try stage.decode(items, keys: prepared?.keys, failure: { index, error in
            let position = positions[index]
            // A conflict with another writer is the transaction's, not the record's: it runs again. A lost connection,
            // a failing server or a lock waited for too long are the store's.
            if storage.dialect.isTransientConflict(error) { return error }
            if let failure = error as? StoreError, [.connectionFailed, .serverFailed, .storeBusy].contains(failure.code) { return error }
            if options.failurePolicy == .skip { return SkipRecord(position: position, error: error) }
            return locate(error, batch[position])
        }) { _ in }
        let decoded = session.decodedCounts ?? []
        try context.flush(usingSavepoint: false, isSave: true)  // inside the batch's savepoint, or the transaction's
        return decoded
    }

    /// Adds a batch to the report's counts per entity (see `Context.entityCounts(since:decoded:deleted:)`): rows
    /// written since `before` (the context's write counts when the batch began), and objects decoded with nothing
    /// to write.
    private func count(decoded: [Int], writtenSince before: [Int: (inserted: Int, updated: Int)]) {
        for (name, batch) in context.entityCounts(since: before, decoded: decoded) {
            report.entities[name, default: .init()].inserted += batch.inserted
            report.entities[name, default: .init()].updated += batch.updated
            report.entities[name, default: .init()].unchanged += batch.unchanged
        }
    }

    /// An error of a record, with the record's position.
    func locate(_ error: any Error, _ record: JSONRecord) -> ImportError {
        let (reason, codingPath) = ImportError.describe(error)
        return ImportError(
            recordIndex: record.index, byteOffset: record.byteOffset, line: record.line, column: record.column,
            codingPath: codingPath, reason: reason, underlyingError: error)
    }
}

