import CSQLite
import CodableStore
import Foundation
import Testing

@Entity final class RefShelf {
    var id: Int
    var books: Set<RefBook> = []
    static let identity = Identity(\RefShelf.id)
    init(id: Int) { self.id = id }
}

@Entity final class RefGenre {
    var id: Int
    var books: Set<RefBook> = []
    static let identity = Identity(\RefGenre.id)
    init(id: Int) { self.id = id }
}

/// A book whose record may name a shelf and a genre to delete (`"dropShelf"`, `"dropGenre"`), or delete every shelf
/// (`"dropAllShelves"`): a decoding hook that deletes other objects in the middle of an import.
@Entity final class RefBook {
    var id: Int
    var title: String = ""
    var shelf: RefShelf?
    var genres: Set<RefGenre> = []
    static let identity = Identity(\RefBook.id)
    init(id: Int) { self.id = id }
}

extension RefBook: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder)
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        let context = try #require(entityState.context)
        if let shelf = try container.decodeIfPresent(Int.self, forKey: "dropShelf") {
            try context.delete(try #require(try context.object(RefShelf.self, identity: shelf)))
        }
        if try container.decodeIfPresent(Bool.self, forKey: "dropAllShelves") == true {
            try context.deleteAll(RefShelf.self)
        }
        if let genre = try container.decodeIfPresent(Int.self, forKey: "dropGenre") {
            try context.delete(try #require(try context.object(RefGenre.self, identity: genre)))
        }
    }
}

/// An import runs without SQLite's foreign-key checks (they cost a B-tree search per reference written); whatever
/// deletes rows then clears what refers to them, as the keys' ON DELETE actions would, and the store's other writes
/// have the keys again.
@Suite struct ImportForeignKeyTests {
    static let entities: [any EntityObject.Type] = [RefBook.self, RefShelf.self, RefGenre.self]
    static let seed = #"""
        [{"id":100,"title":"a","shelf":{"id":1},"genres":[{"id":10},{"id":11}]},
         {"id":101,"title":"b","shelf":{"id":2},"genres":[10]},
         {"id":102,"title":"c","shelf":1,"genres":[11]}]
        """#

    static func seeded() throws -> (store: Store, path: String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { _ = try StoreDecoder().decode([RefBook].self, from: Data(Self.seed.utf8), into: $0) }
        return (store, path)
    }

    static func books(_ raw: RawDatabase) throws -> [[String]] {
        try raw.rows("SELECT b.id, s.id FROM RefBook b LEFT JOIN RefShelf s ON s._pk = b.shelf ORDER BY b.id")
    }

    static func links(_ raw: RawDatabase) throws -> [[String]] {
        try raw.rows("""
            SELECT b.id, g.id FROM RefBook_genres j JOIN RefBook b ON b._pk = j.source JOIN RefGenre g ON g._pk = j.target
            ORDER BY 1, 2
            """)
    }

    static func dump(_ text: String) throws -> String {
        let path = TestStore.temporaryPath("dump.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(arguments: [false, true])
    func objectsDeletedDuringAnImportLeaveNoReferencesBehind(commitEveryBatch: Bool) throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.dump(#"[{"id":103,"shelf":2,"genres":[11]},{"id":104,"dropShelf":1,"dropGenre":10}]"#)
        var options = ImportOptions()
        options.commitEveryBatch = commitEveryBatch
        options.batchSize = 1
        let report = try store.importJSON(RefBook.self, from: .file(dump), options: options)
        #expect(report.recordsRead == 2)
        let raw = try RawDatabase(path)
        // Shelf 1's books lost their shelf (SET NULL), genre 10's links went (CASCADE): none of them was in memory.
        #expect(try Self.books(raw) == [["100", "NULL"], ["101", "2"], ["102", "NULL"], ["103", "2"], ["104", "NULL"]])
        #expect(try Self.links(raw) == [["100", "11"], ["102", "11"], ["103", "11"]])
        #expect(try raw.rows("SELECT id FROM RefShelf ORDER BY id") == [["2"]])
        #expect(try raw.rows("SELECT id FROM RefGenre ORDER BY id") == [["11"]])
        #expect(try raw.value("SELECT count(*) FROM pragma_foreign_key_check") == "0")
    }

    @Test func deleteAllInAnImportClearsTheReferencesOfEveryRowItDeletes() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.dump(#"[{"id":103,"shelf":{"id":3}},{"id":104,"dropAllShelves":true},{"id":105,"shelf":{"id":4}}]"#)
        _ = try store.importJSON(RefBook.self, from: .file(dump))
        let raw = try RawDatabase(path)
        #expect(try Self.books(raw) == [["100", "NULL"], ["101", "NULL"], ["102", "NULL"], ["103", "NULL"], ["104", "NULL"], ["105", "4"]])
        #expect(try raw.rows("SELECT id FROM RefShelf ORDER BY id") == [["4"]])
        #expect(try raw.value("SELECT count(*) FROM pragma_foreign_key_check") == "0")
    }

    /// After an import, and after one that failed, the store's writes have the foreign keys' actions again: a
    /// delete outside an import relies on them for the rows it does not hold.
    @Test(arguments: [#"[{"id":103,"shelf":2}]"#, #"[{"id":103,"shelf":2}, {"id":"#])
    func writesAfterAnImportHaveTheForeignKeysAgain(dumpText: String) throws {
        let (store, path) = try Self.seeded()
        let failed = dumpText.hasSuffix(#""id":"#)
        if failed {
            #expect(throws: ImportError.self) { try store.importJSON(RefBook.self, from: .file(try Self.dump(dumpText))) }
        } else {
            _ = try store.importJSON(RefBook.self, from: .file(try Self.dump(dumpText)))
        }
        let enforced = try store.withWriterConnection { connection in
            var statement: OpaquePointer?
            sqlite3_prepare_v2(connection.sqliteConnection, "PRAGMA foreign_keys", -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : -1
        }
        #expect(enforced == 1)
        // Genre 10 is deleted by a plain write: SQLite's CASCADE removes its links (the books are not loaded).
        try store.write { context in try context.delete(try #require(try context.object(RefGenre.self, identity: 10))) }
        let raw = try RawDatabase(path)
        #expect(try Self.links(raw) == [["100", "11"], ["102", "11"]])
        #expect(try Self.books(raw).count == (failed ? 3 : 4))
        #expect(try raw.value("SELECT count(*) FROM pragma_foreign_key_check") == "0")
    }

    @Test func aSyncImportKeepsTheForeignKeysAndDeletesWhatItMisses() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.dump(#"[{"id":100,"genres":[10]},{"id":102,"genres":[11]}]"#)
        let report = try store.importJSON(RefBook.self, from: .file(dump), syncing: .all)
        #expect(report.sync?.deleted == 1)
        let raw = try RawDatabase(path)
        #expect(try Self.links(raw) == [["100", "10"], ["102", "11"]])
        #expect(try raw.value("SELECT count(*) FROM pragma_foreign_key_check") == "0")
    }
}
