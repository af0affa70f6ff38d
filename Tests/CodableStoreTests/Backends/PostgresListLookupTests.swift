import CodableStore
import Foundation
import Testing

@Entity final class RangeItem {
    var id: Int
    var name: String
    static let identity = Identity(\RangeItem.id)
}

/// On PostgreSQL, an import looks dense runs of integer identities up by range (`IdentityRanges`) and the others by
/// one array: the rows it finds, updates and inserts are those of the records, never the range's other rows. The
/// members of stored objects load with one array of owners too. Needs the server of `Scripts/with-postgres`.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs CODABLESTORE_POSTGRES_URL (Scripts/with-postgres)"))
struct PostgresListLookupTests {
    private func importItems(_ ids: [Int], named name: (Int) -> String, into store: Store) throws -> ImportReport {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("range-\(UUID().uuidString).json")
        let records = ids.map { #"{"id":\#($0),"name":"\#(name($0))"}"# }
        try Data(("[" + records.joined(separator: ",\n") + "]").utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        var options = ImportOptions(batchSize: 500)
        options.skipsUnchangedRecords = false
        return try store.importJSON(RangeItem.self, from: .file(url.path), options: options)
    }

    @Test func aRunOfIdentitiesIsLookedUpByRangeAndOnlyItsRecordsChange() throws {
        let statements = Locked<[String]>([])
        var storeOptions = Store.Options()
        storeOptions.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        let store = try Backend.postgres.makeStore(entities: [RangeItem.self], options: storeOptions)
        // Stored: 1-300 but the multiples of 10, and two far ids.
        let stored = (1...300).filter { $0 % 10 != 0 } + [5_000, 6_000]
        _ = try importItems(stored, named: { "old \($0)" }, into: store)

        // Again: 1-200 without 51-59 (stored, inside the run, not asked), the multiples of 10 among them (new rows
        // inside the run's range), 6,000 (stored, scattered) and 7,000 (new, scattered).
        let again = (1...200).filter { !(51...59).contains($0) } + [6_000, 7_000]
        statements.withLock { $0.removeAll() }
        let report = try importItems(again.shuffled(), named: { "new \($0)" }, into: store)
        let run = statements.withLock { $0 }
        #expect(run.contains { $0.hasPrefix(#"SELECT "_pk", "id", "name""#) && $0.contains("BETWEEN") })
        #expect(run.contains { $0.contains("= ANY (") })

        let inserted = again.filter { $0 % 10 == 0 && $0 <= 200 }.count + 1
        #expect(report.entities["RangeItem"] == EntityCounts(inserted: inserted, updated: again.count - inserted))
        let expected = Set(stored + again).sorted().map { id in
            ["\(id)", again.contains(id) ? "new \(id)" : "old \(id)"]
        }
        #expect(try storedRows(store, #"SELECT id, name FROM "RangeItem" ORDER BY id"#) == expected)
    }

    @Test func membersOfStoredObjectsLoadWithOneArrayOfOwners() throws {
        let statements = Locked<[String]>([])
        var storeOptions = Store.Options()
        storeOptions.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        let store = try Backend.postgres.makeStore(entities: [CopyPlaylist.self, CopySong.self], options: storeOptions)
        func playlists(_ ids: ClosedRange<Int>, songs: (Int) -> [Int]) -> Data {
            Data(("[" + ids.map { #"{"id":\#($0),"songs":[\#(songs($0).map(String.init).joined(separator: ","))]}"# }
                .joined(separator: ",") + "]").utf8)
        }
        func membershipLoads() -> [String] {
            statements.withLock { $0 }.filter { $0.hasPrefix(#"SELECT j."source""#) && $0.contains("CopyPlaylist_songs") }
        }
        let songs = Data(("[" + (0..<20).map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]").utf8)
        try store.write { context in
            _ = try StoreDecoder().decode([CopySong].self, from: songs, into: context)
            _ = try StoreDecoder().decode([CopyPlaylist].self, from: playlists(1...300) { [$0 % 20, ($0 + 1) % 20] }, into: context)
        }

        // Decoding into a context: the 300 stored playlists' songs in one statement (chunks of 64 owners before).
        statements.withLock { $0.removeAll() }
        try store.write { context in
            _ = try StoreDecoder().decode([CopyPlaylist].self, from: playlists(1...300) { [($0 + 2) % 20, $0 % 20] }, into: context)
        }
        #expect(membershipLoads().count == 1)
        #expect(membershipLoads().allSatisfy { $0.contains(#"FROM unnest(?::bigint[]) AS v ("owner")"#) })

        // An import's writer thread loads them the same way.
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("members-\(UUID().uuidString).json")
        try playlists(1...300) { [($0 + 3) % 20] }.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        statements.withLock { $0.removeAll() }
        _ = try store.importJSON(CopyPlaylist.self, from: .file(url.path), options: ImportOptions(batchSize: 500))
        #expect(!membershipLoads().isEmpty)
        #expect(membershipLoads().allSatisfy { $0.contains(#"FROM unnest(?::bigint[]) AS v ("owner")"#) })
        let expected = (1...300).map { ["\($0)", "\(($0 + 3) % 20)", "0"] }
        #expect(try storedRows(store, """
            SELECT p.id, s.id, j.position FROM "CopyPlaylist_songs" j JOIN "CopyPlaylist" p ON p._pk = j.source
            JOIN "CopySong" s ON s._pk = j.target ORDER BY p.id, j.position
            """) == expected)
    }
}
