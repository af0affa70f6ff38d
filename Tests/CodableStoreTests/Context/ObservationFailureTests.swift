import CodableStore
import CodableStoreCore
import Foundation
import Logging
import Testing

/// What an observation's sequence sent, collected by a task that iterates it: the test waits for what it expects
/// (with a deadline) instead of blocking on `next()`.
///
/// Behind `Locked` (a pthread mutex), not `Mutex`: the task appends while the test reads, and ThreadSanitizer cannot
/// see a contended `Mutex` hand over (a CI run reported a race between `count` and the appending task).
final class ObservationRecorder<Entity: EntityObject>: Sendable {
    let changes = Locked<[QueryChange<Entity>]>([])
    /// How the sequence ended: nil while it goes on, then the error it threw (or nil inside for a normal end).
    let end = Locked<(any Error)??>(nil)

    var all: [QueryChange<Entity>] { changes.withLock { $0 } }
    var count: Int { changes.withLock { $0.count } }
    var hasEnded: Bool { end.withLock { $0 != nil } }

    init(_ stream: QueryObservation<Entity>) {
        Task { [self] in
            for await change in stream { changes.withLock { $0.append(change) } }
            end.withLock { $0 = .some(nil) }
        }
    }

    init(_ stream: ThrowingQueryObservation<Entity>) {
        Task { [self] in
            do {
                for try await change in stream { changes.withLock { $0.append(change) } }
                end.withLock { $0 = .some(nil) }
            } catch {
                end.withLock { $0 = .some(error) }
            }
        }
    }

    /// Waits until `condition` holds, at most `seconds`; returns whether it held.
    ///
    /// The bound only ends a wait that would never succeed: the whole suite runs in parallel on two cores, where a
    /// delivery can wait behind blocking tests for tens of seconds (a 10-second bound failed so in CI). A wait past
    /// the deadline yields once more so that a delivery queued behind this task is still seen.
    @discardableResult
    func wait(seconds: Double = 120, until condition: (ObservationRecorder) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition(self) {
            if ContinuousClock.now >= deadline {
                try? await Task.sleep(for: .milliseconds(100))
                return condition(self)
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}

private final class LogLines: LogHandler, @unchecked Sendable {
    // @unchecked: `lines` is behind a lock; the other properties are set before use.
    let lines = Locked<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.level) \(event.message)") }
    }
}

/// A store on a VFS that fails every read from the next commit on, until it is disarmed: the commit succeeds, and
/// the refresh of the observations after it cannot read the results (a disk that started failing).
private final class FailingStore: Sendable {
    let vfs = FaultInjectingVFS()
    let path = TestStore.temporaryPath()
    let failsAtCommit = Locked(false)
    let log = LogLines()

    func open() throws -> Store {
        try Store(
            path: path, entities: TestStore.entities,
            options: .init(
                // Called as each statement starts: the COMMIT itself reads nothing, the refresh's SELECT does.
                statementObserver: { [self] sql in
                    guard sql.hasPrefix("COMMIT"), failsAtCommit.withLock({ $0 }) else { return }
                    vfs.arm(.init(.read, nth: 1, persistent: true))
                },
                logger: Logger(label: "test", factory: { _ in log }), vfs: vfs.name))
    }

    /// Writes `person`; the reads after its commit fail.
    func writeThenFailReads(_ store: Store, _ person: @escaping @Sendable () -> Person) async throws {
        failsAtCommit.withLock { $0 = true }
        defer { failsAtCommit.withLock { $0 = false } }
        try await store.write { try $0.insert(person()) }
    }
}

private let failureDescription = #"StoreError.observationFailed: the observation of Person could not read its results: disk I/O error (cause: SQLite error 266 (SQLITE_IOERR_READ): disk I/O error - while executing 'SELECT "_pk", "id", "name", "age", "country" FROM "Person" ORDER BY "id" ASC, "_pk"')"#

@Suite struct ObservationFailureTests {
    @Test func aFailedRefreshIsSentWithTheLastRowsAndTheObservationRecoversOnceTheDiskDoes() async throws {
        let failing = FailingStore()
        defer { failing.vfs.unregister() }
        do {
            let store = try failing.open()
            try await store.write { try $0.insert(Person(id: 1, name: "Ada")) }
            let received = ObservationRecorder(store.observe(Person.self, orderBy: [.ascending(\.id)]))
            #expect(await received.wait { $0.count == 1 })
            let initial = received.all[0]

            try await failing.writeThenFailReads(store) { Person(id: 2, name: "Grace") }
            #expect(await received.wait { $0.count == 2 })
            let failed = received.all[1]
            let failure = try #require(failed.failure)
            #expect(failure.code == .observationFailed)
            #expect(failure.entity == "Person")
            #expect(failure.description == failureDescription)
            #expect((failure.cause as? SQLiteError)?.resultCode.name == "SQLITE_IOERR_READ")
            // The rows last read (Ada alone), nothing changed: what the observer shows is out of date, and says so.
            #expect(failed.rows == initial.rows && failed.isEmpty)

            // The retries (after 0.1, 0.2, 0.4 s) fail too, and send nothing more.
            try await Task.sleep(for: .milliseconds(500))
            #expect(received.count == 2)
            #expect(failing.vfs.injected >= 3)

            // The disk works again: without any commit, a retry reads the results and sends the change from Ada alone.
            failing.vfs.disarm()
            #expect(await received.wait { $0.count == 3 })
            let recovered = received.all[2]
            #expect(recovered.failure == nil)
            #expect(recovered.rows.map { $0[\.name] } == ["Ada", "Grace"])
            #expect(recovered.inserted == [1] && recovered.deleted.isEmpty && recovered.updated.isEmpty)

            // And it goes on as before.
            try await store.write { try #require(try $0.object(Person.self, identity: 1)).name = "Ada L." }
            #expect(await received.wait { $0.count == 4 })
            #expect(received.all[3].updated == [0] && received.all[3].failure == nil)
            #expect(!received.hasEnded)
            let lines = failing.log.lines.withLock { $0 }
            #expect(lines.filter { $0 == "error observation refresh failed" }.count == 1)
            #expect(lines.contains("info observation refresh recovered"))
        }
    }

    @Test func aCommitWhileTheDiskFailsSendsNothingMoreAndTheRecoveryHasBothCommits() async throws {
        let failing = FailingStore()
        defer { failing.vfs.unregister() }
        do {
            let store = try failing.open()
            let received = ObservationRecorder(store.observe(Person.self, orderBy: [.ascending(\.id)]))
            #expect(await received.wait { $0.count == 1 })
            try await failing.writeThenFailReads(store) { Person(id: 1, name: "Ada") }
            #expect(await received.wait { $0.count == 2 })
            #expect(received.all[1].failure?.description == failureDescription)
            #expect(received.all[1].rows.isEmpty)
            // A write whose pages the writer has in its cache commits; its refresh fails too, and sends nothing.
            try await store.write { try $0.insert(Person(id: 2, name: "Grace")) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(received.count == 2)
            failing.vfs.disarm()
            #expect(await received.wait { $0.count == 3 })
            #expect(received.all[2].rows.map { $0[\.name] } == ["Ada", "Grace"])
            #expect(received.all[2].inserted == [0, 1])
        }
    }

    @Test func theThrowingSequenceEndsWithTheFailureAndANewOneStartsFromTheRowsAsTheyAre() async throws {
        let failing = FailingStore()
        defer { failing.vfs.unregister() }
        do {
            let store = try failing.open()
            try await store.write { try $0.insert(Person(id: 1, name: "Ada")) }
            let received = ObservationRecorder(store.observeThrowing(Person.self, orderBy: [.ascending(\.id)]))
            #expect(await received.wait { $0.count == 1 })
            try await failing.writeThenFailReads(store) { Person(id: 2, name: "Grace") }
            #expect(await received.wait { $0.hasEnded })
            let error = try #require(received.end.withLock { $0 ?? nil } as? StoreError)
            #expect(error.code == .observationFailed)
            #expect(error.description == failureDescription)
            #expect((error.cause as? SQLiteError)?.resultCode.name == "SQLITE_IOERR_READ")
            #expect(received.count == 1)  // no change carries a failure in this sequence
            // Nothing retries it: once the disk works again, it has stayed ended.
            failing.vfs.disarm()
            try await Task.sleep(for: .milliseconds(300))
            #expect(received.count == 1)
            // A new observation starts from the results as they are, and goes on.
            let again = ObservationRecorder(store.observeThrowing(Person.self, orderBy: [.ascending(\.id)]))
            #expect(await again.wait { $0.count == 1 })
            #expect(again.all[0].rows.map { $0[\.name] } == ["Ada", "Grace"])
            try await store.write { try $0.insert(Person(id: 3, name: "Linus")) }
            #expect(await again.wait { $0.count == 2 })
            #expect(again.all[1].inserted == [2])
        }
    }

    @Test func aQueryThatCannotRunIsAFailureThenTheEnd() async throws {
        let store = try Store.inMemory(entities: TestStore.entities + [Membership.self])
        let broken = ObservationRecorder(store.observe(Person.self, where: .sql("no_such_column = 1")))
        #expect(await broken.wait { $0.hasEnded })
        #expect(broken.count == 1)
        #expect(broken.all[0].rows.isEmpty)
        #expect(broken.all[0].failure?.description == #"StoreError.observationFailed: the observation of Person could not read its results: no such column: no_such_column (cause: SQLite error 1 (SQLITE_ERROR): no such column: no_such_column - while executing 'SELECT "_pk", "id", "name", "age", "country" FROM "Person" WHERE (no_such_column = 1) ORDER BY "_pk"')"#)

        let throwing = ObservationRecorder(store.observeThrowing(Person.self, where: .sql("no_such_column = 1")))
        #expect(await throwing.wait { $0.hasEnded })
        #expect(throwing.count == 0)
        #expect((throwing.end.withLock { $0 ?? nil } as? StoreError)?.code == .observationFailed)

        // An identity of two attributes cannot be observed by one value.
        let composite = ObservationRecorder(store.observeThrowing(Membership.self, identity: 1))
        #expect(await composite.wait { $0.hasEnded })
        #expect((composite.end.withLock { $0 ?? nil } as? StoreError)?.description == "StoreError.observationFailed: the observation of Membership could not read its results: Membership's identity is [team, user], not one attribute: observe it with a predicate (cause: StoreError.invalidQuery: Membership's identity is [team, user], not one attribute: observe it with a predicate)")
    }
}
