import CodableStore
import CodableStoreSQLite
import Foundation
import Testing

/// A migration that fails, and what its error must say: the migration, the step, a row where there is one.
struct MigrationFailureCase: Sendable, CustomTestStringConvertible {
    let name: String
    /// The entities the store is opened with, and the migrations.
    let entities: @Sendable () -> [any EntityObject.Type]
    let migrations: [Migration]
    /// SQL run on the seeded store (a file of the model before) before the open.
    var prepare: [String] = []
    /// The model of the seeded store: `Before` (tickets), or `Widgets` (widgets with codes).
    var seed: Seed = .tickets
    let description: String
    let migration: String?
    let step: Int?

    enum Seed: Sendable { case tickets, widgets, items }

    var testDescription: String { name }
}

struct Refused: Error, CustomStringConvertible {
    let value: String
    var description: String { "\(value) is not allowed" }
}

@Suite struct MigrationFailureTests {
    static let cases: [MigrationFailureCase] = [
        MigrationFailureCase(
            name: "renameEntity of an entity the store lacks",
            entities: { After.entities }, migrations: [Migration("rename", [.renameEntity("Tickets", to: After.Bug.self)])],
            description: "StoreError.migrationFailed: migration 'rename', step 1 (renameEntity(Tickets to Bug)) failed: the store has no entity Tickets (it has Ticket, Tag, Person); nothing was changed",
            migration: "rename", step: 1),
        MigrationFailureCase(
            name: "renameAttribute of an attribute the store lacks, after a rename that worked",
            entities: { After.entities },
            migrations: [
                Migration("rename Ticket to Bug", [.renameEntity("Ticket", to: After.Bug.self), .renameAttribute("titel", to: \After.Bug.name)])
            ],
            description: "StoreError.migrationFailed: migration 'rename Ticket to Bug', step 2 (renameAttribute(titel to Bug.name)) failed: the store's Bug has no attribute titel (it has id, title, score, repo, number); nothing was changed",
            migration: "rename Ticket to Bug", step: 2),
        MigrationFailureCase(
            name: "changeType whose transform throws",
            entities: { After.entities },
            migrations: [
                After.migrations[0],
                Migration("score as text", [.changeType(of: \After.Bug.score, from: Int.self) { score in
                    if score == 20 { throw Refused(value: "20") }
                    return "\(score)"
                }]),
                After.migrations[2],
            ],
            description: "StoreError.migrationFailed: migration 'score as text', step 1 (changeType(of: Bug.score)) failed: Bug.score of row 2: cannot transform 20: 20 is not allowed; nothing was changed (cause: 20 is not allowed)",
            migration: "score as text", step: 1),
        MigrationFailureCase(
            name: "changeType whose transform gives NULL to a non-optional attribute",
            entities: { After.entities },
            migrations: [
                After.migrations[0],
                Migration("score as text", [.changeType(of: \After.Bug.score) { value in value == .integer(20) ? .null : .text("\(value)") }]),
                After.migrations[2],
            ],
            description: "StoreError.migrationFailed: migration 'score as text', step 1 (changeType(of: Bug.score)) failed: Bug.score of row 2: the transform of 20 gave NULL, and Bug.score is not optional; nothing was changed",
            migration: "score as text", step: 1),
        MigrationFailureCase(
            name: "changeType whose transform makes the new identity's values equal",
            entities: { After.entities },
            migrations: [
                After.migrations[0], After.migrations[1],
                Migration("identity is repo and number", [.changeIdentity(of: After.Bug.self)]),
                Migration("one number", [.changeType(of: \After.Bug.number) { _ in .integer(1) }]),
            ],
            // Either is the one to fix: the new identity, or the transform of its values.
            description: "StoreError.migrationFailed: migration 'identity is repo and number', step 1 (changeIdentity(of: Bug)) or migration 'one number', step 1 (changeType(of: Bug.number)) failed: cannot change Bug's identity to [repo, number]: rows share repo = 'r', number = 1 (3 rows) after the type changes; change the transform or remove the duplicates in an earlier step; nothing was changed",
            migration: nil, step: nil),
        MigrationFailureCase(
            name: "changeType whose transform makes identities equal",
            entities: { [PrefixBefore.Tag.self, PrefixBefore.Tag_Group.self, PrefixBefore.Item.self] },
            migrations: [Migration("ids", [.changeType(of: \PrefixBefore.Item.id) { _ in .integer(7) }])],
            seed: .items,
            description: "StoreError.migrationFailed: migration 'ids', step 1 (changeType(of: Item.id)) failed: after the type changes, Item rows share their identity [id]: id = 7 (2 rows); change the transform or remove the duplicates in an earlier step; nothing was changed",
            migration: "ids", step: 1),
        MigrationFailureCase(
            name: "changeType whose transform makes the values of a unique index equal",
            entities: { [WidgetsAfter.Widget.self] },
            migrations: [Migration("one code", [.changeType(of: \WidgetsAfter.Widget.code) { _ in .text("same") }])],
            seed: .widgets,
            description: "StoreError.migrationFailed: migration 'one code', step 1 (changeType(of: Widget.code)) failed: after the type changes, Widget rows share code = 'same' (3 rows), which its unique index Widget_index_code forbids; change the transform or remove the duplicates in an earlier step; nothing was changed",
            migration: "one code", step: 1),
        MigrationFailureCase(
            name: "changeIdentity over rows that share the new identity",
            entities: { After.entities }, migrations: After.migrations, prepare: ["UPDATE Ticket SET number = 101"],
            description: "StoreError.migrationFailed: migration 'identity is repo and number', step 1 (changeIdentity(of: Bug)) failed: cannot change Bug's identity to [repo, number]: rows share repo = 'r', number = 101 (3 rows); remove the duplicates in an earlier step; nothing was changed",
            migration: "identity is repo and number", step: 1),
        MigrationFailureCase(
            name: "changeIdentity after a step that made duplicates",
            entities: { After.entities },
            migrations: After.migrations.dropLast() + [
                Migration("identity is repo and number", [.sql("UPDATE Bug SET number = 7 WHERE id > 1"), .changeIdentity(of: After.Bug.self)])
            ],
            description: "StoreError.migrationFailed: migration 'identity is repo and number', step 2 (changeIdentity(of: Bug)) failed: cannot change Bug's identity to [repo, number]: rows share repo = 'r', number = 7 (2 rows); remove the duplicates in an earlier step; nothing was changed",
            migration: "identity is repo and number", step: 2),
        MigrationFailureCase(
            name: "sql that fails",
            entities: { Before.entities }, migrations: [Migration("fix", [.sql("DELETE FROM Tag"), .sql("UPDATE Ticket SET nope = 1")])],
            description: "StoreError.migrationFailed: migration 'fix', step 2 (sql(UPDATE Ticket SET nope = 1)) failed: no such column: nope; nothing was changed (cause: SQLite error 1 (SQLITE_ERROR): no such column: nope - while executing 'UPDATE Ticket SET nope = 1')",
            migration: "fix", step: 2),
        MigrationFailureCase(
            name: "custom that throws after changing rows",
            entities: { Before.entities },
            migrations: [
                Migration("prune", [.custom { connection in
                    try connection.execute(sql: "DELETE FROM Ticket WHERE id = 1")
                    throw Refused(value: "pruning")
                }])
            ],
            description: "StoreError.migrationFailed: migration 'prune', step 1 (custom) failed: pruning is not allowed; nothing was changed (cause: pruning is not allowed)",
            migration: "prune", step: 1),
        MigrationFailureCase(
            name: "sql that leaves a reference to a row that does not exist",
            entities: { Before.entities },
            migrations: [
                Migration("audit", [
                    .sql("CREATE TABLE Audit (ticket INTEGER REFERENCES Ticket(_pk))"), .sql("INSERT INTO Audit VALUES (1), (99)"),
                ])
            ],
            description: "StoreError.migrationFailed: migration 'audit', step 1 (sql(CREATE TABLE Audit (ticket INTEGER REFERENCES Ticket(_pk)))) or migration 'audit', step 2 (sql(INSERT INTO Audit VALUES (1), (99))) failed: after the steps, Audit row 2 refers to a Ticket row that does not exist; nothing was changed",
            migration: "audit", step: nil),
        MigrationFailureCase(
            name: "custom of a later migration that leaves a reference to a row that does not exist",
            entities: { Before.entities },
            migrations: [
                Migration("audit", [.sql("CREATE TABLE Audit (ticket INTEGER REFERENCES Ticket(_pk))")]),
                Migration("no tickets", [.custom { try $0.execute(sql: "INSERT INTO Audit SELECT _pk FROM Ticket; DELETE FROM Ticket") }]),
            ],
            description: "StoreError.migrationFailed: migration 'audit', step 1 (sql(CREATE TABLE Audit (ticket INTEGER REFERENCES Ticket(_pk)))) or migration 'no tickets', step 1 (custom) failed: after the steps, Audit row 1 refers to a Ticket row that does not exist; nothing was changed",
            migration: nil, step: nil),
    ]

    /// The tickets of ``MigrationStepTests/seeded()``, or three widgets whose codes are unique.
    static func seeded(_ seed: MigrationFailureCase.Seed) throws -> String {
        switch seed {
        case .tickets:
            return try MigrationStepTests.seeded()
        case .items:
            return try MigrationEdgeTests.seeded()
        case .widgets:
            let path = TestStore.temporaryPath()
            try Store(path: path, entities: [WidgetsAfter.Widget.self]).write { context in
                for (id, code) in [(1, "a"), (2, "b"), (3, "c")] { try context.insert(WidgetsAfter.Widget(id: id, code: code)) }
            }
            return path
        }
    }

    @Test(arguments: cases)
    func everyFailingStepNamesItsMigrationAndStepAndLeavesTheStoreAsItWas(_ failure: MigrationFailureCase) throws {
        let path = try Self.seeded(failure.seed)
        for sql in failure.prepare { try RawDatabase(path).execute(sql) }
        let before = try MigrationStepTests.dump(path)
        let appliedBefore = try RawDatabase(path).rows("SELECT key, value FROM _codablestore_metadata WHERE key LIKE 'migration%' ORDER BY key")
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: failure.entities(), options: .init(migrations: failure.migrations))
        }
        #expect(error.code == .migrationFailed)
        #expect(error.description == failure.description)
        #expect(error.migration == failure.migration)
        #expect(error.migrationStep == failure.step)
        // Every table, index and row as it was: the steps before the failing one were rolled back with it, and no
        // migration was recorded.
        #expect(try MigrationStepTests.dump(path) == before)
        #expect(try RawDatabase(path).rows("SELECT key, value FROM _codablestore_metadata WHERE key LIKE 'migration%' ORDER BY key") == appliedBefore)
    }

    @Test func aFailureNamesTheStepInItsDetailedDescription() throws {
        let path = try MigrationStepTests.seeded()
        try RawDatabase(path).execute("UPDATE Ticket SET number = 101")
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        }
        #expect(error.detailedDescription() == """
            StoreError: migration 'identity is repo and number', step 1 (changeIdentity(of: Bug)) failed: cannot change Bug's identity to [repo, number]: rows share repo = 'r', number = 101 (3 rows); remove the duplicates in an earlier step; nothing was changed
            ├─ Code: migrationFailed
            ├─ Entity: Bug
            └─ Migration: identity is repo and number, step 1
            """)
    }
}
