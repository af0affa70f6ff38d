import CodableStore
import Foundation
import Testing

/// What `Store.appliedMigrations()` lists, and what the metadata table keeps for older versions.
@Suite struct AppliedMigrationTests {
    @Test func theMigrationsThatRanAreListedWithTheirStepsAndTime() throws {
        let path = try MigrationStepTests.seeded()
        let start = Date()
        let store = try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        let end = Date()
        let applied = try store.appliedMigrations()
        #expect(applied.map(\.name) == ["rename Ticket to Bug", "score as text", "identity is repo and number"])
        #expect(applied.map(\.steps) == [
            ["renameEntity(Ticket to Bug)", "renameAttribute(title to Bug.name)"], ["changeType(of: Bug.score)"], ["changeIdentity(of: Bug)"],
        ])
        #expect(applied.allSatisfy { $0.kind == .ran })
        // One transaction applied them all, at one time (recorded to the microsecond).
        let time = try #require(applied[0].appliedAt)
        #expect(applied.allSatisfy { $0.appliedAt == time })
        #expect(time.timeIntervalSince1970 >= start.timeIntervalSince1970 - 0.000_001)
        #expect(time.timeIntervalSince1970 <= end.timeIntervalSince1970 + 0.000_001)
        #expect(applied[1].description == "score as text (ran at \(iso8601(time)): changeType(of: Bug.score))")

        // What older versions read is as it was: the names, in order.
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'migrations'")
            == #"["rename Ticket to Bug","score as text","identity is repo and number"]"#)
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'migration_history'") == """
            [{"appliedAt":"\(iso8601(time))","kind":"ran","name":"rename Ticket to Bug","steps":["renameEntity(Ticket to Bug)","renameAttribute(title to Bug.name)"]},\
            {"appliedAt":"\(iso8601(time))","kind":"ran","name":"score as text","steps":["changeType(of: Bug.score)"]},\
            {"appliedAt":"\(iso8601(time))","kind":"ran","name":"identity is repo and number","steps":["changeIdentity(of: Bug)"]}]
            """)

        // Another open with one more migration: the first three keep their record, the new one is added after them.
        let more = After.migrations + [Migration("clear scores", [.sql("UPDATE Bug SET score = ''")])]
        let reopened = try Store(path: path, entities: After.entities, options: .init(migrations: more))
        let again = try reopened.appliedMigrations()
        #expect(Array(again.prefix(3)) == applied)
        #expect(again.last?.name == "clear scores")
        #expect(again.last?.steps == ["sql(UPDATE Bug SET score = '')"])
        #expect(try #require(again.last?.appliedAt) >= time)
        // The first store reads what the second one applied.
        #expect(try store.appliedMigrations() == again)
    }

    @Test func aNewStoreRecordsItsMigrationsAsDoneWithoutRunningThem() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: After.entities, options: .init(migrations: After.migrations))
        let applied = try store.appliedMigrations()
        #expect(applied.map(\.name) == After.migrations.map(\.name))
        #expect(applied.allSatisfy { $0.kind == .recordedAtCreation && $0.appliedAt != nil })
        #expect(applied[2].steps == ["changeIdentity(of: Bug)"])
        #expect(try Store.inMemory(entities: After.entities).appliedMigrations() == [])
    }

    @Test func migrationsRecordedByNameOnlyAreListedAsSuch() throws {
        // A store migrated by a version that recorded names only.
        let path = try MigrationStepTests.seeded()
        _ = try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        try RawDatabase(path).execute("DELETE FROM _codablestore_metadata WHERE key = 'migration_history'")
        let more = After.migrations + [Migration("no steps", [])]
        let applied = try Store(path: path, entities: After.entities, options: .init(migrations: more)).appliedMigrations()
        #expect(applied.map(\.name) == more.map(\.name))
        #expect(applied.prefix(3).allSatisfy { $0.kind == .recordedByName && $0.steps.isEmpty && $0.appliedAt == nil })
        #expect(applied[0].description == "rename Ticket to Bug (recordedByName)")
        #expect(applied[3].kind == .ran && applied[3].steps == [] && applied[3].appliedAt != nil)
    }

    @Test func aFailedMigrationIsNotListed() throws {
        let path = try MigrationStepTests.seeded()
        let store = try Store(path: path, entities: Before.entities, options: .init(migrations: [Migration("first", [])]))
        _ = try? Store(path: path, entities: Before.entities, options: .init(migrations: [Migration("first", []), Migration("bad", [.sql("nonsense")])]))
        #expect(try store.appliedMigrations().map(\.name) == ["first"])
    }

    @Test func anUnreadableHistoryIsAnError() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Before.entities, options: .init(migrations: [Migration("first", [])]))
        try RawDatabase(path).execute("UPDATE _codablestore_metadata SET value = '{' WHERE key = 'migration_history'")
        let error = try #require(throws: StoreError.self) { try store.appliedMigrations() }
        #expect(error.code == .schemaMismatch)
        #expect(error.message.hasPrefix("the store's history of migrations cannot be read: "))
    }

    private func iso8601(_ date: Date) -> String {
        // The format of the record: UTC, fractional seconds to the microsecond without trailing zeros.
        let formatter = ISO8601DateFormatter()
        let seconds = date.timeIntervalSince1970
        var whole = seconds.rounded(.down)
        var micros = Int(((seconds - whole) * 1_000_000).rounded())
        if micros == 1_000_000 {
            whole += 1
            micros = 0
        }
        formatter.formatOptions = [.withInternetDateTime]
        var text = formatter.string(from: Date(timeIntervalSince1970: whole))
        if micros > 0 {
            var fraction = String(micros)
            fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text.insert(contentsOf: "." + fraction, at: text.index(before: text.endIndex))
        }
        return text
    }
}
