import CodableStore
import Foundation
import Testing

@Suite struct FetchTests {
    private func populatedStore() throws -> Store {
        let store = try Store.inMemory(entities: TestStore.entities)
        try store.write { context in
            for (id, name, age) in [(1, "Ada", 36), (2, "Grace", 85), (3, "Alan", 41), (4, nil, 41), (5, "Linus", 20)] {
                try context.insert(Person(id: id, name: name, age: age))
            }
        }
        return store
    }

    @Test func filterSortLimitAndOffset() throws {
        let store = try populatedStore()
        try store.read { context in
            let adults = try context.fetch(Person.self, where: \.age >= 36, orderBy: [.descending(\.age), .ascending(\.id)])
            #expect(adults.map(\.id) == [2, 3, 4, 1])
            let page = try context.fetch(Person.self, orderBy: [.ascending(\.id)], limit: 2, offset: 1)
            #expect(page.map(\.id) == [2, 3])
            let unnamed = try context.fetch(Person.self, where: \.name == nil)
            #expect(unnamed.map(\.id) == [4])
            // Like Swift: != keeps nil.
            let notAda = try context.fetch(Person.self, where: \.name != "Ada")
            #expect(notAda.map(\.id) == [2, 3, 4, 5])
            let either = try context.fetch(Person.self, where: \.age < 30 || \.name == "Ada")
            #expect(either.map(\.id) == [1, 5])
            let notOld = try context.fetch(Person.self, where: !(\.age > 40))
            #expect(notOld.map(\.id) == [1, 5])
            let some = try context.fetch(Person.self, where: .isIn(\.id, [5, 1, 9]))
            #expect(some.map(\.id) == [1, 5])
            let raw = try context.fetch(Person.self, where: .sql("length(\"name\") = ?", [.integer(4)]))
            #expect(raw.map(\.id) == [3])
            #expect(try context.count(Person.self) == 5)
            #expect(try context.count(Person.self, where: \.age == 41) == 2)
            #expect(try context.first(Person.self, orderBy: [.descending(\.age)])?.id == 2)
        }
    }

    @Test func valuesThatLookLikeSQLAreStoredAndMatchedLiterally() throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        let evil = "x'); DROP TABLE \"Person\"; --"
        try store.write { try $0.insert(Person(id: 1, name: evil)) }
        let found = try store.read { try $0.fetch(Person.self, where: \.name == evil).map(\.id) }
        #expect(found == [1])
    }

    @Test func fetchSeesPendingChangesOfTheWriteContext() throws {
        let store = try populatedStore()
        try store.write { context in
            try context.insert(Person(id: 6, name: "New", age: 99))
            try #require(try context.object(Person.self, identity: 1)).age = 100
            let old = try context.fetch(Person.self, where: \.age >= 99).map(\.id)
            #expect(old == [1, 6])
        }
    }

    @Test func keyPathThatIsNotStoredIsAnInvalidQuery() throws {
        let store = try populatedStore()
        let error = try #require(throws: StoreError.self) {
            try store.read { _ = try $0.fetch(Person.self, where: \.name?.count == 3) }
        }
        #expect(error.code == .invalidQuery)
    }
}
