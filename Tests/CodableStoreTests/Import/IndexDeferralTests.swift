@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore
import CodableStoreSQLite
import Foundation
import IssuesModel
import Testing

/// Indexes of empty tables built once an import's rows are in (IndexDeferral): dropped inside the import's
/// transaction, made again with the statement that made them before it commits, before any statement that would
/// read a table without them, and back as they were when the import fails.
@Suite struct IndexDeferralTests {
    /// Name → SQL of the store's indexes (those with SQL: not the automatic indexes of UNIQUE constraints).
    static func indexes(_ path: String) throws -> [String: String] {
        let raw = try RawDatabase(path)
        var indexes: [String: String] = [:]
        for row in try raw.rows("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") {
            indexes[row[0]] = row[1]
        }
        return indexes
    }

    static func nonUnique(_ indexes: [String: String]) -> [String: String] {
        indexes.filter { !$0.value.hasPrefix("CREATE UNIQUE") }
    }

    static func integrity(_ path: String) throws -> [[String]] {
        try RawDatabase(path).rows("PRAGMA integrity_check")
    }

    @Test func anImportIntoEmptyTablesBuildsTheirIndexesOnceItsRowsAreIn() throws {
        let path = TestStore.temporaryPath()
        let statements = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: statements.observer))
        let before = try Self.indexes(path)
        let deferrable = Self.nonUnique(before)
        #expect(deferrable["GitIssue_user"] != nil)
        #expect(deferrable["GitIssue_labels_target"] != nil)
        let start = statements.all.count
        let report = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 300)), options: ImportTests.options(batchSize: 50))
        #expect(report.recordsImported == 300)

        let log = Array(statements.all[start...])
        let drops = log.indices.filter { log[$0].hasPrefix("DROP INDEX") }
        let builds = log.indices.filter { log[$0].hasPrefix("CREATE INDEX") }
        #expect(Set(drops.map { log[$0] }) == Set(deferrable.keys.map { "DROP INDEX \(quoteIdentifier($0))" }))
        #expect(Set(builds.map { log[$0] }) == Set(deferrable.values))
        #expect(builds.count == deferrable.count)
        let begin = try #require(log.firstIndex(of: "BEGIN IMMEDIATE TRANSACTION"))
        let firstInsert = try #require(log.firstIndex { $0.hasPrefix("INSERT") })
        let lastInsert = try #require(log.lastIndex { $0.hasPrefix("INSERT") })
        let commit = try #require(log.lastIndex(of: "COMMIT TRANSACTION"))
        #expect(drops.allSatisfy { $0 > begin && $0 < firstInsert })
        #expect(builds.allSatisfy { $0 > lastInsert && $0 < commit }, "\(builds.map { log[($0 - 3)...($0 + 3)] })")

        // The same indexes as before, consistent with their tables, and used.
        #expect(try Self.indexes(path) == before)
        #expect(try Self.integrity(path) == [["ok"]])
        let raw = try RawDatabase(path)
        let byIndex = try raw.rows("SELECT count(*) FROM GitIssue INDEXED BY GitIssue_user WHERE user IS NOT NULL")
        let byTable = try raw.rows("SELECT count(*) FROM GitIssue NOT INDEXED WHERE user IS NOT NULL")
        #expect(byIndex == byTable)
        #expect(byIndex != [["0"]])
    }

    @Test func tablesThatHoldRowsKeepTheirIndexes() throws {
        let path = TestStore.temporaryPath()
        let statements = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: statements.observer))
        _ = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 100)), options: ImportTests.options())
        let start = statements.all.count
        var generator = IssueDumpGenerator(seed: 11, duplicateFraction: 0.1)
        var bytes: [UInt8] = []
        generator.writeArray(count: 200) { bytes += $0 }
        let second = TestStore.temporaryPath("second.json")
        try Data(bytes).write(to: URL(fileURLWithPath: second))
        let report = try store.importJSON(GitIssue.self, from: .file(second), options: ImportTests.options(batchSize: 50))
        #expect(report.recordsImported == 200)
        let drops = statements.all[start...].filter { $0.hasPrefix("DROP INDEX") }
        // Only indexes of the tables no record fills (places and their owners) are deferred.
        #expect(!drops.isEmpty)
        #expect(drops.allSatisfy { !$0.contains("GitIssue") && !$0.contains("User") && !$0.contains("Topic") })
        #expect(try Self.integrity(path) == [["ok"]])
    }

    @Test func aFailedImportLeavesTheIndexesAsTheyWere() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let before = try Self.indexes(path)
        let dump = try ImportTests.dumpWithASyntaxError(after: 200)
        #expect(throws: ImportError.self) {
            try store.importJSON(GitIssue.self, from: .file(dump), options: ImportTests.options(batchSize: 50))
        }
        #expect(try Self.indexes(path) == before)
        #expect(try store.read { try $0.count(GitIssue.self) } == 0)
        // The connection prepares as before: nothing watches it any more.
        try store.withWriterConnection { connection in #expect(connection.willPrepare == nil) }
        let report = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 50)), options: ImportTests.options())
        #expect(report.recordsImported == 50)
        #expect(try Self.indexes(path) == before)
    }

    @Test(arguments: [false, true])
    func committedBatchesAndSyncsDeferNothing(syncing: Bool) throws {
        let path = TestStore.temporaryPath()
        let statements = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: statements.observer))
        var options = ImportTests.options(batchSize: 50)
        options.commitEveryBatch = !syncing
        _ = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 120)), options: options, syncing: syncing ? .all : nil)
        #expect(!statements.all.contains { $0.hasPrefix("DROP INDEX") })
    }

    /// A statement that would read a whole table, or make a temporary index, builds them before it is prepared;
    /// the import's own statements do not.
    @Test func aStatementThatWouldScanBuildsThemFirst() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.withWriterConnection { connection in
            // As an import has it: SQLite's own foreign key actions would read tables unseen (see Importer).
            try connection.execute(sql: "PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE")
            defer { try? connection.execute(sql: "ROLLBACK; PRAGMA foreign_keys = ON") }
            let deferral = try #require(try IndexDeferral.begin(on: connection))
            #expect(Set(deferral.deferred.map(\.name)).isSuperset(of: ["GitIssue_user", "GitIssue_labels_target"]))
            func present() throws -> Set<String> {
                Set(try connection.rows(sql: "SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { row in
                    if case .text(let name) = row[0] { name } else { nil }
                })
            }
            #expect(try !present().contains("GitIssue_user"))
            // Identity lookups, writes by row id, links by their key: no scan.
            for sql in [
                #"SELECT "_pk", "id" FROM "GitIssue" WHERE "id" IN (?, ?, ?)"#,
                #"SELECT "_pk", "id" FROM "GitIssue" WHERE "id" BETWEEN ? AND ?"#,
                #"UPDATE "GitIssue" SET "title" = ? WHERE "_pk" = ?"#,
                #"DELETE FROM "GitIssue" WHERE "_pk" = ?"#,
                #"INSERT INTO "GitIssue_labels" ("source", "target", "position") VALUES (?, ?, ?)"#,
                #"INSERT INTO "User" ("_pk", "id", "login") VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)"#,
                #"SELECT j."source", "Topic"."_pk" FROM "Topic" JOIN "GitIssue_labels" AS j ON j."target" = "Topic"."_pk" WHERE j."source" IN (?, ?)"#,
                "PRAGMA cache_size",
                #"SELECT 1 FROM "GitIssue" LIMIT 1"#,
                "SELECT name FROM sqlite_master WHERE type = 'index'",
            ] {
                _ = try connection.cachedStatement(sql: sql)
                #expect(deferral.isWatching, "\(sql)")
            }
            #expect(try !present().contains("GitIssue_user"))
            // The members of users' issues, by the foreign key: built first.
            _ = try connection.cachedStatement(sql: #"SELECT "user", "_pk" FROM "GitIssue" WHERE "user" IN (?, ?)"#)
            #expect(!deferral.isWatching)
            #expect(try present().isSuperset(of: ["GitIssue_user", "GitIssue_labels_target"]))
            let plan = try connection.rows(sql: #"EXPLAIN QUERY PLAN SELECT "user", "_pk" FROM "GitIssue" WHERE "user" IN (?, ?)"#)
            #expect(plan.contains { row in
                guard row.count > 3, case .text(let detail) = row[3] else { return false }
                return detail.hasPrefix("SEARCH GitIssue USING") && detail.contains("INDEX GitIssue_user (user=?)")
            }, "\(plan)")
            try deferral.build()  // a second build does nothing
        }
    }

    /// A join by the target side of a link table (the issues of a topic) would scan the links without their reverse
    /// index: it builds them too.
    @Test func aJoinByTheOtherSideBuildsThemFirst() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: issueEntities)
        try store.withWriterConnection { connection in
            try connection.execute(sql: "BEGIN IMMEDIATE")
            defer { try? connection.execute(sql: "ROLLBACK") }
            let deferral = try #require(try IndexDeferral.begin(on: connection))
            _ = try connection.cachedStatement(
                sql: #"SELECT j."target", "GitIssue"."_pk" FROM "GitIssue" JOIN "GitIssue_labels" AS j ON j."source" = "GitIssue"."_pk" WHERE j."target" IN (?, ?)"#)
            #expect(!deferral.isWatching)
        }
    }

    /// End to end: users who hold rows, and issues that do not. Decoding users with their issues loads the stored
    /// users' issues by the foreign key, whose index the import deferred: it is built before that query runs.
    @Test func aDecodingThatLoadsByAForeignKeyBuildsItsIndexFirst() throws {
        let path = TestStore.temporaryPath()
        let statements = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: statements.observer))
        try store.write { context in
            for id in 1...30 { try context.insert(User(id: id)) }
        }
        let records = (1...30).map { user in
            #"{"id": \#(user), "login": "u\#(user)", "issues": [{"id": \#(user * 10), "number": \#(user), "title": "t\#(user)"}, {"id": \#(user * 10 + 1), "number": \#(user), "title": "s"}]}"#
        }
        let dump = TestStore.temporaryPath("users.json")
        try Data(("[" + records.joined(separator: ",\n") + "]").utf8).write(to: URL(fileURLWithPath: dump))
        let start = statements.all.count
        let report = try store.importJSON(User.self, from: .file(dump), options: ImportTests.options(batchSize: 10))
        #expect(report.recordsImported == 30)
        let log = Array(statements.all[start...])
        let build = try #require(log.firstIndex(of: #"CREATE INDEX "GitIssue_user" ON "GitIssue" ("user")"#))
        let load = try #require(log.firstIndex { $0.contains(#"FROM "GitIssue" WHERE "user" IN"#) })
        #expect(build < load)
        #expect(log.filter { $0.hasPrefix("CREATE INDEX \"GitIssue_user\"") }.count == 1)
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT count(*) FROM GitIssue INDEXED BY GitIssue_user WHERE user IS NOT NULL") == [["60"]])
        #expect(try Self.integrity(path) == [["ok"]])
    }

    /// Under the skip policy a batch runs in a savepoint: a bad record rolls back the index a load of that batch had
    /// built, and the import makes it again before it commits.
    @Test func anIndexBuiltInABatchThatIsRolledBackIsBuiltAgain() throws {
        let path = TestStore.temporaryPath()
        let statements = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: statements.observer))
        let before = try Self.indexes(path)
        try store.write { context in
            for id in 1...30 { try context.insert(User(id: id)) }
        }
        let records = (1...30).map { user in
            user == 5
                ? #"{"id": "five", "issues": []}"#
                : #"{"id": \#(user), "issues": [{"id": \#(user * 10), "number": \#(user), "title": "t\#(user)"}]}"#
        }
        let dump = TestStore.temporaryPath("users.json")
        try Data(("[" + records.joined(separator: ",\n") + "]").utf8).write(to: URL(fileURLWithPath: dump))
        let start = statements.all.count
        let report = try store.importJSON(User.self, from: .file(dump), options: ImportTests.options(batchSize: 10, policy: .skip))
        #expect(report.recordsImported == 29)
        #expect(report.skippedRecords.map(\.index) == [4])
        let log = Array(statements.all[start...])
        // Built by the first batch's load, undone with the bad record, built again at the end.
        #expect(log.filter { $0.hasPrefix("CREATE INDEX \"GitIssue_user\"") }.count == 2)
        #expect(log.contains { $0.hasPrefix("ROLLBACK TRANSACTION TO SAVEPOINT") })
        #expect(try Self.indexes(path) == before)
        #expect(try Self.integrity(path) == [["ok"]])
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT count(*) FROM GitIssue INDEXED BY GitIssue_user WHERE user IS NOT NULL") == [["29"]])
    }
}
