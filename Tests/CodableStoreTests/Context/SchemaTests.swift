import CodableStore
import Foundation
import Testing

@Suite struct SchemaTests {
    @Test func modelCreatesTablesColumnsIdentityIndexesAndJoinTables() throws {
        let path = TestStore.temporaryPath()
        _ = try Store(path: path, entities: TestStore.entities)
        let raw = try RawDatabase(path)
        let tables = try raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map { $0[0] }
        #expect(tables == ["Country", "Person", "PersonAttribute", "Person_tags", "Tag", "_codablestore_metadata"])

        // Columns: _pk, attributes with affinity and NOT NULL, a foreign key for the to-one, the position
        // column of the ordered one-to-many Person.attributes (stored on the destination table), and the digest of
        // the record that last wrote the row (see RecordDigests).
        let person = try raw.rows("SELECT name, type, \"notnull\", pk FROM pragma_table_info('Person') ORDER BY cid")
        #expect(person == [
            ["_pk", "INTEGER", "0", "1"], ["id", "INTEGER", "1", "0"], ["name", "TEXT", "0", "0"],
            ["age", "INTEGER", "1", "0"], ["country", "INTEGER", "0", "0"], ["_digest", "INTEGER", "0", "0"],
        ])
        let attribute = try raw.rows("SELECT name FROM pragma_table_info('PersonAttribute') ORDER BY cid").map { $0[0] }
        #expect(attribute == ["_pk", "key", "value", "person", "person_order", "_digest"])
        let foreignKeys = try raw.rows("SELECT \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list('Person')")
        #expect(foreignKeys == [["Country", "country", "_pk", "SET NULL"]])
        let join = try raw.rows("SELECT name FROM pragma_table_info('Person_tags') ORDER BY cid").map { $0[0] }
        #expect(join == ["source", "target", "position"])

        // The identity is a UNIQUE index; entities without identity have none.
        let identity = try raw.rows("SELECT name, \"unique\" FROM pragma_index_list('Person') WHERE name = 'Person_identity'")
        #expect(identity == [["Person_identity", "1"]])
        #expect(try raw.rows("SELECT name FROM pragma_index_info('Person_identity')") == [["id"]])
        #expect(try raw.rows("SELECT name FROM pragma_index_list('PersonAttribute') WHERE name LIKE '%identity%'").isEmpty)
        // Default values become column defaults.
        #expect(try raw.value("SELECT dflt_value FROM pragma_table_info('Person') WHERE name = 'age'") == "0")
    }

    @Test func destinationsOfRelationshipsAreAddedToTheModel() throws {
        let path = TestStore.temporaryPath()
        _ = try Store(path: path, entities: [Person.self])
        let tables = try RawDatabase(path).rows("SELECT name FROM sqlite_master WHERE type = 'table'").map { $0[0] }
        #expect(Set(tables).isSuperset(of: ["Person", "Country", "Tag", "PersonAttribute"]))
    }

    @Test func storeUsesWALAndForeignKeys() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        #expect(try RawDatabase(path).value("PRAGMA journal_mode") == "wal")
        let foreignKeys = try store.withWriterConnection { try $0.scalar(sql: "PRAGMA foreign_keys") }
        #expect(foreignKeys == .integer(1))
    }
}
