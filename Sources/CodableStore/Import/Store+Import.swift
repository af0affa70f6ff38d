import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Store {
    /// Imports a dump of records of one entity (an array, an array inside a wrapper object, or JSON Lines)
    /// with upsert, in bounded memory whatever the size of the input.
    ///
    /// ```swift
    /// let decoder = StoreDecoder()
    /// decoder.dateDecodingStrategy = .iso8601
    /// let report = try store.importJSON(Issue.self, from: .file("issues.json"), options: .init(decoder: decoder))
    /// print(report.summary)
    /// ```
    ///
    /// The input is read in 64 KiB chunks and parsed by the JSON layer one record at a time, on a thread of its
    /// own that stays a batch or two ahead; records are grouped in batches of ``ImportOptions/batchSize``; the
    /// identities of a batch (nested objects and bare references included) are resolved with a few queries;
    /// each batch is saved, then forgotten, so memory stays flat. Under the stop policy in one transaction
    /// (the default), a third thread runs SQLite: it writes batch N-1 and looks up the identities of batch N+1
    /// while the calling thread decodes batch N, so that decoding and SQLite use both cores. Decoding, your
    /// `init(from:)` and decoding hooks, progress and logging stay on the calling thread. The whole import is
    /// one transaction (all or nothing) unless ``ImportOptions/commitEveryBatch`` is set.
    ///
    /// - Throws: ``ImportError`` with the record index, position and coding path of the failure (stop policy,
    ///   or a syntax error: a malformed document is never partly imported unless batches are committed). A
    ///   failure of the store rather than of the input (a full disk, another process writing the store for longer
    ///   than ``Store/Options/busyTimeout``) has ``ImportError/isStoreFailure`` set, and its description starts
    ///   with `store:`.
    public func importJSON<T: EntityObject>(
        _ type: T.Type, from source: ImportSource, options: ImportOptions = ImportOptions()
    ) throws -> ImportReport {
        let mapping = try model.mapping(for: T.self)
        let model = self.model
        let report = try withWriterConnection { connection in
            try Importer(connection: connection, model: model, mapping: mapping, options: options).run(source)
        }
        notifyObservers(Set(model.mappings.filter { report.entities[$0.name] != nil }.map(\.index)))
        return report
    }
}

/// One import run: the read loop, batches, transactions and the report.
private final class Importer {
    let connection: Connection
    let model: StoreModel
    let mapping: EntityMapping
    let options: ImportOptions
    let context: Context
    var report = ImportReport()
    /// The errors of skipped records by record index, kept only with a limit on skipped records (see checkSkipLimit).
    var skippedErrors: [Int: any Error] = [:]
    /// The batch being decoded.
    var batch: [JSONRecord] = []
    let clock = ContinuousClock()
    let start: ContinuousClock.Instant
    var totalBytes: Int?
    var bytesRead = 0
    /// The writer thread, while writing behind (stop policy, one transaction).
    var writer: WriteBehind?
    /// While writing behind: the number of plans handed to the writer before the current batch.
    var plansBeforeThisBatch = 0

    init(connection: Connection, model: StoreModel, mapping: EntityMapping, options: ImportOptions) {
        self.connection = connection
        self.model = model
        self.mapping = mapping
        self.options = options
        self.context = Context(connection: connection, model: model, isReadOnly: false)
        self.start = clock.now
    }

    var elapsed: Double {
        let duration = clock.now - start
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    func run(_ source: ImportSource) throws -> ImportReport {
        let decodingCPUStart = threadCPUSeconds()
        var readingCPU = 0.0
        var writingCPU = 0.0
        let descriptor: Int32
        var path: String?
        switch source {
        case .file(let file):
            do {
                descriptor = try JSONInput.open(file)
            } catch {
                throw ImportError(reason: "cannot open '\(file)': \(error.systemMessage)", underlyingError: error)
            }
            path = file
        case .standardInput:
            descriptor = 0
        case .fileDescriptor(let given):
            descriptor = given
        }
        defer { if path != nil { JSONInput.close(descriptor) } }
        totalBytes = JSONInput.fileDescriptor(descriptor, path: path).totalBytes

        let mode: JSONRecordStream.Mode =
            switch options.layout {
            case .array: .array
            case .arrayAt(let keyPath): .array(atPath: keyPath)
            case .jsonLines: .jsonLines
            }
        options.logger.info(
            "import started",
            metadata: [
                "entity": "\(mapping.name)", "input": "\(path ?? "standard input")", "layout": "\(mode)",
                "batchSize": "\(options.batchSize)", "failurePolicy": "\(options.failurePolicy.rawValue)",
            ])
        do {
            if !options.commitEveryBatch { try connection.beginWriteTransaction() }
        } catch {
            throw Self.importError(error)
        }
        // Under the stop policy in one transaction, SQLite writes each batch on a thread of its own while the
        // next batch is decoded (see WriteBehind); a failure anywhere rolls everything back. The skip policy
        // and committed batches need each batch written before the next begins.
        do {
            // Into an empty table in one transaction, every stored row of the entity is one this import
            // inserted: a filter of those identities answers most lookups of new records without a query.
            if !options.commitEveryBatch, !mapping.identityColumns.isEmpty, try context.isTableEmpty(mapping.index) {
                context.insertedIdentities[mapping.index] = IdentityFilter(expectedCount: (totalBytes ?? 0) / 256)
            }
            if options.failurePolicy == .stop, !options.commitEveryBatch {
                let started = WriteBehind(connection: connection, model: model)
                do {
                    try started.start()
                } catch {
                    throw ImportError(reason: "cannot start the import's writer thread: pthread_create failed (\(error.code))", underlyingError: error)
                }
                writer = started
                context.deferredWriter = started
            }
            // Reading and parsing run on a thread of their own (see RecordPipeline); batches come back here in
            // input order, and so do the reader's errors.
            let pipeline = RecordPipeline()
            defer {
                pipeline.finish()
                readingCPU = pipeline.cpuSeconds
            }
            var batcher = JSONRecordBatcher(mode: mode, size: options.batchSize)
            // Under the skip policy, a JSON Lines line that is not valid JSON is a skipped record; in an array, a
            // syntax error ends the import under either policy (where the next record starts cannot be known).
            batcher.skipsMalformedLines = options.failurePolicy == .skip && mode == .jsonLines
            // While writing behind, the reader also collects each batch's identities (see IdentityCollector).
            let collector = writer == nil ? nil : IdentityCollector(mapping, model: model, options: options.decoder.options)
            let inputPath = path
            try pipeline.start { [batcher] pipeline in
                try Self.readRecords(.fileDescriptor(descriptor, path: inputPath), batcher: batcher, collector: collector, into: pipeline)
            }
            // While writing behind, each batch's lookups are handed to the writer thread as soon as the batch
            // arrives, and the batch waits while the one before it is decoded: the writer looks up batch N+1
            // while batch N is decoded (see Prepared). A batch never waits for input, though: with nothing
            // more read yet (a slow pipe), it is decoded at once.
            var waiting: (records: [JSONRecord], bytesRead: Int, prepared: Prepared)?
            func decodeWaiting() throws {
                guard let (records, bytes, prepared) = waiting else { return }
                waiting = nil
                report.recordsRead += records.count
                bytesRead = bytes
                batch = records
                try processBatch(prepared)
            }
            reading: while true {
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
                    let (records, bytes) = (arrived.records, arrived.bytesRead)
                    skip(arrived.malformed)
                    if let writer {
                        let prepared = try prepare(records, writer, identities)
                        try decodeWaiting()
                        waiting = (records, bytes, prepared)
                    } else {
                        report.recordsRead += records.count
                        bytesRead = bytes
                        batch = records
                        try processBatch(nil)
                    }
                case .end(let bytes):
                    try decodeWaiting()
                    bytesRead = bytes
                    break reading
                case .failure(let error):
                    try decodeWaiting()
                    throw error
                }
            }
            if let writer {
                try writer.drain()
                writer.finish()
                writingCPU = writer.cpuSeconds
                context.deferredWriter = nil
            }
            if context.pendingReferenceCount > 0 {
                report.unresolvedReferences = context.unresolvedReferences
                if options.failsOnUnresolvedReferences {
                    let count = context.pendingReferenceCount
                    let examples = context.unresolvedReferenceExamples(limit: 3)
                    throw ImportError(
                        reason: "\(count) reference\(count == 1 ? "" : "s") never found \(count == 1 ? "its" : "their") object, such as "
                            + examples.joined(separator: ", ")
                            + (options.commitEveryBatch ? "; the batches before were committed" : "; nothing was imported"),
                        underlyingError: UnresolvedReferencesError(counts: context.unresolvedReferences, examples: examples))
                }
            }
            if !options.commitEveryBatch { try connection.execute(sql: "COMMIT TRANSACTION") }
            reportProgress()
        } catch {
            writer?.finish()  // before the rollback: the connection is then this thread's alone
            context.deferredWriter = nil
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
            reading: readingCPU, decoding: threadCPUSeconds() - decodingCPUStart, writing: writingCPU)
        options.logger.info(
            "import finished",
            metadata: [
                "records": "\(report.recordsRead)", "imported": "\(report.recordsImported)",
                "skipped": "\(report.recordsSkipped)", "seconds": "\(report.duration)",
            ])
        return report
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

    /// The reader thread: reads the input in chunks, parses it into records and hands them over in batches,
    /// with their identities when writing behind; returns the number of bytes read.
    static func readRecords(
        _ input: JSONInput, batcher: JSONRecordBatcher, collector: IdentityCollector?, into pipeline: RecordPipeline
    ) throws -> Int {
        do {
            return try batcher.read(input, isCancelled: { pipeline.isCancelled }) { batch in
                let identities = collector.map { $0.identities(of: batch.records) }
                guard pipeline.push(.batch(batch, identities: identities)) else { throw RecordPipeline.Cancelled() }
            }
        } catch let error as JSONRecordStream.ReadError {
            throw ImportError(reason: "cannot read input: \(error.systemMessage)", underlyingError: error)
        }
    }

    private struct SkipRecord: Error {
        let position: Int
        let error: any Error
    }

    /// A batch's decoders and identities, made when it arrives while writing behind, and the lookups the writer
    /// runs for it meanwhile: after the plans of the batches before the one being decoded, which is what
    /// `Context.adoptLookup(_:)` needs to stay right.
    struct Prepared {
        let session: DecodingSession
        let items: [(StoreDecoderImpl, JSONTape.Index)]
        let keys: [[Context.IdentityKey]]
        let lookup: Lookahead
    }

    func prepare(_ records: [JSONRecord], _ writer: WriteBehind, _ collected: BatchIdentities?) throws -> Prepared {
        let session = DecodingSession(context: context, options: options.decoder.options)
        let items = records.map { StoreDecoderImpl.item(for: $0, session) }
        let identities = collected ?? BatchIdentities(StoreDecoderImpl.collectKeys(mapping, items, model: model))
        let keys = identities.all
        // The batch's own entity first: the writer also loads the join-table memberships of its stored rows,
        // which decoding replaces (memberships stored as foreign keys wait for the writer: see
        // Context.withMembershipConnection).
        var requested: [(entity: Int, keys: [Context.IdentityKey])] = []
        for entity in [mapping.index] + keys.indices.filter({ $0 != mapping.index }) where !keys[entity].isEmpty {
            // Keys the filter of inserted identities rules out are not stored, nor held by a waiting plan.
            let distinct: [Context.IdentityKey]
            if let filter = context.insertedIdentities[entity] {
                distinct = identities.distinct[entity].filter { filter.mayContain($0) }
            } else {
                distinct = identities.distinct[entity]
            }
            if !distinct.isEmpty { requested.append((entity, distinct)) }
        }
        var memberships: [(field: Int, sql: String)] = []
        if requested.first?.entity == mapping.index {
            for case let relationship? in mapping.relationships where relationship.description.isToMany {
                // Only memberships decoding replaces (the field is in a record), as the prefetch loads them.
                let field = relationship.description.index
                guard case .joinTable = relationship.storage,
                    items.contains(where: { impl, root in
                        impl.source.kind(root) == .object && impl.presentField(root, mapping, field) != nil
                    })
                else { continue }
                memberships.append((relationship.description.index, context.membershipSQL(relationship, owners: Context.membershipChunk)))
            }
        }
        let lookup = Lookahead(keys: requested, memberships: memberships)
        try writer.requestLookup(lookup)
        return Prepared(session: session, items: items, keys: keys, lookup: lookup)
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

    /// Decodes and saves the current batch, leaving out (and reporting) records that fail under the skip
    /// policy: a failing record rolls the batch back, and the batch is decoded again without it.
    func processBatch(_ prepared: Prepared?) throws {
        guard !batch.isEmpty else {
            // Only lines that were not JSON (skip policy): nothing to decode, but the input moved on.
            try checkSkipLimit()
            reportProgress()
            return
        }
        if options.commitEveryBatch { try connection.beginWriteTransaction() }
        var excluded = Set<Int>()
        while true {
            var decoded: [Int] = []
            let before = context.writeCounts
            do {
                // Only the skip policy needs a batch it can roll back alone; under the stop policy a failure
                // rolls back the whole transaction, and a savepoint would make SQLite copy every page the
                // batch touches into a statement journal (10x the file writes of the import itself).
                func decodeAndSave() throws {
                    let session = prepared?.session ?? DecodingSession(context: context, options: options.decoder.options)
                    session.startCounting()
                    var items: [(StoreDecoderImpl, JSONTape.Index)] = []
                    var positions: [Int] = []
                    if let prepared {
                        items = prepared.items
                        positions = Array(items.indices)
                        try context.adoptLookup(prepared.lookup)
                    } else {
                        for (position, record) in batch.enumerated() where !excluded.contains(position) {
                            items.append(StoreDecoderImpl.item(for: record, session))
                            positions.append(position)
                        }
                    }
                    try StoreDecoderImpl.prefetch(mapping, items, context: context, keys: prepared?.keys)
                    for ((impl, root), position) in zip(items, positions) {
                        do {
                            _ = try impl.decodeElement(mapping, root, impl.path)
                        } catch {
                            if options.failurePolicy == .skip { throw SkipRecord(position: position, error: error) }
                            throw locate(error, batch[position])
                        }
                    }
                    decoded = session.decodedCounts ?? []
                    try context.flush(usingSavepoint: false)  // inside the batch's savepoint, or the transaction's
                }
                if options.failurePolicy == .skip {
                    // A failing record undoes the batch, in the store and in the context.
                    try context.inSavepoint(decodeAndSave)
                } else {
                    try decodeAndSave()
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
            // Rows written by this batch, and objects decoded without a write.
            for (entity, counts) in context.writeCounts {
                let previous = before[entity] ?? (0, 0)
                let name = model.mappings[entity].name
                report.entities[name, default: .init()].inserted += counts.inserted - previous.inserted
                report.entities[name, default: .init()].updated += counts.updated - previous.updated
            }
            // Objects decoded with nothing to write: decoded objects minus rows written (stubs, inserted
            // without being decoded, make this a lower bound).
            for (entity, decoded) in decoded.enumerated() where decoded > 0 {
                let name = model.mappings[entity].name
                let written = (context.writeCounts[entity]?.inserted ?? 0) - (before[entity]?.inserted ?? 0)
                    + (context.writeCounts[entity]?.updated ?? 0) - (before[entity]?.updated ?? 0)
                report.entities[name, default: .init()].unchanged += max(0, decoded - written)
            }
            report.recordsImported += batch.count - excluded.count
            break
        }
        if let writer {
            // The objects of the previous batch may go once its plans are written (see retireObjects()).
            try writer.waitUntilWritten(plansBeforeThisBatch)
            plansBeforeThisBatch = writer.enqueued
            context.retireObjects()
        } else {
            context.reset()
        }
        batch.removeAll(keepingCapacity: true)
        try checkSkipLimit()
        if options.commitEveryBatch { try connection.execute(sql: "COMMIT TRANSACTION") }
        options.logger.debug("batch saved", metadata: ["records": "\(report.recordsRead)", "bytes": "\(bytesRead)"])
        reportProgress()
    }

    /// An error of a record, with the record's position.
    func locate(_ error: any Error, _ record: JSONRecord) -> ImportError {
        let (reason, codingPath) = ImportError.describe(error)
        return ImportError(
            recordIndex: record.index, byteOffset: record.byteOffset, line: record.line, column: record.column,
            codingPath: codingPath, reason: reason, underlyingError: error)
    }
}

