import CodableStore
import CodableStorePostgres
import Foundation
import Testing

@Entity final class CopyPlaylist {
    var id: Int
    var songs: [CopySong] = []
    static let identity = Identity(\CopyPlaylist.id)
}

@Entity final class CopySong {
    var id: Int
    var playlists: Set<CopyPlaylist> = []
    static let identity = Identity(\CopySong.id)
}

/// On PostgreSQL, the links of a row the same write inserts go by COPY (no link to or from a new row can exist), the
/// others by the upsert that keeps a link that exists (and gives it its new position). Either way the join table holds
/// what the objects say. Needs the server of `Scripts/with-postgres`.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs CODABLESTORE_POSTGRES_URL (Scripts/with-postgres)"))
struct PostgresLinkCopyTests {
    private func observedStore() throws -> (Store, Locked<[String]>) {
        let statements = Locked<[String]>([])
        var options = Store.Options()
        options.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        return (try Backend.postgres.makeStore(entities: [CopyPlaylist.self, CopySong.self], options: options), statements)
    }

    /// The join table's rows: playlist, song and position, in the playlists' order.
    private func links(_ store: Store) throws -> [[String]] {
        try storedRows(store, """
            SELECT p.id, s.id, j.position FROM "CopyPlaylist_songs" j JOIN "CopyPlaylist" p ON p._pk = j.source
            JOIN "CopySong" s ON s._pk = j.target ORDER BY p.id, j.position
            """)
    }

    private func save(_ json: String, _ store: Store, _ statements: Locked<[String]>) throws -> (copied: Bool, upserted: Bool) {
        statements.withLock { $0.removeAll() }
        try store.write { context in _ = try StoreDecoder().decode([CopyPlaylist].self, from: Data(json.utf8), into: context) }
        let run = statements.withLock { $0 }
        return (run.contains { $0.hasPrefix(#"COPY "CopyPlaylist_songs""#) }, run.contains { $0.hasPrefix(#"INSERT INTO "CopyPlaylist_songs""#) })
    }

    @Test func linksOfNewRowsGoByCopyAndTheOthersByTheUpsert() throws {
        let (store, statements) = try observedStore()
        // Everything new: COPY alone.
        #expect(try save(#"[{"id":1,"songs":[{"id":10},{"id":11}]}]"#, store, statements) == (true, false))
        #expect(try links(store) == [["1", "10", "0"], ["1", "11", "1"]])

        // A stored playlist: the link to the new song 12 by COPY (the stored links' new positions are updates).
        #expect(try save(#"[{"id":1,"songs":[{"id":11},{"id":12},{"id":10}]}]"#, store, statements) == (true, false))
        #expect(try links(store) == [["1", "11", "0"], ["1", "12", "1"], ["1", "10", "2"]])

        // A new playlist of stored songs: COPY alone; a stored playlist given a stored song: the upsert alone.
        #expect(try save(#"[{"id":2,"songs":[10,12]}]"#, store, statements) == (true, false))
        #expect(try save(#"[{"id":1,"songs":[11,12,10]},{"id":2,"songs":[10,12,11]}]"#, store, statements) == (false, true))
        #expect(try links(store) == [
            ["1", "11", "0"], ["1", "12", "1"], ["1", "10", "2"], ["2", "10", "0"], ["2", "12", "1"], ["2", "11", "2"],
        ])

        // What a context reads back: the same lists, from both sides.
        try store.read { context in
            let first = try #require(try context.object(CopyPlaylist.self, identity: 1))
            #expect(first.songs.map(\.id) == [11, 12, 10])
            let song = try #require(try context.object(CopySong.self, identity: 11))
            #expect(song.playlists.map(\.id).sorted() == [1, 2])
        }
    }

    /// An import whose batches repeat records: the records' second occurrences relink stored rows (the upsert), their
    /// first insert them (COPY), and the store holds what one pass of the last occurrences leaves.
    @Test func anImportOfRepeatedRecordsLeavesTheLastOccurrencesLinks() throws {
        let (store, statements) = try observedStore()
        let records = (0..<300).map { index in
            let id = index % 200  // ids 0-99 twice: first among the first 200 records, again among the last 100
            let songs = index < 200 ? [id % 7, id % 11 + 100] : [id % 5 + 200, id % 7]
            return #"{"id":\#(id),"songs":[\#(songs.map { #"{"id":\#($0)}"# }.joined(separator: ","))]}"#
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("copy-links-\(UUID().uuidString).json")
        try Data(("[" + records.joined(separator: ",\n") + "]").utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        statements.withLock { $0.removeAll() }
        let report = try store.importJSON(CopyPlaylist.self, from: .file(url.path), options: ImportOptions(batchSize: 50))
        #expect(report.recordsRead == 300)
        let run = statements.withLock { $0 }
        #expect(run.contains { $0.hasPrefix(#"COPY "CopyPlaylist_songs""#) })
        #expect(run.contains { $0.hasPrefix(#"INSERT INTO "CopyPlaylist_songs""#) })
        var expected: [[String]] = []
        for id in 0..<200 {
            let songs = id < 100 ? [id % 5 + 200, id % 7] : [id % 7, id % 11 + 100]
            expected += songs.enumerated().map { ["\(id)", "\($0.element)", "\($0.offset)"] }
        }
        #expect(try links(store) == expected)
        #expect(try storedRows(store, #"SELECT count(*) FROM "CopyPlaylist""#) == [["200"]])
    }

    /// Loaded alone into empty tables, the join table's reverse index waits for the end (`LoadDeferral`): moving a
    /// link (its pair is the unique key) and relinking stored rows need no earlier build.
    @Test func reorderedLinksOfALoadAloneNeedNoEarlyIndexBuild() throws {
        let (store, statements) = try observedStore()
        let dump = FileManager.default.temporaryDirectory.appendingPathComponent("reordered-\(UUID().uuidString).json")
        try Data(#"""
            [{"id":1,"songs":[{"id":10},{"id":11},{"id":12}]},
             {"id":2,"songs":[{"id":11}]},
             {"id":1,"songs":[12,10,11]},
             {"id":2,"songs":[10,11]}]
            """#.utf8).write(to: dump)
        defer { try? FileManager.default.removeItem(at: dump) }
        statements.withLock { $0.removeAll() }
        var options = ImportOptions(batchSize: 2)
        options.exclusiveAccess = true
        let report = try store.importJSON(CopyPlaylist.self, from: .file(dump.path), options: options)
        #expect(report.exclusiveAccess == true)
        let run = statements.withLock { $0 }
        let moved = try #require(run.firstIndex { $0.hasPrefix(#"UPDATE "CopyPlaylist_songs" SET "position""#) })
        let made = try #require(run.firstIndex { $0.hasPrefix("CREATE INDEX") })
        #expect(made > moved)
        #expect(try links(store) == [["1", "12", "0"], ["1", "10", "1"], ["1", "11", "2"], ["2", "10", "0"], ["2", "11", "1"]])
    }
}
