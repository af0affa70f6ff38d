import Foundation
import IssuesModel
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// StampGuards: SQL of other programs (here a plain sqlite3 connection) clears the import digests of what it changes,
/// so that the next import, which skips unchanged records by default, restores the dump as a fresh import would.
@Suite struct DigestGuardTests {
    static let guardPrefix = "_codablestore_digest_"

    static func importDump(_ dump: String, into store: Store) throws -> ImportReport {
        try store.importJSON(GitIssue.self, from: .file(dump), options: ImportOptions(batchSize: 100, decoder: issueDecoder()))
    }

    static func freshContents(of dump: String) throws -> [[String]] {
        let fresh = TestStore.temporaryPath()
        _ = try Store(path: fresh, entities: issueEntities).importJSON(
            GitIssue.self, from: .file(dump), options: ImportOptions(skipsUnchangedRecords: false, decoder: issueDecoder()))
        return try ImportTests.contents(fresh)
    }

    /// A new store with a dump of `count` reference records (no repeated ids) imported, skipping by default.
    static func importedStore(count: Int) throws -> (path: String, store: Store, dump: String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: count, seed: 7, duplicates: 0)
        _ = try importDump(dump, into: store)
        return (path, store, dump)
    }

    static func guards(_ raw: RawDatabase) throws -> [String] {
        try raw.rows("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").map { $0[0] }
    }

    @Test func anImportThatSkipsRecordsGuardsItsDigests() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 100, seed: 7, duplicates: 0)
        let first = try Self.importDump(dump, into: store)
        #expect(first.unchangedRecordsSkipped == 0)
        let raw = try RawDatabase(path)

        // GitIssue's rows refer to users, and link topics.
        #expect(
            try Self.guards(raw) == [
                "delete_Topic", "delete_User", "link_delete_GitIssue_labels", "link_insert_GitIssue_labels",
                "link_update_GitIssue_labels", "update_GitIssue",
            ].map { Self.guardPrefix + $0 })
        // The import's own link INSERTs did not fire them: every row kept its digest.
        #expect(try raw.value("SELECT count(*) FROM GitIssue WHERE _digest IS NULL") == "0")
        // They are not triggers of the user's: the import keeps its row cache, and skips.
        let hasTriggers = try store.write { context in try context.storeConnection.hasTriggers() }
        #expect(!hasTriggers)
        let log = StatementLog()
        let observed = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        #expect(try Self.importDump(dump, into: observed).unchangedRecordsSkipped == 100)
        // Installed once: the next import makes no schema change.
        #expect(!log.all.contains { $0.contains("TRIGGER") }, "\(log.all.filter { $0.contains("TRIGGER") })")
    }

    @Test func foreignSQLClearsTheDigestsOfWhatItChanges() throws {
        let (path, store, dump) = try Self.importedStore(count: 200)
        let raw = try RawDatabase(path)
        func digestCleared(_ id: Int) throws -> Bool { try raw.value("SELECT _digest IS NULL FROM GitIssue WHERE id = \(id)") == "1" }
        let labelled = try raw.rows(
            "SELECT i.id FROM GitIssue i WHERE EXISTS (SELECT 1 FROM GitIssue_labels WHERE source = i._pk) ORDER BY i.id LIMIT 3"
        ).map { Int($0[0])! }
        try #require(labelled.count == 3)

        // An update of a column.
        try raw.execute("UPDATE GitIssue SET title = 'foreign' WHERE id = 1")
        #expect(try digestCleared(1))
        // A link removed, and one added.
        try raw.execute("DELETE FROM GitIssue_labels WHERE source = (SELECT _pk FROM GitIssue WHERE id = \(labelled[0]))")
        #expect(try digestCleared(labelled[0]))
        try raw.execute(
            """
            INSERT INTO GitIssue_labels (source, target) SELECT i._pk, t._pk FROM GitIssue i, Topic t WHERE i.id = \(labelled[1])
            AND t._pk NOT IN (SELECT target FROM GitIssue_labels WHERE source = i._pk) LIMIT 1
            """)
        #expect(try digestCleared(labelled[1]))
        // A label deleted with foreign keys on (its links go by cascade), a user deleted with them off (the sqlite3
        // shell's default: the issues keep a reference to a row that is gone).
        let topicIssues = try raw.rows(
            "SELECT i.id FROM GitIssue i JOIN GitIssue_labels j ON j.source = i._pk WHERE j.target = (SELECT target FROM GitIssue_labels WHERE source = (SELECT _pk FROM GitIssue WHERE id = \(labelled[2])) LIMIT 1)"
        ).map { Int($0[0])! }
        try raw.execute(
            "PRAGMA foreign_keys = ON; DELETE FROM Topic WHERE _pk = (SELECT target FROM GitIssue_labels WHERE source = (SELECT _pk FROM GitIssue WHERE id = \(labelled[2])) LIMIT 1); PRAGMA foreign_keys = OFF")
        #expect(try topicIssues.allSatisfy(digestCleared))
        let userIssues = try raw.rows("SELECT id FROM GitIssue WHERE user = (SELECT user FROM GitIssue WHERE id = 10)").map { Int($0[0])! }
        try raw.execute("DELETE FROM User WHERE _pk = (SELECT user FROM GitIssue WHERE id = 10)")
        #expect(try userIssues.allSatisfy(digestCleared))
        // An update that changes nothing the import wrote keeps a digest, and so does one of another row.
        #expect(try !digestCleared(150))
        try raw.execute("UPDATE GitIssue SET _digest = _digest + 1 WHERE id = 150")
        #expect(try !digestCleared(150))

        let cleared = Int(try raw.value("SELECT count(*) FROM GitIssue WHERE _digest IS NULL"))!
        #expect(cleared >= 4 + topicIssues.count && cleared < 60, "\(cleared)")
        let report = try Self.importDump(dump, into: store)
        // Each record whose row lost its digest is decoded; 150's digest no longer matches either.
        #expect(report.unchangedRecordsSkipped == 200 - cleared - 1)
        #expect(try ImportTests.contents(path) == Self.freshContents(of: dump))
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 200)
    }

    /// A trigger of the user's could change a row after its digest was written: such a store skips nothing, and the
    /// import fires its triggers.
    @Test func aStoreWithTriggersOfItsOwnDecodesEveryRecord() throws {
        let (path, store, dump) = try Self.importedStore(count: 50)
        let raw = try RawDatabase(path)
        try raw.execute("CREATE TRIGGER shout AFTER UPDATE OF title ON GitIssue BEGIN UPDATE GitIssue SET title = upper(title) WHERE _pk = NEW._pk; END")
        try raw.execute("UPDATE GitIssue SET title = 'changed'")
        let report = try Self.importDump(dump, into: store)
        #expect(report.unchangedRecordsSkipped == nil)
        #expect(try raw.value("SELECT count(*) FROM GitIssue WHERE title <> upper(title)") == "0")
    }

    /// Digests written before their guards existed (a store of an earlier version, or guards dropped) may be stale:
    /// the import forgets them, decodes every record once, and guards them from then on.
    @Test func digestsThatWereNotGuardedAreForgotten() throws {
        let (path, store, dump) = try Self.importedStore(count: 50)
        let raw = try RawDatabase(path)
        let title = try raw.value("SELECT title FROM GitIssue WHERE id = 1")
        for name in try Self.guards(raw) { try raw.execute("DROP TRIGGER \"\(name)\"") }
        try raw.execute("UPDATE GitIssue SET title = 'unguarded' WHERE id = 1")
        #expect(try raw.value("SELECT _digest IS NULL FROM GitIssue WHERE id = 1") == "0")
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 0)
        #expect(try raw.value("SELECT title FROM GitIssue WHERE id = 1") == title)
        #expect(try Self.guards(raw).count == 6)
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 50)
    }

    /// One guard dropped is enough to distrust the digests: a link removed meanwhile is restored.
    @Test func digestsMissingOneOfTheirGuardsAreForgotten() throws {
        let (path, store, dump) = try Self.importedStore(count: 50)
        let before = try ImportTests.contents(path)
        let raw = try RawDatabase(path)
        try raw.execute("DROP TRIGGER \"\(Self.guardPrefix)link_delete_GitIssue_labels\"")
        try raw.execute("DELETE FROM GitIssue_labels WHERE rowid IN (SELECT rowid FROM GitIssue_labels LIMIT 3)")
        #expect(try raw.value("SELECT count(*) FROM GitIssue WHERE _digest IS NULL") == "0")
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 0)
        #expect(try ImportTests.contents(path) == before)
        #expect(try Self.guards(raw).count == 6)
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 50)
    }

    /// The store's own writes keep digests right by themselves: its writer fires no triggers while the store has none
    /// but the guards. SQL run through `withWriterConnection` fires them as any program's does.
    @Test func theStoresOwnWritesDoNotFireTheGuards() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let dump = try UnchangedRecordsTests.dump(count: 100, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        try store.write { context in
            let issue = try #require(try context.object(GitIssue.self, identity: 5))
            issue.title = "edited"
            issue.labels = Array(issue.labels.dropFirst())
            try context.delete(try #require(try context.object(GitIssue.self, identity: 6)))
        }
        // SQLite traces each trigger program it runs as "-- TRIGGER name".
        func firedGuards() -> [String] { log.all.filter { $0.hasPrefix("-- TRIGGER") } }
        #expect(firedGuards().isEmpty, "\(firedGuards())")
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT _digest IS NULL FROM GitIssue WHERE id = 5") == "1")
        // A plain import (a commit per batch) writes no digests and keeps the others right.
        var plain = ImportOptions(commitEveryBatch: true, decoder: issueDecoder())
        plain.batchSize = 30
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: plain).unchangedRecordsSkipped == nil)
        #expect(try ImportTests.contents(path) == Self.freshContents(of: dump))
        #expect(firedGuards().isEmpty, "\(firedGuards())")
        // SQL of the user's on the writer connection.
        try store.withWriterConnection { connection in
            try connection.execute(sql: "UPDATE GitIssue SET comments = -1 WHERE id = 7")
        }
        #expect(firedGuards() == ["-- TRIGGER \(Self.guardPrefix)update_GitIssue"], "\(log.all.suffix(3))")
        #expect(try raw.value("SELECT _digest IS NULL FROM GitIssue WHERE id = 7") == "1")
        let report = try Self.importDump(dump, into: store)
        // Issues 5 and 6 were written by the plain import (without digests), 7 by that SQL.
        #expect(report.unchangedRecordsSkipped == 97)
        #expect(try ImportTests.contents(path) == Self.freshContents(of: dump))
    }

    /// A trigger of the user's, made by another program, fires on the store's next write.
    @Test func aTriggerMadeMeanwhileFiresOnTheStoresNextWrite() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        _ = try Self.importDump(try UnchangedRecordsTests.dump(count: 20, seed: 7, duplicates: 0), into: store)
        try store.write { context in try #require(try context.object(GitIssue.self, identity: 1)).title = "quiet" }
        let raw = try RawDatabase(path)
        try raw.execute("CREATE TRIGGER shout AFTER UPDATE OF title ON GitIssue BEGIN UPDATE GitIssue SET title = upper(title) WHERE _pk = NEW._pk; END")
        try store.write { context in try #require(try context.object(GitIssue.self, identity: 1)).title = "loud" }
        #expect(try raw.value("SELECT title FROM GitIssue WHERE id = 1") == "LOUD")
        try raw.execute("DROP TRIGGER shout")
        try store.write { context in try #require(try context.object(GitIssue.self, identity: 1)).title = "quiet again" }
        #expect(try raw.value("SELECT title FROM GitIssue WHERE id = 1") == "quiet again")
    }
}

extension DigestGuardTests {
    /// A migration drops the guards before it changes tables (their bodies name tables and columns) and forgets every
    /// digest; the next import guards them again.
    @Test func aMigrationDropsTheGuardsAndTheNextImportGuardsAgain() throws {
        let path = TestStore.temporaryPath()
        let dump = try UnchangedRecordsTests.dump(count: 50, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: try Store(path: path, entities: issueEntities))
        let raw = try RawDatabase(path)
        #expect(try Self.guards(raw).count == 6)
        let migrated = try Store(path: path, entities: issueEntities + UnchangedRecordLinkTests.entities)
        #expect(try Self.guards(raw).isEmpty)
        #expect(try Self.importDump(dump, into: migrated).unchangedRecordsSkipped == 0)
        #expect(try Self.guards(raw).count == 6)
        #expect(try Self.importDump(dump, into: migrated).unchangedRecordsSkipped == 50)
    }
}
