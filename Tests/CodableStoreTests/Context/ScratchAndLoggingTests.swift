import CodableStore
import Foundation
import Logging
import Synchronization
import Testing

/// Collects log messages, for checking what the store logs.
private final class CollectingLogHandler: LogHandler, @unchecked Sendable {
    // @unchecked: `lines` is behind a Mutex; the other properties are set before use.
    let lines = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.level) \(event.message) \(event.metadata?["sql"].map { "\($0)" } ?? "")") }
    }
}

@Suite struct ScratchAndLoggingTests {
    @Test func scratchChangesAreVisibleInsideAndNeverSaved() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        let inside = try store.scratch { context -> Int in
            let draft = Person(id: 2, name: "Draft")
            try context.insert(draft)
            draft.country = Country(code: "XX", name: "Nowhere")
            try context.object(Person.self, identity: 1)?.name = "Changed"
            return try context.count(Person.self)
        }
        #expect(inside == 2)
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person") == [["1", "Ada"]])
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Country") == "0")
    }

    @Test func statementsAreLoggedAtTraceAndFailedWritesAtError() throws {
        let handler = CollectingLogHandler()
        let logger = Logger(label: "test", factory: { _ in handler })
        let store = try Store.inMemory(entities: TestStore.entities, options: .init(logger: logger))
        try store.write { try $0.insert(Person(id: 1)) }
        #expect(handler.lines.withLock { $0 }.contains { $0.hasPrefix("trace statement INSERT OR FAIL INTO \"Person\"") })
        #expect(handler.lines.withLock { $0 }.contains { $0.hasPrefix("info write saved") })
        _ = try? store.write { try $0.insert(Person(id: 1)) }
        #expect(handler.lines.withLock { $0 }.contains { $0.hasPrefix("error write rolled back") })
    }
}

@Suite struct ObservationLoggingTests {
    @Test func aFailingObservationIsLoggedNotSilent() async throws {
        let handler = CollectingLogHandler()
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(logger: Logger(label: "test", factory: { _ in handler })))
        // A query that cannot run ends the observation at once, with its failure and a reason in the log.
        var broken = store.observe(Person.self, where: .sql("no_such_column = 1")).makeAsyncIterator()
        #expect(try #require(await broken.next()).failure?.code == .observationFailed)
        #expect(await broken.next() == nil)
        #expect(handler.lines.withLock { $0 }.contains { $0.hasPrefix("error observation ended: its query failed") })
        // A refresh that fails after a transaction is logged and sent, and the observation goes on.
        try RawDatabase(path).execute("CREATE TABLE Allowed (id INTEGER)")
        var changes = store.observe(Person.self, where: .sql("id NOT IN (SELECT id FROM Allowed)")).makeAsyncIterator()
        #expect(try #require(await changes.next()).rows.isEmpty)
        try RawDatabase(path).execute("DROP TABLE Allowed")
        try await store.write { try $0.insert(Person(id: 1)) }
        let failed = try #require(await changes.next())
        #expect(failed.failure?.message == "the observation of Person could not read its results: no such table: Allowed")
        #expect(failed.rows.isEmpty)
        #expect(handler.lines.withLock { $0 }.contains { $0.hasPrefix("error observation refresh failed") })
        // Once the query runs again, a retry or the next commit's refresh catches up.
        try RawDatabase(path).execute("CREATE TABLE Allowed (id INTEGER)")
        try await store.write { try $0.insert(Person(id: 2)) }
        var caughtUp = try #require(await changes.next())
        if caughtUp.rows.count == 1 { caughtUp = try #require(await changes.next()) }  // the retry came first
        #expect(caughtUp.failure == nil)
        #expect(caughtUp.rows.count == 2)
    }
}
