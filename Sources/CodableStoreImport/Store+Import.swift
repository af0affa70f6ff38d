import CodableStoreCore
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
    /// one transaction (all or nothing) unless ``ImportOptions/commitEveryBatch`` is set. On SQLite, an import
    /// without `scope` runs without the foreign-key checks, which cost a search per reference written; what a
    /// decoding hook deletes meanwhile has its links and the references to it cleared by the store (see the article
    /// "Storage mapping" of CodableStoreCore); the non-unique indexes of tables that are empty when it begins are built
    /// once the rows are in, before it commits (see the article "Decoding API dumps" of CodableStoreCore).
    ///
    /// - Throws: ``ImportError`` with the record index, position and coding path of the failure (stop policy,
    ///   or a syntax error: a malformed document is never partly imported unless batches are committed). A
    ///   failure of the store rather than of the input (a full disk, another process writing the store for longer
    ///   than `Store/Options/busyTimeout`) has ``ImportError/isStoreFailure`` set, and its description starts
    ///   with `store:`.
    ///
    /// With `scope`, the dump is the whole truth for that scope: once it is written, the objects of the scope that
    /// were stored before the import and whose identity the dump does not have are deleted, with their delete rules,
    /// in the same transaction (see `SyncScope`). ``ImportReport/sync`` and `ImportReport/EntityCounts/deleted`
    /// count them. An import that fails deletes nothing, and neither does one that skipped a record.
    public func importJSON<T: EntityObject>(
        _ type: T.Type, from source: ImportSource, options: ImportOptions = ImportOptions(), syncing scope: SyncScope<T>? = nil
    ) throws -> ImportReport {
        try importJSON(try model.mapping(for: T.self), from: source, options: options, syncing: scope)
    }

    /// Imports a dump of records of the entity named `entity`, described at run time (`RuntimeEntityBuilder`, or a
    /// model file read by `CodableStoreModelFile`), exactly as ``importJSON(_:from:options:syncing:)`` imports a
    /// compiled entity's: the same pipeline, options, report and errors.
    ///
    /// ```swift
    /// let model = try ModelFile.parse(String(contentsOfFile: "github.yaml"), file: "github.yaml")
    /// let store = try Store(path: "github.sqlite", entities: [], runtimeEntities: try model.entityDescriptions())
    /// let report = try store.importJSON(entity: "Issue", from: .file("issues.json"))
    /// ```
    ///
    /// - Throws: ``ImportError`` as ``importJSON(_:from:options:syncing:)`` does; `StoreError` with
    ///   `unknownEntity` when the store has no entity of that name.
    public func importJSON(
        entity: String, from source: ImportSource, options: ImportOptions = ImportOptions(),
        syncing scope: SyncScope<RuntimeObject>? = nil
    ) throws -> ImportReport {
        try importJSON(try model.mapping(named: entity), from: source, options: options, syncing: scope)
    }

    private func importJSON<T: EntityObject>(
        _ mapping: EntitySchema, from source: ImportSource, options: ImportOptions, syncing scope: SyncScope<T>?
    ) throws -> ImportReport {
        let storage = self.storage
        let deleteUnseen: ((Context, SyncTracker) throws -> (deleted: [Int: Int], missing: Int))? = scope.map { scope in
            { context, tracker in try context.deleteUnseen(tracker, scope: scope, releasingObjects: true) }
        }
        // The store's idle readers would keep the writer from taking the store for itself.
        if options.exclusiveAccess { connections.closeIdleReaders() }
        // On a server with writers in parallel, an import in one transaction that meets another writer's (a deadlock,
        // an identity both inserted at once) runs again from the start of its file; one that commits every batch runs
        // the batch again (see Importer.processBatch). Standard input cannot be read twice.
        let dialect = storage.dialect
        let runsAgain: Bool
        if case .file = source, !options.commitEveryBatch { runsAgain = true } else { runsAgain = false }
        var report: ImportReport
        do {
            report = try retryingConflicts(
                operation: "import",
                isConflict: { error in runsAgain && Importer.isTransientConflict(error, dialect) }
            ) { retries in
                var report = try withWriter { connection in
                    try Importer(
                        connection: connection, storage: storage, mapping: mapping, options: options,
                        maximumWriteAttempts: self.options.maximumWriteAttempts, alone: Store.writesAlone(afterRetries: retries), deleteUnseen: deleteUnseen)
                        .run(source)
                }
                if retries > 0 { report.retries = retries + (report.retries ?? 0) }
                return report
            }
        } catch let error as StoreError where error.code == .writeConflict {
            throw Importer.importError(error)
        } catch let error as ImportError where !runsAgain && !options.commitEveryBatch && dialect.isTransientConflict(error.underlyingError) {
            // An input that cannot be read twice: the conflict is said as what it is, not as the caller's own.
            let (reason, _) = ImportError.describe(error.underlyingError)
            throw ImportError(
                reason: "another writer's transaction met this import's, which was rolled back (\(reason)); an import from standard "
                    + "input or a descriptor cannot run again from its start: import a file, or commit every batch (a batch "
                    + "then runs again)",
                underlyingError: StoreError(.writeConflict, reason, cause: error.underlyingError))
        }
        var touched = Set(model.mappings.filter { report.entities[$0.name] != nil }.map(\.index))
        for mapping in model.mappings where report.entities[mapping.name].map({ $0.deleted > 0 }) == true {
            // Deleting cleared foreign keys and join rows of related entities.
            for case let relationship? in mapping.relationships { touched.insert(relationship.destination) }
        }
        notifyObservers(touched)
        return report
    }
}

extension Store {
    /// Makes every row's import digest stale, so that the next import with ``ImportOptions/skipsUnchangedRecords``
    /// decodes every record again (and records new digests).
    ///
    /// SQL of other programs clears the digests of what it changes by itself: triggers named `_codablestore_digest_…`
    /// do (on SQLite installed by the first import that skips records, on PostgreSQL with the schema). Call this after
    /// SQL that bypassed them: run on a connection with triggers turned off (`SQLITE_DBCONFIG_ENABLE_TRIGGER`, or
    /// PostgreSQL's `session_replication_role = replica`), in a PostgreSQL transaction that set `codablestore.quiet`,
    /// after the triggers were dropped, or that set `_digest` itself.
    public func forgetImportDigests() throws {
        try write { context in try RowStamps.forgetAll(on: context.connection) }
    }
}
