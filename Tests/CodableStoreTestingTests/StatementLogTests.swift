import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// Query budgets and the statement log.
@Suite struct StatementLogTests {
    static func seeded() throws -> FixtureStore {
        try FixtureStore(
            entities: entities,
            fixtures: [.records(Author.self, "authors.json", in: .folder()), .records(Post.self, "posts.json", in: .bundle(Bundle.module))])
    }

    @Test func aClosureWithinItsBudgetReturnsItsValue() throws {
        let fixture = try Self.seeded()
        let titles = try fixture.statements.expectQueries(atMost: 1) {
            try fixture.store.read { context in try context.fetch(Post.self, orderBy: [.ascending(\.id)]).map(\.title) }
        }
        #expect(titles == ["Engines", "Notes"])
    }

    @Test func anNPlusOneLoadExceedsItsBudgetAndListsTheStatements() throws {
        let fixture = try Self.seeded()
        let error = try #require(throws: FixtureError.self) {
            try fixture.statements.expectQueries(atMost: 1) {
                try fixture.store.read { context in
                    try context.fetch(Post.self, orderBy: [.ascending(\.id)]).map { $0.author?.login ?? "" }  // one load per post
                }
            }
        }
        #expect(error.kind == .budgetExceeded)
        let lines = error.message.split(separator: "\n")
        #expect(lines.first == "3 queries ran, over the budget of 1:")
        #expect(lines[3] == #"  3. SELECT "_pk", "id", "login" FROM "Author" WHERE "_pk" = ?"#)
        #expect(lines.count == 4)
        #expect(lines.dropFirst().allSatisfy { $0.contains("SELECT") })
        #expect(lines[1].hasPrefix("  1. SELECT"))
    }

    @Test func exactKindsLeaveTransactionControlOut() throws {
        let fixture = try Self.seeded()
        try fixture.statements.expectStatements([.select, .update]) {
            try fixture.store.write { context in
                try #require(try context.object(Post.self, identity: 10)).title = "Engines, revised"
            }
        }
        let error = try #require(throws: FixtureError.self) {
            try fixture.statements.expectStatements([.select]) {
                try fixture.store.write { context in try context.insert(Author(id: 9, login: "new")) }
            }
        }
        // An insert reads the largest row id first.
        #expect(error.message.hasPrefix(#"expected statements ["select"], ran ["select", "insert"]:"#), "\(error)")
        #expect(error.message.split(separator: "\n").last?.hasPrefix("  2. INSERT OR FAIL INTO \"Author\"") == true, "\(error)")
    }

    @Test func theLogRecordsForAStoreOfYourOwnAfterItsObserver() throws {
        let log = StatementLog()
        let seen = StatementLog()
        var options = Store.Options()
        options.statementObserver = { seen.record($0) }
        let store = try Store.inMemory(entities: entities, options: log.recording(into: options))
        log.removeAll()
        seen.removeAll()
        let (count, statements) = try log.statements { try store.read { try $0.count(Author.self) } }
        #expect(count == 0)
        #expect(statements.map(StatementKind.init(sql:)) == [.transaction, .select, .transaction])
        #expect(seen.statements == log.statements)
    }

    @Test(arguments: [
        ("SELECT 1", StatementKind.select), ("  with x as (select 1) select * from x", .select), ("INSERT INTO t VALUES (1)", .insert),
        ("REPLACE INTO t VALUES (1)", .insert), ("UPDATE t SET a = 1", .update), ("DELETE FROM t", .delete),
        ("BEGIN IMMEDIATE TRANSACTION", .transaction), ("SAVEPOINT s", .transaction), ("RELEASE s", .transaction),
        ("COMMIT", .transaction), ("CREATE TABLE t (a)", .schema), ("PRAGMA foreign_keys = ON", .pragma), ("ANALYZE", .other),
    ])
    func statementKinds(sql: String, kind: StatementKind) {
        #expect(StatementKind(sql: sql) == kind)
    }
}
