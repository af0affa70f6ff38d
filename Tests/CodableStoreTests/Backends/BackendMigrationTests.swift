import CodableStore
import CodableStorePostgres
import Foundation
import Testing

/// Migrations on every backend: what is recorded and readable, and how a migration that cannot be applied fails.
@Suite struct BackendMigrationTests {
    @Test(arguments: Backend.available)
    func appliedMigrationsAreListedInTheOrderTheyWereApplied(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: [WidgetsBefore.Widget.self], options: .init(migrations: [Migration("z", [])]))
        _ = try backend.reopen(store, entities: [WidgetsBefore.Widget.self], options: .init(migrations: [Migration("z", []), Migration("a", [])]))
        _ = try backend.reopen(
            store, entities: [WidgetsBefore.Widget.self], options: .init(migrations: [Migration("z", []), Migration("a", []), Migration("m", [])]))
        let applied = try store.appliedMigrations()
        #expect(applied.map(\.name) == ["z", "a", "m"])
        #expect(applied.map(\.kind) == [.recordedAtCreation, .ran, .ran])
        #expect(applied.allSatisfy { $0.steps.isEmpty && $0.appliedAt != nil })
        #expect(try storedRows(store, #"SELECT "value" FROM "_codablestore_metadata" WHERE "key" = 'migrations'"#) == [[#"["z","a","m"]"#]])
    }

    @Test(arguments: Backend.available)
    func aMigrationWithStepsRunsOnSQLiteAndIsRefusedNamingItsStepOnPostgreSQL(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: [WidgetsBefore.Widget.self])
        try store.write { try $0.insert(WidgetsBefore.Widget(id: 1, code: "a")) }
        // A migration without steps before it: on PostgreSQL, it is not recorded either (nothing was changed).
        let migrations = [Migration("noted", []), Migration("fix codes", [.sql(#"UPDATE "Widget" SET "code" = 'b'"#)])]
        switch backend {
        case .sqlite:
            _ = try backend.reopen(store, entities: [WidgetsBefore.Widget.self], options: .init(migrations: migrations))
            #expect(try storedRows(store, #"SELECT "code" FROM "Widget""#) == [["b"]])
            #expect(try store.appliedMigrations().map(\.name) == ["noted", "fix codes"])
        case .postgres:
            let error = try #require(throws: StoreError.self) {
                try backend.reopen(store, entities: [WidgetsBefore.Widget.self], options: .init(migrations: migrations))
            }
            #expect(error.code == .unsupported)
            #expect(error.description == #"StoreError.unsupported: migration 'fix codes', step 1 (sql(UPDATE "Widget" SET "code" = 'b')) cannot run: migration steps run on SQLite stores only for now; make the migration's changes with SQL on the server, then open the store with its steps removed; nothing was changed"#)
            #expect(error.migration == "fix codes" && error.migrationStep == 1)
            #expect(try storedRows(store, #"SELECT "code" FROM "Widget""#) == [["a"]])
            #expect(try store.appliedMigrations() == [])
        }
    }

    @Test(arguments: Backend.available)
    func aNewUniqueIndexOverDuplicatesNamesThem(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: [WidgetsBefore.Widget.self])
        try store.write { context in
            for (id, code) in [(1, "a"), (2, "b"), (3, "a")] { try context.insert(WidgetsBefore.Widget(id: id, code: code)) }
        }
        let error = try #require(throws: StoreError.self) { try backend.reopen(store, entities: [WidgetsAfter.Widget.self]) }
        #expect(error.description == "StoreError.schemaMismatch: cannot add the unique index Widget_index_code to Widget: rows share code = 'a' (2 rows); remove the duplicates first (a Migration step); nothing was changed")
        #expect(try storedRows(store, #"SELECT "id", "code" FROM "Widget" ORDER BY "id""#) == [["1", "a"], ["2", "b"], ["3", "a"]])
    }
}
