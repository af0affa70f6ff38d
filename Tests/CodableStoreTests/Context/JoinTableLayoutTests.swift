import CodableStore
import Foundation
import Testing

/// Storage version 3: a join table without positions (both sides unordered) is one B-tree keyed by (source, target),
/// `WITHOUT ROWID`, with the reverse index on `target`; a table with positions keeps its rowid (its unordered side
/// reads links in insertion order). A version 2 store is rebuilt on open with the same links.
@Suite struct JoinTableLayoutTests {
    static let people = #"""
        [{"id":1,"name":"a","tags":[{"id":10,"label":"x"},{"id":11,"label":"y"}]},
         {"id":2,"name":"b","tags":[11,{"id":12,"label":"z"}]},
         {"id":3,"name":"c","tags":[]}]
        """#

    static func links(_ raw: RawDatabase) throws -> [[String]] {
        try raw.rows("""
            SELECT p.id, t.id, j.position FROM Person_tags j JOIN Person p ON p._pk = j.source JOIN Tag t ON t._pk = j.target
            ORDER BY 1, 2
            """)
    }

    static func tagIDs(_ store: Store) throws -> [Int: [Int]] {
        try store.read { context in
            var result: [Int: [Int]] = [:]
            for person in try context.fetch(Person.self) { result[person.id] = person.tags.map(\.id).sorted() }
            for tag in try context.fetch(Tag.self) { result[-tag.id] = tag.people.map(\.id).sorted() }
            return result
        }
    }

    static let expectedTags: [Int: [Int]] = [1: [10, 11], 2: [11, 12], 3: [], -10: [1], -11: [1, 2], -12: [2]]

    @Test func aJoinTableWithoutPositionsHasNoRowIDAndOneReverseIndex() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities + [PosItem.self, PosOwner.self, PosTag.self])
        try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(Self.people.utf8), into: $0) }
        let raw = try RawDatabase(path)
        let sql = try raw.value("SELECT sql FROM sqlite_master WHERE name = 'Person_tags'")
        #expect(sql.hasSuffix(#"PRIMARY KEY ("source", "target")) WITHOUT ROWID"#), "\(sql)")
        // The primary key is the table itself: its only index is the reverse one.
        #expect(try raw.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Person_tags' AND sql IS NOT NULL")
            == [["Person_tags_target"]])
        #expect(try raw.rows("SELECT name, origin FROM pragma_index_list('Person_tags') ORDER BY name")
            == [["Person_tags_target", "c"], ["sqlite_autoindex_Person_tags_1", "pk"]])
        #expect(throws: (any Error).self) { try raw.rows("SELECT rowid FROM Person_tags") }
        // The ordered pair keeps its rowid and its unique index.
        let ordered = try raw.value("SELECT sql FROM sqlite_master WHERE name = 'PosItem_tags'")
        #expect(ordered.hasSuffix(#"UNIQUE ("source", "target"))"#), "\(ordered)")
        #expect(try Self.links(raw) == [["1", "10", "NULL"], ["1", "11", "NULL"], ["2", "11", "NULL"], ["2", "12", "NULL"]])
        #expect(try Self.tagIDs(store) == Self.expectedTags)
    }

    @Test func linksOfATableWithoutRowIDAreWrittenChangedAndDeleted() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(Self.people.utf8), into: $0) }
        // Replaced membership, a link made twice in one payload, and a link from the other side.
        try store.write { context in
            _ = try StoreDecoder().decode(
                [Person].self, from: Data(#"[{"id":1,"tags":[12,12,10]},{"id":3,"tags":[10]}]"#.utf8), into: context)
            let tag = try #require(try context.object(Tag.self, identity: 11))
            tag.people.insert(try #require(try context.object(Person.self, identity: 3)))
        }
        let raw = try RawDatabase(path)
        #expect(try Self.links(raw) == [
            ["1", "10", "NULL"], ["1", "12", "NULL"], ["2", "11", "NULL"], ["2", "12", "NULL"], ["3", "10", "NULL"], ["3", "11", "NULL"],
        ])
        // Deleting a person deletes its links (the foreign keys' cascade), and deleting a tag its own.
        try store.write { context in
            try context.delete(try #require(try context.object(Person.self, identity: 2)))
            try context.delete(try #require(try context.object(Tag.self, identity: 10)))
        }
        #expect(try Self.links(raw) == [["1", "12", "NULL"], ["3", "11", "NULL"]])
        #expect(try raw.value("SELECT count(*) FROM pragma_foreign_key_check") == "0")
        #expect(try raw.value("PRAGMA integrity_check") == "ok")
    }

    /// A table without positions is written without one, and a link unlinked and linked again in one save is not
    /// written at all: it stays as it was.
    @Test func linksWithoutPositionsAreWrittenAsPairs() throws {
        let statements = StatementLog()
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: statements.observer))
        try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(Self.people.utf8), into: $0) }
        let linkInserts = statements.writes.filter { $0.contains("INTO \"Person_tags\"") }
        #expect(!linkInserts.isEmpty)
        #expect(linkInserts.allSatisfy {
            $0.contains(#"("source", "target") VALUES (?, ?)"#) && $0.hasSuffix(#"ON CONFLICT ("source", "target") DO NOTHING"#)
        }, "\(linkInserts)")
        statements.reset()
        try store.write { context in
            let person = try #require(try context.object(Person.self, identity: 1))
            let tag = try #require(try context.object(Tag.self, identity: 10))
            person.tags.remove(tag)
            person.tags.insert(tag)
        }
        #expect(!statements.writes.contains { $0.contains("\"Person_tags\"") }, "\(statements.writes)")
        let raw = try RawDatabase(path)
        #expect(try Self.links(raw) == [["1", "10", "NULL"], ["1", "11", "NULL"], ["2", "11", "NULL"], ["2", "12", "NULL"]])
        #expect(try raw.value("PRAGMA integrity_check") == "ok")
    }

    /// The store as storage version 2 wrote it: the join table with a rowid and a unique index, version 2 recorded.
    static func versionTwoStore() throws -> (path: String, links: [[String]]) {
        let path = TestStore.temporaryPath("v2.sqlite")
        do {
            let store = try Store(path: path, entities: TestStore.entities)
            try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(Self.people.utf8), into: $0) }
        }
        let links = try Self.links(try RawDatabase(path))
        try makeVersionTwo(path, joinTable: "Person_tags", source: "Person", target: "Tag")
        return (path, links)
    }

    /// Turns a current store into what version 2 wrote: `joinTable` with a rowid and a unique index.
    static func makeVersionTwo(_ path: String, joinTable: String, source: String, target: String) throws {
        let raw = try RawDatabase(path)
        let model = try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'")
        let old = model.replacingOccurrences(of: #""version":4"#, with: #""version":2"#)
        #expect(old != model)
        try raw.execute("""
            PRAGMA foreign_keys = OFF;
            BEGIN;
            CREATE TABLE "\(joinTable)_v2" (\
            "source" INTEGER NOT NULL REFERENCES "\(source)"("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
            "target" INTEGER NOT NULL REFERENCES "\(target)"("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
            "position" INTEGER, UNIQUE ("source", "target"));
            INSERT INTO "\(joinTable)_v2" SELECT source, target, position FROM "\(joinTable)";
            DROP TABLE "\(joinTable)";
            ALTER TABLE "\(joinTable)_v2" RENAME TO "\(joinTable)";
            CREATE INDEX "\(joinTable)_target" ON "\(joinTable)" ("target");
            UPDATE _codablestore_metadata SET value = '\(old.replacingOccurrences(of: "'", with: "''"))' WHERE key = 'model';
            COMMIT;
            """)
        #expect(try !raw.value("SELECT sql FROM sqlite_master WHERE name = '\(joinTable)'").contains("WITHOUT ROWID"))
    }

    /// A version 2 store whose migration steps rename an entity: the join table that changes sides is made in the new
    /// layout, with the same links, in the same open.
    @Test func aVersionTwoStoreUpgradedWhileItsStepsRenameAnEntity() throws {
        let path = try MigrationStepTests.seeded()
        try Self.makeVersionTwo(path, joinTable: "Tag_tickets", source: "Tag", target: "Ticket")
        _ = try Store(path: path, entities: After.entities, options: .init(migrations: After.migrations))
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT sql FROM sqlite_master WHERE name = 'Bug_labels'").hasSuffix("WITHOUT ROWID"))
        #expect(try raw.rows("SELECT b.id, t.id FROM Bug_labels j JOIN Bug b ON b._pk = j.source JOIN Tag t ON t._pk = j.target ORDER BY 1, 2") == [
            ["1", "1"], ["2", "1"], ["2", "2"], ["3", "1"],
        ])
        #expect(try raw.rows("SELECT name FROM sqlite_master WHERE tbl_name = 'Bug_labels' AND sql IS NOT NULL AND type = 'index'")
            == [["Bug_labels_target"]])
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'").contains(#""version":4"#))
        #expect(try raw.rows("PRAGMA foreign_key_check") == [])
    }

    @Test func aVersionTwoStoreGetsItsJoinTablesRebuiltOnOpen() throws {
        let (path, links) = try Self.versionTwoStore()
        #expect(links.count == 4)
        let store = try Store(path: path, entities: TestStore.entities)
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT sql FROM sqlite_master WHERE name = 'Person_tags'").hasSuffix("WITHOUT ROWID"))
        #expect(try Self.links(raw) == links)
        #expect(try raw.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Person_tags' AND sql IS NOT NULL")
            == [["Person_tags_target"]])
        #expect(try raw.rows("SELECT name FROM sqlite_master WHERE name LIKE '%codablestore_migrating%'").isEmpty)
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'").contains(#""version":4"#))
        #expect(try raw.value("SELECT count(*) FROM pragma_foreign_key_check") == "0")
        #expect(try Self.tagIDs(store) == Self.expectedTags)
        // The upgraded table takes new links, and opened again the store has nothing more to do.
        try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(#"[{"id":3,"tags":[10]}]"#.utf8), into: $0) }
        let schema = try raw.rows("SELECT name, sql FROM sqlite_master ORDER BY name")
        let reopened = try Store(path: path, entities: TestStore.entities)
        #expect(try raw.rows("SELECT name, sql FROM sqlite_master ORDER BY name") == schema)
        #expect(try Self.tagIDs(reopened)[3] == [10])
    }

    @Test func aVersionTwoStoreWithALinkToAMissingRowFailsToUpgradeAndStaysAsItWas() throws {
        let (path, _) = try Self.versionTwoStore()
        let raw = try RawDatabase(path)
        try raw.execute("PRAGMA foreign_keys = OFF; INSERT INTO Person_tags (source, target) VALUES (1, 999)")
        let before = try raw.rows("SELECT name, sql FROM sqlite_master ORDER BY name")
        let error = try #require(throws: StoreError.self) { _ = try Store(path: path, entities: TestStore.entities) }
        #expect(error.code == .migrationFailed)
        #expect(error.message == "after migrating, a link in Person_tags refers to a Tag row that does not exist; nothing was changed", "\(error.message)")
        #expect(try raw.rows("SELECT name, sql FROM sqlite_master ORDER BY name") == before)
        #expect(try raw.value("SELECT count(*) FROM Person_tags") == "5")
    }
}
