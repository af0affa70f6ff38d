import CodableStoreSQLite
import Foundation
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

@Entity final class StoragePlaylist {
    var id: Int
    var name: String
    /// Ordered many-to-many: a join table with positions, owned by this side.
    var songs: [StorageSong] = []
    static let identity = Identity(\StoragePlaylist.id)
    init(id: Int, name: String) { self.id = id; self.name = name }
}

@Entity final class StorageSong {
    var id: Int
    var title: String
    var playlists: Set<StoragePlaylist> = []
    /// Ordered one-to-many: the members' foreign key and an order column.
    var takes: [StorageTake] = []
    static let identity = Identity(\StorageSong.id)
    init(id: Int, title: String) { self.id = id; self.title = title }
}

@Entity final class StorageTake {
    var number: Int
    var song: StorageSong?
    init(number: Int) { self.number = number }
}

/// The storage seam on its own: write plans, which name entities, fields and row ids and never SQL, run by the
/// SQLite backend against plain tables, checked with plain SQL. What a second backend must do the same.
@Suite struct SQLStorageTests {
    let schema: Schema
    let storage: SQLStorage
    let connection: Connection

    init() throws {
        schema = try Schema(entities: [StoragePlaylist.self, StorageSong.self, StorageTake.self])
        storage = SQLStorage(model: schema)
        connection = try Connection(path: ":memory:")
        try SQLiteMigration.create(schema, on: connection)
    }

    private func entity(_ type: any EntityObject.Type) throws -> EntitySchema { try schema.mapping(for: type) }

    private func field(_ name: String, of type: any EntityObject.Type) throws -> Int {
        try #require(entity(type).description.fields.firstIndex { $0.name == name })
    }

    /// The values of an insert step for one row: its row id, then each insert column by name.
    private func row(_ type: any EntityObject.Type, _ rowID: Int64, _ values: [String: DatabaseValue]) throws -> [DatabaseValue] {
        let mapping = try entity(type)
        // The row id, the insert columns, and the digest (none: written outside an import).
        return [.integer(rowID)] + mapping.columns[..<mapping.insertColumnCount].map { values[$0.name] ?? .null } + [.null]
    }

    private func run(_ steps: [WritePlan.Step]) throws {
        for step in steps { try storage.run(step) { try connection.cachedStatement(sql: $0) } }
    }

    private func rows(_ sql: String) throws -> [[DatabaseValue]] { try connection.rows(sql: sql) }

    @Test func eachStepWritesWhatItSays() throws {
        let songs = try entity(StorageSong.self).index
        let playlists = try entity(StoragePlaylist.self).index
        let takes = try entity(StorageTake.self).index
        let join = try #require(schema.joinTables.first { $0.source == playlists && $0.target == songs })
        #expect(join.hasPosition)
        // A full multi-row insert, then single rows.
        var batch: [DatabaseValue] = []
        for id in 1...EntitySchema.insertBatchRows {
            batch += try row(StorageSong.self, Int64(id), ["id": .integer(Int64(id)), "title": .text("s\(id)")])
        }
        try run([
            .insert(entity: songs, rows: EntitySchema.insertBatchRows, values: batch),
            .insert(entity: playlists, rows: 1, values: try row(StoragePlaylist.self, 100, ["id": .integer(7), "name": .text("mix")])),
            .insert(entity: takes, rows: 1, values: try row(StorageTake.self, 200, ["number": .integer(1), "song": .integer(1)])),
            .insert(entity: takes, rows: 1, values: try row(StorageTake.self, 201, ["number": .integer(2), "song": .integer(1)])),
        ])
        #expect(try rows("SELECT count(*), min(id), max(id) FROM StorageSong") == [[.integer(32), .integer(1), .integer(32)]])

        // Links with positions; an appended link goes after the source's last one; a link that exists keeps its
        // position when appended again, and takes the new one when linked again.
        try run([
            .link(table: join.index, rows: 1, values: [.integer(100), .integer(3), .integer(0)]),
            .link(table: join.index, rows: 1, values: [.integer(100), .integer(1), .integer(1)]),
            .appendLink(table: join.index, source: 100, target: 2),
            .appendLink(table: join.index, source: 100, target: 3),
        ])
        let order = "SELECT target, position FROM \"\(join.name)\" WHERE source = 100 ORDER BY position"
        #expect(try rows(order) == [[.integer(3), .integer(0)], [.integer(1), .integer(1)], [.integer(2), .integer(2)]])
        try run([
            .link(table: join.index, rows: 1, values: [.integer(100), .integer(2), .integer(0)]),
            .setLinkPosition(table: join.index, source: 100, target: 3, position: 5),
            .unlink(table: join.index, source: 100, target: 1),
        ])
        #expect(try rows(order) == [[.integer(2), .integer(0)], [.integer(3), .integer(5)]])

        // An update writes exactly the fields named; positions by foreign key are set and cleared.
        let title = try field("title", of: StorageSong.self)
        try run([
            .update(entity: songs, fields: [title], values: [.text("renamed"), .null, .integer(2)]),
            .setOrder(entity: takes, orderColumn: "song_order", rowID: 200, position: 1),
            .setOrder(entity: takes, orderColumn: "song_order", rowID: 201, position: 0),
        ])
        #expect(try rows("SELECT id, title FROM StorageSong WHERE _pk IN (1, 2) ORDER BY _pk")
            == [[.integer(1), .text("s1")], [.integer(2), .text("renamed")]])
        #expect(try rows("SELECT _pk, song_order FROM StorageTake ORDER BY _pk") == [[.integer(200), .integer(1)], [.integer(201), .integer(0)]])
        try run([.setOrder(entity: takes, orderColumn: "song_order", rowID: 200, position: nil), .delete(entity: takes, rowID: 201)])
        #expect(try rows("SELECT _pk, song_order FROM StorageTake") == [[.integer(200), .null]])

        // Digests (see RecordDigests): an update sets it with its fields or alone; a link change clears one row's;
        // a deletion clears those of the rows referring to the deleted row, by foreign key or link.
        try run([
            .update(entity: songs, fields: [], values: [.integer(41), .integer(1)]),
            .update(entity: songs, fields: [title], values: [.text("again"), .integer(42), .integer(2)]),
            .update(entity: takes, fields: [], values: [.integer(43), .integer(200)]),
        ])
        #expect(try rows("SELECT _pk, title, _digest FROM StorageSong WHERE _pk IN (1, 2) ORDER BY _pk")
            == [[.integer(1), .text("s1"), .integer(41)], [.integer(2), .text("again"), .integer(42)]])
        try run([.clearStamp(entity: songs, rowID: 2)])
        #expect(try rows("SELECT _pk, _digest FROM StorageSong WHERE _digest IS NOT NULL") == [[.integer(1), .integer(41)]])
        try run([.update(entity: playlists, fields: [], values: [.integer(44), .integer(100)])])
        #expect(try rows("SELECT source FROM StoragePlaylist_songs ORDER BY source").allSatisfy { $0 == [.integer(100)] })
        let linkedSong = try #require(try rows("SELECT target FROM StoragePlaylist_songs LIMIT 1").first?.first)
        guard case .integer(let linked) = linkedSong else { return }
        #expect(try rows("SELECT _digest FROM StoragePlaylist UNION ALL SELECT _digest FROM StorageTake") == [[.integer(44)], [.integer(43)]])
        try run([
            .clearStampsReferring(entity: playlists, destination: songs, rowID: linked),
            .clearStampsReferring(entity: takes, destination: songs, rowID: 1),
            .clearStampsReferring(entity: songs, destination: takes, rowID: 200),
        ])
        #expect(try rows("SELECT _pk, _digest FROM StoragePlaylist") == [[.integer(100), .null]])
        #expect(try rows("SELECT _pk, _digest FROM StorageTake") == [[.integer(200), .null]])
        #expect(try rows("SELECT _pk, _digest FROM StorageSong WHERE _pk = 1") == [[.integer(1), .integer(41)]])
    }

    /// Identity lookups and membership queries: the read side the context and the import's writer ask for.
    @Test func lookupsFindStoredIdentitiesInAnyNumber() throws {
        let songs = try entity(StorageSong.self).index
        for id in 1...300 {
            try run([.insert(entity: songs, rows: 1, values: try row(StorageSong.self, Int64(id) * 10, ["id": .integer(Int64(id)), "title": .text("t")]))])
        }
        // Sizes from the statement sizes, within SQLite's limit on parameters.
        #expect(storage.lookupRowsPerStatement(for: 1, entity: songs, maximumVariableCount: 32_766) == 16)
        #expect(storage.lookupRowsPerStatement(for: 17, entity: songs, maximumVariableCount: 32_766) == 64)
        #expect(storage.lookupRowsPerStatement(for: 5_000, entity: songs, maximumVariableCount: 999) == 999)
        var found: [Int64] = []
        let keys = [5, 299, 301, 1, 5].map { Context.IdentityKey(single: .integer(Int64($0))) }
        try storage.lookUp(keys, entity: songs, maximumVariableCount: 999, statements: { try connection.cachedStatement(sql: $0) }) {
            found.append($0.int64(at: 0))
        }
        #expect(found.sorted() == [10, 50, 2990])
    }

    /// A taken identity is a StoreError naming the entity and the identity, from a multi-row insert (found row by
    /// row) and from an update; nothing of the failing row is written.
    @Test func identityConflictsNameTheEntityAndTheIdentity() throws {
        let songs = try entity(StorageSong.self).index
        try run([.insert(entity: songs, rows: 1, values: try row(StorageSong.self, 1, ["id": .integer(1), "title": .text("a")]))])
        var batch: [DatabaseValue] = []
        for (rowID, id) in zip(2...(EntitySchema.insertBatchRows + 1), [5, 6, 1] + Array(100..<(100 + EntitySchema.insertBatchRows - 3))) {
            batch += try row(StorageSong.self, Int64(rowID), ["id": .integer(Int64(id)), "title": .text("b")])
        }
        let insert = try #require(throws: StoreError.self) {
            try run([.insert(entity: songs, rows: EntitySchema.insertBatchRows, values: batch)])
        }
        #expect(insert.code == .identityConflict)
        #expect(insert.message.hasPrefix("StorageSong with identity id = 1 already exists"))

        try run([.insert(entity: songs, rows: 1, values: try row(StorageSong.self, 50, ["id": .integer(9), "title": .text("c")]))])
        let update = try #require(throws: StoreError.self) {
            try run([.update(entity: songs, fields: [try field("id", of: StorageSong.self)], values: [.integer(9), .null, .integer(1)])])
        }
        #expect(update.code == .identityConflict)
        #expect(update.message.hasPrefix("StorageSong with identity id = 9 already exists"))
        #expect(try rows("SELECT _pk, id FROM StorageSong WHERE _pk IN (1, 50) ORDER BY _pk") == [[.integer(1), .integer(1)], [.integer(50), .integer(9)]])
    }
}
