import CodableStore
import Foundation
import Testing

@Suite struct ConcurrencyTests {
    @Test func readsDuringALongWriteNeitherFailNorSeeUncommittedRows() async throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try await store.write { try $0.insert(Person(id: 0, name: "committed")) }
        let inserted = Locked(false)
        let release = Locked(false)

        let writer = Task {
            try await store.write { context in
                for id in 1...500 { try context.insert(Person(id: id)) }
                try context.save()  // rows are in the database file, not committed
                inserted.withLock { $0 = true }
                while !release.withLock({ $0 }) { usleep(1_000) }
            }
        }
        while !inserted.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
        // Several concurrent readers while the write transaction is open.
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask { try await store.read { try $0.count(Person.self) } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts == [1, 1, 1, 1])
        release.withLock { $0 = true }
        try await writer.value
        #expect(try await store.read { try $0.count(Person.self) } == 501)
    }

    @Test func writesAreSerialized() async throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    try await store.write { context in
                        for id in 0..<50 { try context.insert(Person(id: writer * 1_000 + id)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.read { try $0.count(Person.self) } == 400)
    }
}

@Suite struct LockReentryTests {
    /// Taking the store's write lock again on the thread that holds it stops the program with a message; it does
    /// not hang (the locks are error-checking pthread mutexes).
    @Test func aWriteInsideAWriteStopsInsteadOfHanging() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let store = try Store.inMemory(entities: [Person.self])
            try store.write { _ in
                try store.write { _ in }
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("taken again on the thread that holds it"), "\(message)")
    }
}
