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
        let storage = self.storage
        let report = try withWriterConnection { connection in
            try Importer(connection: connection, storage: storage, mapping: mapping, options: options).run(source)
        }
        notifyObservers(Set(model.mappings.filter { report.entities[$0.name] != nil }.map(\.index)))
        return report
    }
}
