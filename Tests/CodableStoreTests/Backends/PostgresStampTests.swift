import CodableStore
import Foundation
import IssuesModel
import Testing

@testable import CodableStorePostgres

/// Row stamps on PostgreSQL: a re-import skips the records whose rows still hold what they wrote, and SQL of any other
/// session (here the store's writer connection outside the store's transactions, which is one) clears the stamps of
/// what it changes, so that the next import restores the dump as a fresh import would. Needs the server of
/// `Scripts/with-postgres`.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs CODABLESTORE_POSTGRES_URL (Scripts/with-postgres)"))
struct PostgresStampTests {
    static let guardPrefix = "_codablestore_digest_"

    static func importDump(_ dump: String, into store: Store, skipping: Bool = true) throws -> ImportReport {
        try store.importJSON(
            GitIssue.self, from: .file(dump), options: ImportOptions(batchSize: 100, skipsUnchangedRecords: skipping, decoder: issueDecoder()))
    }

    /// Everything the store holds, as text (as `ImportTests.contents` on SQLite; a link's place in its issue's list
    /// rather than its stored position, which a list keeps relative).
    static func contents(_ store: Store) throws -> [[String]] {
        try storedRows(store, #"SELECT id, number, title, state, "createdAt", comments, score, body FROM "GitIssue" ORDER BY id"#)
            + storedRows(store, #"SELECT i.id, u.id, u.login FROM "GitIssue" i JOIN "User" u ON u._pk = i."user" ORDER BY i.id"#)
            + storedRows(store, #"SELECT id, name FROM "Topic" ORDER BY id"#)
            + storedRows(store, """
                SELECT i.id, t.id, row_number() OVER (PARTITION BY j.source ORDER BY j.position, j._row)
                FROM "GitIssue_labels" j JOIN "GitIssue" i ON i._pk = j.source
                JOIN "Topic" t ON t._pk = j.target ORDER BY i.id, t.id
                """)
    }

    static func freshContents(of dump: String) throws -> [[String]] {
        let fresh = try Backend.postgres.makeStore(entities: issueEntities)
        _ = try importDump(dump, into: fresh, skipping: false)
        return try contents(fresh)
    }

    static func guards(_ store: Store) throws -> [String] {
        try storedRows(
            store,
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal "
                + "AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) ORDER BY t.tgname"
        ).map { $0[0] }
    }

    /// SQL of another session: the store's writer connection, outside the store's own transactions.
    static func execute(_ store: Store, _ sql: String) throws {
        try store.withWriter { connection in try connection.execute(sql: sql) }
    }

    static func digestCleared(_ store: Store, _ id: Int) throws -> Bool {
        try storedRows(store, #"SELECT "_digest" IS NULL FROM "GitIssue" WHERE id = \#(id)"#) == [["1"]]
            || storedRows(store, #"SELECT "_digest" IS NULL FROM "GitIssue" WHERE id = \#(id)"#) == [["true"]]
    }

    static func clearedCount(_ store: Store) throws -> Int {
        Int(try storedRows(store, #"SELECT count(*) FROM "GitIssue" WHERE "_digest" IS NULL"#)[0][0])!
    }

    @Test func aReimportSkipsTheRecordsItsRowsStillHold() throws {
        let statements = Locked<[String]>([])
        var options = Store.Options()
        options.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        let store = try Backend.postgres.makeStore(entities: issueEntities, options: options)
        let dump = try UnchangedRecordsTests.dump(count: 200, seed: 7, duplicates: 0)
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 0)
        // Made with the schema, for every entity whose rows hold all they are (not the users', whose issues are
        // stored in the issues' rows), and the link table of the issues' topics.
        let guards = try Self.guards(store)
        #expect(guards == ["link_GitIssue_labels", "update_GitIssue", "update_Membership", "update_Place", "update_Topic"].map { Self.guardPrefix + $0 }, "\(guards)")
        // The import's own COPYs and updates fired none of them: every row kept its stamp.
        #expect(try Self.clearedCount(store) == 0)
        // They are not triggers of the user's.
        #expect(try store.withWriter { try $0.hasTriggers() } == false)

        statements.withLock { $0.removeAll() }
        let report = try Self.importDump(dump, into: store)
        #expect(report.unchangedRecordsSkipped == 200)
        #expect(report.recordsImported == 200)
        let run = statements.withLock { $0 }
        // Nothing written to the issues or their links, and no schema change.
        #expect(!run.contains { $0.hasPrefix(#"UPDATE "GitIssue""#) || $0.hasPrefix(#"COPY "GitIssue"#) })
        #expect(!run.contains { $0.contains("TRIGGER") || $0.contains("FUNCTION") }, "\(run.filter { $0.contains("TRIGGER") })")
        #expect(try Self.contents(store) == Self.freshContents(of: dump))
    }

    @Test func sqlOfAnotherSessionClearsTheStampsOfWhatItChanges() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 200, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        let labelled = try storedRows(
            store,
            #"SELECT i.id FROM "GitIssue" i WHERE (SELECT count(*) FROM "GitIssue_labels" WHERE source = i._pk) >= 2 ORDER BY i.id LIMIT 4"#
        ).map { Int($0[0])! }
        try #require(labelled.count == 4)

        // An update of a column.
        try Self.execute(store, #"UPDATE "GitIssue" SET title = 'foreign' WHERE id = 1"#)
        #expect(try Self.digestCleared(store, 1))
        // A link removed, one added, an issue's links in the opposite order.
        try Self.execute(store, #"DELETE FROM "GitIssue_labels" WHERE source = (SELECT _pk FROM "GitIssue" WHERE id = \#(labelled[0]))"#)
        #expect(try Self.digestCleared(store, labelled[0]))
        try Self.execute(
            store,
            #"""
            INSERT INTO "GitIssue_labels" (source, target) SELECT i._pk, t._pk FROM "GitIssue" i, "Topic" t WHERE i.id = \#(labelled[1])
            AND t._pk NOT IN (SELECT target FROM "GitIssue_labels" WHERE source = i._pk) LIMIT 1
            """#)
        #expect(try Self.digestCleared(store, labelled[1]))
        try Self.execute(
            store, #"UPDATE "GitIssue_labels" SET position = 1000 - position WHERE source = (SELECT _pk FROM "GitIssue" WHERE id = \#(labelled[3]))"#)
        #expect(try Self.digestCleared(store, labelled[3]))
        // A label deleted: its links go by the foreign keys' cascade, which the link guard sees.
        let topic = #"(SELECT target FROM "GitIssue_labels" WHERE source = (SELECT _pk FROM "GitIssue" WHERE id = \#(labelled[2])) LIMIT 1)"#
        let topicIssues = try storedRows(
            store, #"SELECT i.id FROM "GitIssue" i JOIN "GitIssue_labels" j ON j.source = i._pk WHERE j.target = \#(topic)"#
        ).map { Int($0[0])! }
        try #require(!topicIssues.isEmpty)
        try Self.execute(store, #"DELETE FROM "Topic" WHERE _pk = \#(topic)"#)
        #expect(try topicIssues.allSatisfy { try Self.digestCleared(store, $0) })
        // A user deleted: the issues' references are cleared by ON DELETE SET NULL, an update the issues' guard sees.
        let userIssues = try storedRows(store, #"SELECT id FROM "GitIssue" WHERE "user" = (SELECT "user" FROM "GitIssue" WHERE id = 10)"#)
            .map { Int($0[0])! }
        try Self.execute(store, #"DELETE FROM "User" WHERE _pk = (SELECT "user" FROM "GitIssue" WHERE id = 10)"#)
        #expect(try userIssues.allSatisfy { try Self.digestCleared(store, $0) })
        // An update that writes the stamp keeps it (what it writes is the stamp), and other rows keep theirs.
        #expect(try !Self.digestCleared(store, 150))
        try Self.execute(store, #"UPDATE "GitIssue" SET "_digest" = "_digest" + 1 WHERE id = 150"#)
        #expect(try !Self.digestCleared(store, 150))

        let cleared = try Self.clearedCount(store)
        #expect(cleared >= 5 + topicIssues.count && cleared < 60, "\(cleared)")
        let report = try Self.importDump(dump, into: store)
        // Each record whose row lost its stamp is decoded; 150's stamp no longer matches either.
        #expect(report.unchangedRecordsSkipped == 200 - cleared - 1)
        let (stored, fresh) = (try Self.contents(store), try Self.freshContents(of: dump))
        #expect(stored == fresh, "\(stored.count) \(fresh.count) \(zip(stored, fresh).filter { $0 != $1 }.prefix(3))")
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 200)
    }

    /// The store's own writes fire no guard (its transactions are quiet), and keep stamps right themselves: an update
    /// of a row clears its stamp, a link changed from the other side clears the stamp of the issue it belongs to, and
    /// an update by predicate clears the stamps of what it changes.
    @Test func theStoresOwnWritesClearTheStampsOfWhatTheyChange() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 100, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        let labelled = try storedRows(
            store, #"SELECT i.id FROM "GitIssue" i WHERE i.id > 2 AND EXISTS (SELECT 1 FROM "GitIssue_labels" WHERE source = i._pk) ORDER BY i.id LIMIT 1"#
        ).map { Int($0[0])! }
        try #require(labelled.count == 1 && labelled[0] < 90)
        try store.write { context in
            try #require(try context.object(GitIssue.self, identity: 2)).title = "edited"
            // The topic's side: the issue's row is not written, its stamp is cleared.
            let issue = try #require(try context.object(GitIssue.self, identity: labelled[0]))
            for topic in issue.labels { topic.issues.remove(issue) }
        }
        #expect(try Self.digestCleared(store, 2))
        #expect(try Self.digestCleared(store, labelled[0]))
        #expect(try Self.clearedCount(store) == 2)
        let changed = try store.write { context in try context.updateAll(GitIssue.self, where: \.id > 90, set: [.set(\.comments, to: 0)]) }
        #expect(changed == 10)
        #expect(try Self.clearedCount(store) == 12)
        let report = try Self.importDump(dump, into: store)
        #expect(report.unchangedRecordsSkipped == 88)
        #expect(try Self.contents(store) == Self.freshContents(of: dump))
    }

    /// A statement that a trigger runs is another program's change, even inside the store's own transaction: a
    /// trigger of the user's may change a row after its stamp was written. Such a store skips nothing.
    @Test func aStoreWithTriggersOfItsOwnDecodesEveryRecord() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 50, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        try Self.execute(
            store,
            #"""
            CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN
            UPDATE "GitIssue" SET title = upper(title) WHERE _pk = NEW._pk AND title <> upper(title); RETURN NULL; END$$
            """#)
        try Self.execute(store, #"CREATE TRIGGER shout AFTER UPDATE OF title ON "GitIssue" FOR EACH ROW EXECUTE FUNCTION shout()"#)
        #expect(try store.withWriter { try $0.hasTriggers() })
        try Self.execute(store, #"UPDATE "GitIssue" SET title = 'changed'"#)
        #expect(try Self.clearedCount(store) == 50)
        let report = try Self.importDump(dump, into: store)
        #expect(report.unchangedRecordsSkipped == nil)
        #expect(try storedRows(store, #"SELECT count(*) FROM "GitIssue" WHERE title <> upper(title)"#) == [["0"]])
        // The import's updates of titles fired the user's trigger, whose updates cleared the stamps.
        #expect(try Self.clearedCount(store) == 50)
    }

    /// A guard dropped by someone may have missed changes: the next import forgets every stamp (decodes every
    /// record), makes the guard again, and the one after skips again.
    @Test func aGuardDroppedOrChangedMakesTheNextImportDecodeEveryRecord() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 60, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        let guards = try Self.guards(store)
        try Self.execute(store, #"DROP TRIGGER "\#(Self.guardPrefix)link_GitIssue_labels" ON "GitIssue_labels""#)
        try Self.execute(store, #"DELETE FROM "GitIssue_labels" WHERE source = (SELECT _pk FROM "GitIssue" WHERE id = 3)"#)
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 0)
        #expect(try Self.guards(store) == guards)
        #expect(try Self.contents(store) == Self.freshContents(of: dump))
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 60)

        // Dropped, then found by the store's next opening, which makes it again: the stamps are forgotten there.
        try Self.execute(store, #"DROP TRIGGER "\#(Self.guardPrefix)update_GitIssue" ON "GitIssue""#)
        try Self.execute(store, #"UPDATE "GitIssue" SET title = 'unguarded' WHERE id = 4"#)
        let reopened = try Backend.postgres.reopen(store, entities: issueEntities)
        #expect(try Self.guards(reopened) == guards)
        #expect(try Self.importDump(dump, into: reopened).unchangedRecordsSkipped == 0)
        #expect(try Self.contents(reopened) == Self.freshContents(of: dump))
        #expect(try Self.importDump(dump, into: reopened).unchangedRecordsSkipped == 60)

        // Disabled is changed too.
        try Self.execute(store, #"ALTER TABLE "GitIssue" DISABLE TRIGGER "\#(Self.guardPrefix)update_GitIssue""#)
        try Self.execute(store, #"UPDATE "GitIssue" SET title = 'unseen' WHERE id = 5"#)
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 0)
        #expect(try Self.contents(store) == Self.freshContents(of: dump))
        #expect(try Self.importDump(dump, into: store).unchangedRecordsSkipped == 60)
    }

    /// Two stores that find the same guard missing at once: the second waits for the first to make it, then finds it
    /// made. (Two `CREATE OR REPLACE FUNCTION` of one function side by side: PostgreSQL fails the second with "tuple
    /// concurrently updated" once the first commits.)
    @Test func twoStoresRemakingAMissingGuardAtOnceDoNotCollide() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 20, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        let guards = try Self.guards(store)
        let other = try Backend.postgres.reopen(store, entities: issueEntities)
        try Self.execute(store, #"DROP TRIGGER "\#(Self.guardPrefix)update_GitIssue" ON "GitIssue""#)
        let model = store.model
        let firstMade = DispatchSemaphore(value: 0)
        let secondDone = DispatchSemaphore(value: 0)
        let second = Locked<Result<Bool, any Error>?>(nil)
        DispatchQueue.global().async {
            firstMade.wait()
            let result = Result {
                try other.withWriter { connection in
                    try connection.beginWriteTransaction()
                    do {
                        let intact = try PostgresStampGuards.install(model, guarding: true, on: connection)
                        try connection.commit()
                        return intact
                    } catch {
                        connection.rollbackIgnoringErrors()
                        throw error
                    }
                }
            }
            second.withLock { $0 = result }
            secondDone.signal()
        }
        try store.withWriter { connection in
            try connection.beginWriteTransaction()
            #expect(try PostgresStampGuards.install(model, guarding: true, on: connection) == false)
            firstMade.signal()
            Thread.sleep(forTimeInterval: 0.5)  // the other store finds the guard missing meanwhile, and waits
            try connection.commit()
        }
        secondDone.wait()
        let result = try #require(second.withLock { $0 })
        // The second saw the guard missing too (its stamps may be stale), and made nothing twice.
        #expect(try result.get() == false)
        #expect(try Self.guards(store) == guards)
        #expect(try other.withWriter { connection in try PostgresStampGuards.areCurrent(model, on: connection) })
    }

    /// A migration changes what a record writes: every stamp is forgotten, and the new tables get their guards.
    @Test func aMigratedStoreDecodesEveryRecordOnceAndGuardsItsNewTables() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 30, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store)
        let migrated = try Backend.postgres.reopen(store, entities: issueEntities + [CopyPlaylist.self, CopySong.self])
        let guards = try Self.guards(migrated)
        #expect(
            guards.filter { $0.contains("Copy") }
                == ["link_CopyPlaylist_songs", "update_CopyPlaylist", "update_CopySong"].map { Self.guardPrefix + $0 }, "\(guards)")
        #expect(try Self.importDump(dump, into: migrated).unchangedRecordsSkipped == 0)
        #expect(try Self.importDump(dump, into: migrated).unchangedRecordsSkipped == 30)
    }

    /// A store made before PostgreSQL kept stamps (no `_digest` column, no guards) gets both when opened.
    @Test func aStoreMadeBeforeStampsGetsThemOnOpen() throws {
        let store = try Backend.postgres.makeStore(entities: issueEntities)
        let dump = try UnchangedRecordsTests.dump(count: 40, seed: 7, duplicates: 0)
        _ = try Self.importDump(dump, into: store, skipping: false)
        try store.withWriter { connection in try PostgresStampGuards.dropAll(on: connection) }
        for table in ["GitIssue", "User", "Topic", "Membership", "Place"] {
            try Self.execute(store, #"ALTER TABLE "\#(table)" DROP COLUMN "_digest""#)
        }
        let reopened = try Backend.postgres.reopen(store, entities: issueEntities)
        let guards = try Self.guards(reopened)
        #expect(guards.count == 5, "\(guards)")
        #expect(try storedRows(reopened, #"SELECT count(*) FROM "GitIssue" WHERE "_digest" IS NULL"#) == [["40"]])
        #expect(try Self.importDump(dump, into: reopened).unchangedRecordsSkipped == 0)
        #expect(try Self.importDump(dump, into: reopened).unchangedRecordsSkipped == 40)
        #expect(try Self.contents(reopened) == Self.freshContents(of: dump))
    }
}
