import CodableStoreCore
import Foundation

/// What an import did: records read, imported and skipped, and rows written per entity.
///
/// Encoding shape (`codable-store import --json`): an object with the fields below; `entities` maps entity
/// names to their counts; `skippedRecords` lists each skipped record.
public struct ImportReport: Sendable, Codable, Equatable {
    /// Rows written for one entity (see `CodableStoreCore/EntityCounts`).
    public typealias EntityCounts = CodableStoreCore.EntityCounts

    /// What a sync import (`Store/importJSON(_:from:options:syncing:)`) found and deleted.
    public struct Sync: Sendable, Codable, Equatable {
        /// The synced entity.
        public var entity: String
        /// Objects of the entity stored before the import whose identity the dump has (in the scope or not).
        public var present: Int
        /// Objects of the scope deleted because the dump does not have them (with the objects their delete rules
        /// cascaded to, they are counted in `EntityCounts/deleted` of their entity).
        public var deleted: Int
        /// Why nothing was deleted although the import succeeded (a record was skipped); nil when deletions ran.
        public var withheldReason: String?

        public init(entity: String, present: Int = 0, deleted: Int = 0, withheldReason: String? = nil) {
            self.entity = entity
            self.present = present
            self.deleted = deleted
            self.withheldReason = withheldReason
        }
    }

    /// A record left out under the skip policy.
    public struct SkippedRecord: Sendable, Codable, Equatable {
        /// The record's index in the dump (0-based).
        public var index: Int
        /// Where the record starts; for a JSON Lines line that is not valid JSON, where its syntax error is.
        public var byteOffset: Int
        public var line: Int
        public var column: Int
        /// Where in the record decoding failed (`[41].user.id`), if it did.
        public var codingPath: String?
        /// Why.
        public var reason: String
    }

    /// Where the CPU time went, in seconds: the import runs up to three threads, so the parts may add up to more
    /// than ``duration`` (up to the number of cores times it). A part close to ``duration`` is the thread that
    /// bounds the import; a part far below it waited for the others.
    public struct CPUTime: Sendable, Codable, Equatable {
        /// Reading the input and parsing it into records (the reader thread).
        public var reading = 0.0
        /// Decoding records into objects (the calling thread), and the final commit. Includes SQLite's work when
        /// no writer thread ran (the skip policy, or a commit per batch).
        public var decoding = 0.0
        /// SQLite's work on the writer thread (the stop policy in one transaction); 0 when there was none.
        public var writing = 0.0

        public init(reading: Double = 0, decoding: Double = 0, writing: Double = 0) {
            self.reading = reading
            self.decoding = decoding
            self.writing = writing
        }
    }

    /// Wall-clock seconds the decoding thread spent waiting for the other two, by what it waited for, and the time
    /// the indexes deferred until the rows were in took to build. With ``cpu`` it tells where an import's time went:
    /// decoding's CPU time plus these waits is most of ``duration``; the rest is the time the decoding thread was
    /// ready to run while the other threads had the cores.
    public struct Waits: Sendable, Codable, Equatable {
        /// For the reader to hand over the next batch: reading or parsing the input (or the input itself, a slow
        /// pipe) was slower than decoding.
        public var input = 0.0
        /// For the writer thread to look up a batch's identities (it was still writing the batches before).
        public var lookups = 0.0
        /// For the writer thread to take a batch's writes (the one before still waited), to write the batch before
        /// (whose objects are let go only once they are written), or to run a query of the decoder.
        public var writing = 0.0
        /// Building what the import deferred on tables that were empty when it began (see the article "Decoding API
        /// dumps" of CodableStoreCore), after the last batch, while nothing else runs: SQLite's non-unique indexes;
        /// on PostgreSQL, loading alone, the non-unique indexes and the foreign keys, each checked with one query.
        public var indexBuilds = 0.0

        public init(input: Double = 0, lookups: Double = 0, writing: Double = 0, indexBuilds: Double = 0) {
            self.input = input
            self.lookups = lookups
            self.writing = writing
            self.indexBuilds = indexBuilds
        }
    }

    public var recordsRead = 0
    public var recordsImported = 0
    public var recordsSkipped = 0
    public var bytesRead = 0
    /// Per entity name.
    public var entities: [String: EntityCounts] = [:]
    public var skippedRecords: [SkippedRecord] = []
    /// References kept by the `StoreDecoder/UnknownReferencePolicy/deferred` policy whose object never
    /// arrived, per destination entity; nil when there are none.
    public var unresolvedReferences: [String: Int]?
    /// Those references themselves: which object refers, through which relationship, to which missing identity, in
    /// the order of `Context/listUnresolvedReferences(limit:)`. The first
    /// ``ImportOptions/unresolvedReferenceListLimit`` (100 by default) of them; ``unresolvedReferences`` counts them
    /// all. Nil when there are none.
    public var unresolvedReferenceList: [UnresolvedReference]?
    /// Wall-clock seconds.
    public var duration = 0.0
    /// CPU seconds per part of the import; nil in a report that was not made by an import (one decoded from
    /// JSON written before this field existed).
    public var cpu: CPUTime?
    /// Where the decoding thread waited; nil in a report that was not made by an import (one decoded from JSON written
    /// before this field existed).
    public var waits: Waits?
    /// What a sync import deleted; nil for an import without a sync scope.
    public var sync: Sync?
    /// Whether the import held the store for itself, as ``ImportOptions/exclusiveAccess`` asked: false when another
    /// connection had the store open (or the backend cannot), so that it ran in WAL mode; on PostgreSQL, whether it
    /// held its empty tables and made their foreign keys and non-unique indexes after the load. Nil when it was not
    /// asked.
    public var exclusiveAccess: Bool?
    /// Records skipped without decoding because their rows were stored exactly as they would write them (see
    /// ``ImportOptions/skipsUnchangedRecords``; they count as unchanged in ``entities``); nil when the import did
    /// not look for them.
    public var unchangedRecordsSkipped: Int?
    /// Transactions rolled back and run again because another writer's transaction ran at the same moment (a
    /// deadlock, an identity both inserted at once; PostgreSQL only, see `Store/Options/maximumWriteAttempts`): the
    /// whole import in one transaction, or a batch when batches are committed. Nil when none was.
    public var retries: Int?

    public var recordsPerSecond: Double { duration > 0 ? Double(recordsRead) / duration : 0 }
    public var megabytesPerSecond: Double { duration > 0 ? Double(bytesRead) / 1_048_576 / duration : 0 }

    public init() {}

    /// A short human-readable summary.
    public var summary: String {
        var lines = [
            "read \(recordsRead) records (\(String(format: "%.1f", Double(bytesRead) / 1_048_576)) MiB) in "
                + String(format: "%.2f s: %.0f records/s, %.1f MiB/s", duration, recordsPerSecond, megabytesPerSecond),
            "imported \(recordsImported), skipped \(recordsSkipped)"
                + (unchangedRecordsSkipped.map { ", \($0) unchanged record\($0 == 1 ? "" : "s") not decoded" } ?? ""),
        ]
        if let cpu {
            lines.append(
                String(format: "CPU: reading %.2f s, decoding %.2f s, writing %.2f s", cpu.reading, cpu.decoding, cpu.writing))
        }
        if let waits {
            lines.append(
                String(
                    format: "decoding waited %.2f s for input, %.2f s for lookups, %.2f s for writing; index builds %.2f s",
                    waits.input, waits.lookups, waits.writing, waits.indexBuilds))
        }
        for name in entities.keys.sorted() {
            let counts = entities[name]!
            lines.append(
                "  \(name): \(counts.inserted) inserted, \(counts.updated) updated, \(counts.unchanged) unchanged"
                    + (counts.deleted > 0 ? ", \(counts.deleted) deleted" : ""))
        }
        switch exclusiveAccess {
        case true?: lines.append("the store was held exclusively (SQLite: a rollback journal; PostgreSQL: its tables, indexes and keys made after the load)")
        case false?: lines.append("exclusive access not granted (another connection had the store open; PostgreSQL: or its tables, or they held rows): imported beside it")
        case nil: break
        }
        if let retries {
            lines.append("\(retries) transaction\(retries == 1 ? "" : "s") run again after meeting another writer's")
        }
        if let sync {
            lines.append(
                "sync of \(sync.entity): \(sync.withheldReason ?? "\(sync.deleted) deleted that the dump no longer has")")
        }
        for (name, count) in (unresolvedReferences ?? [:]).sorted(by: { $0.key < $1.key }) {
            lines.append("  \(count) reference\(count == 1 ? "" : "s") to \(name) never found \(count == 1 ? "its" : "their") object")
        }
        let listed = unresolvedReferenceList ?? []
        for reference in listed { lines.append("    \(reference)") }
        let unlisted = (unresolvedReferences ?? [:]).values.reduce(0, +) - listed.count
        if !listed.isEmpty, unlisted > 0 { lines.append("    and \(unlisted) more") }
        for record in skippedRecords {
            lines.append("  skipped record \(record.index) (line \(record.line), column \(record.column), byte \(record.byteOffset))"
                + (record.codingPath.map { " at \($0)" } ?? "") + ": \(record.reason)")
        }
        return lines.joined(separator: "\n")
    }
}
