import CodableStore
import Foundation
import Testing

// The model before: tickets with a title and an integer score, identified by id, tagged, owned by a person.
enum Before {
    @Entity final class Ticket {
        var id: Int
        var title: String
        var score: Int
        var repo: String
        var number: Int
        var labels: Set<Tag> = []
        var owner: Person?
        static let identity = Identity(\Ticket.id)
        init(id: Int, title: String, score: Int, repo: String, number: Int) {
            self.id = id
            self.title = title
            self.score = score
            self.repo = repo
            self.number = number
        }
    }
    @Entity final class Tag {
        var id: Int
        var tickets: Set<Ticket> = []
        static let identity = Identity(\Tag.id)
        init(id: Int) { self.id = id }
    }
    @Entity final class Person {
        var id: Int
        var tickets: Set<Ticket> = []
        static let identity = Identity(\Person.id)
        init(id: Int) { self.id = id }
    }
    static let entities: [any EntityObject.Type] = [Ticket.self, Tag.self, Person.self]
}

// The model after: Ticket is Bug, title is name, score is text, the identity is (repo, number). The tags' join
// table changes sides: "Bug.labels" sorts before "Tag.tickets", where "Tag.tickets" sorted before "Ticket.labels".
enum After {
    @Entity final class Bug {
        var id: Int
        var name: String
        var score: String
        var repo: String
        var number: Int
        var labels: Set<Tag> = []
        var owner: Person?
        static let identity = Identity(\Bug.repo, \Bug.number)
        init(id: Int, name: String, score: String, repo: String, number: Int) {
            self.id = id
            self.name = name
            self.score = score
            self.repo = repo
            self.number = number
        }
    }
    @Entity final class Tag {
        var id: Int
        var tickets: Set<Bug> = []
        static let identity = Identity(\Tag.id)
        init(id: Int) { self.id = id }
    }
    @Entity final class Person {
        var id: Int
        var tickets: Set<Bug> = []
        static let identity = Identity(\Person.id)
        init(id: Int) { self.id = id }
    }
    static let entities: [any EntityObject.Type] = [Bug.self, Tag.self, Person.self]

    static let migrations = [
        Migration("rename Ticket to Bug", [.renameEntity("Ticket", to: Bug.self), .renameAttribute("title", to: \Bug.name)]),
        Migration("score as text", [.changeType(of: \Bug.score, from: Int.self) { "\($0) points" }]),
        Migration("identity is repo and number", [.changeIdentity(of: Bug.self)]),
    ]
}

@Suite struct MigrationStepTests {
    /// Three tickets (two tags, one owner) in a store of the model before.
    static func seeded() throws -> String {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Before.entities)
        try store.write { context in
            let tags = [Before.Tag(id: 1), Before.Tag(id: 2)]
            let owner = Before.Person(id: 7)
            for id in 1...3 {
                let ticket = Before.Ticket(id: id, title: "ticket \(id)", score: id * 10, repo: "r", number: 100 + id)
                try context.insert(ticket)
                ticket.labels = id == 2 ? Set(tags) : [tags[0]]
                if id != 3 { ticket.owner = owner }
            }
        }
        return path
    }

    /// The store's tables and their rows, as plain text: what a failed migration must leave untouched.
    static func dump(_ path: String) throws -> [[String]] {
        let raw = try RawDatabase(path)
        var result = try raw.rows("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        for table in try raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") {
            result += try raw.rows("SELECT * FROM \"\(table[0])\" ORDER BY 1, 2")
        }
        return result
    }

    @Test func stepsRenameRetypeAndReidentifyKeepingRowsAndLinks() throws {
        let path = try Self.seeded()
        let store = try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, name, score, repo, number FROM Bug ORDER BY id") == [
            ["1", "ticket 1", "10 points", "r", "101"], ["2", "ticket 2", "20 points", "r", "102"], ["3", "ticket 3", "30 points", "r", "103"],
        ])
        #expect(try raw.rows("SELECT typeof(score) FROM Bug GROUP BY 1") == [["text"]])
        // The join table turned around (Bug is its source now), with the same links.
        #expect(try raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") == [
            ["Bug"], ["Bug_labels"], ["Person"], ["Tag"], ["_codablestore_metadata"],
        ])
        #expect(try raw.rows("SELECT b.id, t.id FROM Bug_labels j JOIN Bug b ON b._pk = j.source JOIN Tag t ON t._pk = j.target ORDER BY 1, 2") == [
            ["1", "1"], ["2", "1"], ["2", "2"], ["3", "1"],
        ])
        #expect(try raw.rows("SELECT b.id, p.id FROM Bug b JOIN Person p ON p._pk = b.owner ORDER BY 1") == [["1", "7"], ["2", "7"]])
        // The identity index is the new one; foreign keys point to the renamed table.
        #expect(try raw.value("SELECT sql FROM sqlite_master WHERE name = 'Bug_identity'") == #"CREATE UNIQUE INDEX "Bug_identity" ON "Bug" ("repo", "number")"#)
        #expect(try raw.value("SELECT count(*) FROM sqlite_master WHERE name LIKE 'Ticket%' OR sql LIKE '%\"Ticket\"%'") == "0")
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'migrations'")
            == #"["rename Ticket to Bug","score as text","identity is repo and number"]"#)
        #expect(try raw.rows("PRAGMA foreign_key_check") == [])
        // The store works on the new model: relationships from both sides, upsert by the new identity.
        try store.write { context in
            let tag = try #require(try context.object(After.Tag.self, identity: 1))
            #expect(tag.tickets.map(\.id).sorted() == [1, 2, 3])
            let person = try #require(try context.object(After.Person.self, identity: 7))
            #expect(person.tickets.map(\.id).sorted() == [1, 2])
            let bugs = try StoreDecoder().decode(
                [After.Bug].self, from: Data(#"[{"id": 1, "name": "renamed", "score": "x", "repo": "r", "number": 101}]"#.utf8), into: context)
            #expect(bugs[0].labels.map(\.id) == [1])
        }
        #expect(try raw.rows("SELECT count(*), max(name) FROM Bug WHERE number = 101") == [["1", "renamed"]])
    }

    @Test func migrationsRunOnceAndANewStoreRecordsThemAll() throws {
        let path = try Self.seeded()
        _ = try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        // Opened again: nothing runs (renaming Ticket again would fail: there is none).
        let statements = StatementLog()
        _ = try Store(
            path: path, entities: After.entities,
            options: .init(statementObserver: statements.observer, migrations: After.migrations))
        #expect(statements.all.allSatisfy { !$0.contains("ALTER") && !$0.contains("CREATE") })
        // A new store is created as declared and records every migration as done.
        let fresh = TestStore.temporaryPath("fresh.sqlite")
        _ = try Store(path: fresh, entities: After.entities, options: .init(migrations: After.migrations))
        _ = try Store(path: fresh, entities: After.entities, options: .init(migrations: After.migrations))
        #expect(try RawDatabase(fresh).value("SELECT value FROM _codablestore_metadata WHERE key = 'migrations'")
            == #"["rename Ticket to Bug","score as text","identity is repo and number"]"#)
        // A migration added later runs on both.
        let more = After.migrations + [Migration("clear scores", [.sql("UPDATE Bug SET score = ''")])]
        _ = try Store(path: path, entities: After.entities, options: .init(migrations: more))
        #expect(try RawDatabase(path).rows("SELECT DISTINCT score FROM Bug") == [[""]])
    }

    @Test func aFailingStepRollsEverythingBackAndNamesTheStep() throws {
        let path = try Self.seeded()
        let before = try Self.dump(path)
        struct Refused: Error, CustomStringConvertible { var description: String { "20 is not allowed" } }
        let failing = [
            After.migrations[0],
            Migration("score as text", [.changeType(of: \After.Bug.score, from: Int.self) { score in
                if score == 20 { throw Refused() }
                return "\(score)"
            }]),
            After.migrations[2],
        ]
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: After.entities, options: .init(migrations: failing))
        }
        #expect(error.code == .migrationFailed)
        #expect(error.message == "migration 'score as text', step 1 (changeType(of: Bug.score)) failed: Bug.score of row 2: cannot transform 20: 20 is not allowed; nothing was changed")
        #expect(try Self.dump(path) == before)
        // The store still opens with the model before.
        #expect(try Store(path: path, entities: Before.entities).read { try $0.count(Before.Ticket.self) } == 3)
    }

    @Test func aStepOnSomethingTheStoreLacksFailsClearly() throws {
        let path = try Self.seeded()
        let wrong = [Migration("rename", [.renameEntity("Tickets", to: After.Bug.self)])]
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: After.entities, options: .init(migrations: wrong))
        }
        #expect(error.code == .migrationFailed)
        #expect(error.message.contains("migration 'rename', step 1 (renameEntity(Tickets to Bug)) failed: the store has no entity Tickets (it has Ticket, Tag, Person)"))
    }

    @Test func aNewIdentityWithDuplicatesFailsUnlessAStepRemovesThem() throws {
        let path = try Self.seeded()
        try RawDatabase(path).execute("UPDATE Ticket SET number = 101")
        let before = try Self.dump(path)
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        }
        #expect(error.code == .migrationFailed)
        #expect(error.message.contains("cannot change Bug's identity to [repo, number]: rows share repo = 'r', number = 101 (3 rows)"))
        #expect(try Self.dump(path) == before)

        let deduplicating = After.migrations.dropLast() + [
            Migration("identity is repo and number", [
                .sql("DELETE FROM Bug WHERE _pk NOT IN (SELECT min(_pk) FROM Bug GROUP BY repo, number)"),
                .changeIdentity(of: After.Bug.self),
            ])
        ]
        let store = try Store(path: path, entities: After.entities, options: .init(migrations: Array(deduplicating)))
        #expect(try store.read { try $0.count(After.Bug.self) } == 1)
        // The deleted bugs' links went with them.
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Bug_labels") == "1")
    }

    @Test func aChangeWithoutAStepNamesTheDifferenceAndTheWayOut() throws {
        let path = try Self.seeded()
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: After.entities, options: .init(migrations: [After.migrations[0]]))
        }
        #expect(error.code == .schemaMismatch)
        #expect(error.differences == [
            "Bug.score: type changed from Int to String", "Bug: identity changed from [id] to [repo, number]",
        ])
        #expect(error.message.contains("Add a Migration with a step for each (Store.Options.migrations)"))
        // The renames of the first migration were rolled back with the rest.
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Ticket") == "3")
    }
}

enum WidgetsBefore {
    @Entity final class Widget {
        var id: Int
        var code: String
        static let identity = Identity(\Widget.id)
        init(id: Int, code: String) {
            self.id = id
            self.code = code
        }
    }
}

enum WidgetsAfter {
    @Entity final class Widget {
        var id: Int
        var code: String
        static let identity = Identity(\Widget.id)
        static let indexes: [EntityIndex<Widget>] = [EntityIndex(\.code, unique: true)]
        init(id: Int, code: String) {
            self.id = id
            self.code = code
        }
    }
}

@Suite struct AddedIndexTests {
    @Test func aNewUniqueIndexOverDuplicatesNamesThemAndAStepCanRemoveThem() throws {
        let path = TestStore.temporaryPath()
        try Store(path: path, entities: [WidgetsBefore.Widget.self]).write { context in
            for (id, code) in [(1, "a"), (2, "b"), (3, "a")] { try context.insert(WidgetsBefore.Widget(id: id, code: code)) }
        }
        let error = try #require(throws: StoreError.self) { try Store(path: path, entities: [WidgetsAfter.Widget.self]) }
        #expect(error.code == .schemaMismatch)
        #expect(error.message.contains("cannot add the unique index Widget_index_code to Widget: rows share code = 'a' (2 rows)"))
        let store = try Store(
            path: path, entities: [WidgetsAfter.Widget.self],
            options: .init(migrations: [Migration("codes are unique", [.sql("DELETE FROM Widget WHERE id = 3")])]))
        #expect(try store.read { try $0.count(WidgetsAfter.Widget.self) } == 2)
        #expect(try RawDatabase(path).value("SELECT sql FROM sqlite_master WHERE name = 'Widget_index_code'") == #"CREATE UNIQUE INDEX "Widget_index_code" ON "Widget" ("code")"#)
    }
}

enum PrefixBefore {
    @Entity final class Tag {
        var id: Int
        var items: Set<Item> = []
        static let identity = Identity(\Tag.id)
        init(id: Int) { self.id = id }
    }
    @Entity final class Tag_Group {
        var id: Int
        var items: [Item] = []
        static let identity = Identity(\Tag_Group.id)
        init(id: Int) { self.id = id }
    }
    @Entity final class Item {
        var id: Int
        var title: String = ""
        static let identity = Identity(\Item.id)
        init(id: Int) { self.id = id }
    }
}

enum PrefixAfter {
    @Entity final class Label {
        var id: Int
        var items: Set<Item> = []
        static let identity = Identity(\Label.id)
        init(id: Int) { self.id = id }
    }
    @Entity final class Tag_Group {
        var id: Int
        var items: [Item] = []
        static let identity = Identity(\Tag_Group.id)
        init(id: Int) { self.id = id }
    }
    @Entity final class Item {
        var id: Int
        var name: String = ""
        static let identity = Identity(\Item.id)
        init(id: Int) { self.id = id }
    }
}

@Suite struct MigrationEdgeTests {
    static func seeded() throws -> String {
        let path = TestStore.temporaryPath()
        try Store(path: path, entities: [PrefixBefore.Tag.self, PrefixBefore.Tag_Group.self, PrefixBefore.Item.self]).write { context in
            let items = [PrefixBefore.Item(id: 1), PrefixBefore.Item(id: 2)]
            items[0].title = "one"
            let tag = PrefixBefore.Tag(id: 1)
            try context.insert(tag)
            tag.items = Set(items)
            let group = PrefixBefore.Tag_Group(id: 1)
            try context.insert(group)
            group.items = [items[1], items[0]]
        }
        return path
    }

    static let after: [any EntityObject.Type] = [PrefixAfter.Label.self, PrefixAfter.Tag_Group.self, PrefixAfter.Item.self]
    static let renames = [
        Migration("Tag is Label", [.renameEntity("Tag", to: PrefixAfter.Label.self)]),
        Migration("title is name", [.renameAttribute("title", to: \PrefixAfter.Item.name)]),
    ]

    @Test func renamesAloneAreRecordedAndTheStoreOpensAgain() throws {
        let path = try Self.seeded()
        for _ in 0..<2 {
            let store = try Store(path: path, entities: Self.after, options: .init(migrations: Self.renames))
            try store.read { (context: Context) throws in
                #expect(try context.object(PrefixAfter.Item.self, identity: 1)?.name == "one")
                // Another entity whose name starts like the renamed one keeps its join table and its order.
                #expect(try context.object(PrefixAfter.Tag_Group.self, identity: 1)?.items.map(\.id) == [2, 1])
                #expect(try context.object(PrefixAfter.Label.self, identity: 1)?.items.map(\.id).sorted() == [1, 2])
            }
        }
        #expect(try RawDatabase(path).rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%Group%' ORDER BY name") == [["Tag_Group"], ["Tag_Group_items"]])
    }

    @Test func aDataFixThatDeletesLinkedRowsRunsOnAnUnchangedModel() throws {
        let path = try Self.seeded()
        let entities: [any EntityObject.Type] = [PrefixBefore.Tag.self, PrefixBefore.Tag_Group.self, PrefixBefore.Item.self]
        let fix = [Migration("drop item 1", [.sql("DELETE FROM Item WHERE id = 1")])]
        let store = try Store(path: path, entities: entities, options: .init(migrations: fix))
        try store.read { (context: Context) throws in
            #expect(try context.object(PrefixBefore.Tag_Group.self, identity: 1)?.items.map(\.id) == [2])
            #expect(try context.object(PrefixBefore.Tag.self, identity: 1)?.items.map(\.id) == [2])
        }
        #expect(try RawDatabase(path).rows("PRAGMA foreign_key_check") == [])
        _ = try Store(path: path, entities: entities, options: .init(migrations: fix))
    }

    @Test func aTypeChangeThatMakesIdentitiesEqualFailsNamingThem() throws {
        let path = try Self.seeded()
        let entities: [any EntityObject.Type] = [PrefixBefore.Tag.self, PrefixBefore.Tag_Group.self, PrefixBefore.Item.self]
        // Not a type change in fact, but a rebuild through a transform that maps every id to 7.
        let collapse = [Migration("ids", [.changeType(of: \PrefixBefore.Item.id) { _ in .integer(7) }])]
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: entities, options: .init(migrations: collapse))
        }
        #expect(error.code == .migrationFailed)
        #expect(error.message.contains("after the type changes, Item rows share their identity [id]: id = 7 (2 rows)"))
        #expect(try RawDatabase(path).rows("SELECT id FROM Item ORDER BY id") == [["1"], ["2"]])
    }

    @Test func aStoreOfANewerVersionIsRefused() throws {
        let path = try Self.seeded()
        let raw = try RawDatabase(path)
        try raw.execute(#"UPDATE _codablestore_metadata SET value = replace(value, '"version":4', '"version":5') WHERE key = 'model'"#)
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: [PrefixBefore.Tag.self, PrefixBefore.Tag_Group.self, PrefixBefore.Item.self])
        }
        #expect(error.message == "the store was written by a newer CodableStore (storage version 5); this version reads versions up to 4")
    }

    @Test func aVersionOneStoreWithoutDecimalsIsRecordedAsTheCurrentVersion() throws {
        let path = try Self.seeded()
        let raw = try RawDatabase(path)
        try raw.execute(#"UPDATE _codablestore_metadata SET value = replace(value, '"version":4', '"version":1') WHERE key = 'model'"#)
        let entities: [any EntityObject.Type] = [PrefixBefore.Tag.self, PrefixBefore.Tag_Group.self, PrefixBefore.Item.self]
        _ = try Store(path: path, entities: entities)
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'").contains(#""version":4"#))
        // The next open is read-only: no write statement runs.
        let statements = StatementLog()
        _ = try Store(path: path, entities: entities, options: .init(statementObserver: statements.observer))
        #expect(statements.all.allSatisfy { !$0.contains("IMMEDIATE") && !$0.contains("foreign_keys = OFF") })
    }
}
