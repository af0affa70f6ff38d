import CodableStore
import Foundation
import Testing

@Suite struct ObservationTests {
    @Test func initialResultsThenOneChangePerCommittedTransaction() async throws {
        struct Abort: Error {}
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try await store.write { context in
            try context.insert(Person(id: 1, name: "Ada", age: 36))
            try context.insert(Person(id: 2, name: "Grace", age: 85))
        }
        var changes = store.observe(Person.self, where: \.age >= 30, orderBy: [.ascending(\.age)]).makeAsyncIterator()

        let initial = try #require(await changes.next())
        #expect(initial.rows.map(\.rowID.description) == ["1", "2"])
        #expect(initial.inserted == [0, 1])
        #expect(initial.rows[0][\.name] == "Ada")

        // Inserted (one transaction with two changes gives one element).
        try await store.write { context in
            try context.insert(Person(id: 3, name: "Alan", age: 41))
            try context.insert(Person(id: 4, name: "Young", age: 10))  // does not match
        }
        let insert = try #require(await changes.next())
        #expect(insert.rows.map { $0[\.name] } == ["Ada", "Alan", "Grace"])
        #expect(insert.inserted == [1])
        #expect(insert.deleted.isEmpty && insert.updated.isEmpty && insert.moved.isEmpty)

        // A rolled-back transaction sends nothing; a transaction on another entity sends nothing.
        _ = try? await store.write { context -> Void in
            try context.object(Person.self, identity: 1)?.age = 99
            throw Abort()
        }
        try await store.write { try $0.insert(Tag(id: 1, label: "unrelated")) }

        // Updated and moved: Ada becomes the oldest.
        try await store.write { try #require(try $0.object(Person.self, identity: 1)).age = 90 }
        let update = try #require(await changes.next())
        #expect(update.rows.map { $0[\.name] } == ["Alan", "Grace", "Ada"])
        #expect(update.rows[2][\.age] == 90)
        #expect(update.updated == [2])
        #expect(update.moved.contains(QueryChange<Person>.Move(from: 0, to: 2)))
        #expect(update.inserted.isEmpty && update.deleted.isEmpty)

        // Deleted.
        _ = try await store.write { try $0.deleteAll(Person.self, where: \.name == "Grace") }
        let delete = try #require(await changes.next())
        #expect(delete.deleted == [1])
        #expect(delete.rows.count == 2)
    }

    @Test func oneObjectCanBeObservedByIdentity() async throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        var changes = store.observe(Person.self, identity: 7).makeAsyncIterator()
        #expect(try #require(await changes.next()).rows.isEmpty)
        try await store.write { try $0.insert(Person(id: 7, name: "Ken")) }
        let inserted = try #require(await changes.next())
        #expect(inserted.rows.map { $0[\.name] } == ["Ken"])
        try await store.write { try #require(try $0.object(Person.self, identity: 7)).name = "Kenneth" }
        #expect(try #require(await changes.next()).updated == [0])
    }

    @Test func observationsEndWhenTheStoreGoesAway() async throws {
        var store: Store? = try Store.inMemory(entities: TestStore.entities)
        let observation = try #require(store).observe(Person.self)
        let task = Task {
            var count = 0
            for await _ in observation { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(20))
        store = nil
        #expect(await task.value == 1)
    }

    @Test func cancellingTheObservingTaskEndsTheSequence() async throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        let observation = store.observe(Person.self)
        let task = Task {
            var count = 0
            for await _ in observation { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let received = await task.value
        #expect(received >= 1)
        // Writes after cancellation are not delivered anywhere and do not fail.
        try await store.write { try $0.insert(Person(id: 1)) }
    }
}

@Suite struct SnapshotTests {
    @Test func snapshotsAreSendableTypedCopiesOfStoredValues() async throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try await store.write { context in
            let ada = Person(id: 1, name: "Ada", age: 36)
            try context.insert(ada)
            ada.country = Country(code: "GB", name: "United Kingdom")
        }
        // Snapshots cross from the read closure to this task.
        let snapshots = try await store.read { try $0.snapshots(Person.self, orderBy: [.ascending(\.id)]) }
        let ada = try #require(snapshots.first)
        #expect(ada[\.id] == 1 && ada[\.name] == "Ada" && ada[\.age] == 36)
        #expect(ada[field: "age"] == .integer(36))
        let countryRow = try #require(ada.rowID(of: \.country))
        let code = try await store.read { try $0.object(Country.self, rowID: countryRow)?.code }
        #expect(code == "GB")
        // A copy: later writes do not change it.
        try await store.write { try #require(try $0.object(Person.self, identity: 1)).age = 37 }
        #expect(ada[\.age] == 36)
        let fresh = try await store.write { context in try context.snapshot(of: try #require(try context.object(Person.self, identity: 1))) }
        #expect(fresh?[\.age] == 37)
    }
}
