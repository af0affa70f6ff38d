import CodableStore
import Foundation
import Testing

/// Decoding arrays must cost a small constant number of lookup queries, not one per element.
@Suite struct BatchingTests {
    /// `count` issues with nested users (50 distinct, as objects or bare ids) and labels (20 distinct, mixed).
    static func payload(count: Int, firstID: Int = 0) -> Data {
        let elements = (0..<count).map { i -> String in
            let id = firstID + i
            let user = i % 2 == 0 ? #"{"id": \#(i % 50), "login": "user\#(i % 50)"}"# : "\(i % 50)"
            let labels = i % 3 == 0 ? #"[{"id": \#(i % 20), "name": "label\#(i % 20)"}, \#((i + 1) % 20)]"# : "[\(i % 20)]"
            return #"{"id": \#(id), "number": \#(id), "title": "issue \#(id)", "user": \#(user), "labels": \#(labels)}"#
        }
        return Data("[\(elements.joined(separator: ","))]".utf8)
    }

    private func selects(_ log: StatementLog) -> [String] {
        log.all.filter { $0.hasPrefix("SELECT") }
    }

    @Test func decodingAThousandIssuesRunsAConstantNumberOfLookups() throws {
        let log = StatementLog()
        let store = try Store(path: TestStore.temporaryPath(), entities: issueEntities, options: .init(statementObserver: log.observer))
        // One stored row per entity, so that identities must be looked up (an empty table needs no lookups,
        // see below). Stubs created for labels referenced by id before their object appears need a name:
        // Topic.name has a default.
        try store.write {
            _ = try StoreDecoder().decode(
                GitIssue.self, from: Data(#"{"id": -1, "number": 0, "title": "t", "user": {"id": -1}, "labels": [{"id": -1}]}"#.utf8),
                into: $0)
        }
        log.reset()
        try store.write { _ = try StoreDecoder().decode([GitIssue].self, from: Self.payload(count: 1_000), into: $0) }
        let first = selects(log)
        // Identity lookups: 1 for the 1,000 issues (ids 0-999: one range, see IdentityRanges), 1 for users, 1 for
        // topics; plus per entity one max(_pk) and one check whether its table is empty; and, as the save writes
        // links, which entities have record digests (whose rows' digests links clear).
        let lookups = first.filter { $0.contains(" IN (") || $0.contains(" BETWEEN ") }
        #expect(lookups.count == 3, "\(lookups)")
        #expect(lookups.filter { $0.hasPrefix(#"SELECT "_pk", "id", "number""#) && $0.hasSuffix(#""id" BETWEEN ? AND ?"#) }.count == 1)
        #expect(first.count == 10, "\(first.count) SELECTs: \(first)")
        #expect(first.filter { $0.contains("_codablestore_metadata") }.count == 1, "\(first)")
        #expect(try store.read { try $0.count(GitIssue.self) } == 1_001)
        #expect(try store.read { try $0.count(User.self) } == 51)
        #expect(try store.read { try $0.count(Topic.self) } == 21)

        // Re-decoding the same stored objects: memberships are loaded in batches too.
        log.reset()
        try store.write { _ = try StoreDecoder().decode([GitIssue].self, from: Self.payload(count: 1_000), into: $0) }
        let second = selects(log)
        #expect(second.count <= 16, "\(second.count) SELECTs: \(second.prefix(20))")
        #expect(log.writes.isEmpty, "\(log.writes.prefix(5))")
    }

    /// Into empty tables nothing needs looking up: the context knows every object there is.
    @Test func decodingIntoAnEmptyStoreLooksNothingUp() throws {
        let log = StatementLog()
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        log.reset()
        try store.write { context in
            _ = try StoreDecoder().decode([GitIssue].self, from: Self.payload(count: 1_000), into: context)
            // A second payload repeating the same identities finds them in memory: still no lookups.
            _ = try StoreDecoder().decode([GitIssue].self, from: Self.payload(count: 500), into: context)
        }
        #expect(!selects(log).contains { $0.contains(" IN (") || $0.contains(" BETWEEN ") }, "\(selects(log))")
        // Per entity the payload mentions (3), whether its table is empty and max(_pk); the model's other two
        // entities cost nothing. And once, which entities have record digests.
        #expect(selects(log).count == 7, "\(selects(log))")
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT count(*) FROM GitIssue") == "1000")
        #expect(try raw.value("SELECT count(*) FROM User") == "50")
        #expect(try raw.value("SELECT count(*) FROM Topic") == "20")
        #expect(try raw.value("SELECT count(DISTINCT id) FROM GitIssue") == "1000")
    }

    @Test func lookupsDoNotGrowWithTheNumberOfElements() throws {
        func count(_ elements: Int) throws -> Int {
            let log = StatementLog()
            let store = try Store.inMemory(entities: issueEntities, options: .init(statementObserver: log.observer))
            try store.write { _ = try StoreDecoder().decode([GitIssue].self, from: Self.payload(count: elements), into: $0) }
            return selects(log).count
        }
        let small = try count(200)
        let large = try count(2_000)
        // Only the number of 256-key chunks of the issues themselves grows (1 → 8).
        #expect(large - small <= 7, "200 elements: \(small) SELECTs, 2000 elements: \(large)")
    }
}
