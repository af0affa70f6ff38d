import CodableStore
import Foundation
import Synchronization
import Testing

// Versions of one entity: the macro names the entity after the class, so each version is a class named
// `Item` nested in its own namespace.
enum V1 {
    @Entity final class Item {
        var id: Int
        var title: String
        static let identity = Identity(\Item.id)
        init(id: Int, title: String) {
            self.id = id
            self.title = title
        }
    }
}

/// Additive: a new optional attribute, a new attribute with a default, a new relationship, a new entity.
enum V2 {
    @Entity final class Item {
        var id: Int
        var title: String
        var note: String?
        var rank: Int = 5
        var owner: Owner?
        static let identity = Identity(\Item.id)
        init(id: Int, title: String) {
            self.id = id
            self.title = title
        }
    }
    @Entity final class Owner {
        var name: String
        var items: Set<Item> = []
        init(name: String) { self.name = name }
    }
}

/// Incompatible: `title` changed type.
enum V3 {
    @Entity final class Item {
        var id: Int
        var title: Int
        static let identity = Identity(\Item.id)
        init(id: Int, title: Int) {
            self.id = id
            self.title = title
        }
    }
}

@Suite struct MigrationTests {
    @Test func additiveChangesAreAppliedAndKeepTheData() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: [V1.Item.self])
            try store.write { try $0.insert(V1.Item(id: 1, title: "first")) }
        }
        let store = try Store(path: path, entities: [V2.Item.self])
        try store.write { context in
            let item = try #require(try context.object(V2.Item.self, identity: 1))
            #expect(item.title == "first")
            #expect(item.note == nil)
            #expect(item.rank == 5)  // the default fills existing rows
            item.owner = V2.Owner(name: "Ada")
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT i.title, i.rank, o.name FROM Item i JOIN Owner o ON o._pk = i.owner") == [["first", "5", "Ada"]])
    }

    @Test func anIncompatibleChangeIsAnErrorThatNamesTheDifference() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: [V1.Item.self])
            try store.write { try $0.insert(V1.Item(id: 1, title: "first")) }
        }
        let error = try #require(throws: StoreError.self) { try Store(path: path, entities: [V3.Item.self]) }
        #expect(error.code == .schemaMismatch)
        #expect(error.differences == ["Item.title: type changed from String to Int"])
        #expect(error.message.contains(".reset"))
        // Nothing changed on disk.
        #expect(try RawDatabase(path).rows("SELECT title FROM Item") == [["first"]])
        // Removing an attribute is not additive either.
        let removed = try #require(throws: StoreError.self) { try Store(path: path, entities: [V2.Owner.self, V1.Item.self]) }
        #expect(removed.differences.isEmpty == false)
    }

    @Test func theResetPolicyDropsAndRecreatesAndCallsBack() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: [V1.Item.self])
            try store.write { try $0.insert(V1.Item(id: 1, title: "first")) }
        }
        let reported = Mutex<[String]>([])
        let store = try Store(
            path: path, entities: [V3.Item.self],
            options: .init(schemaChangePolicy: .reset { differences in reported.withLock { $0 = differences } }))
        #expect(reported.withLock { $0 } == ["Item.title: type changed from String to Int"])
        #expect(try store.read { try $0.count(V3.Item.self) } == 0)
        try store.write { try $0.insert(V3.Item(id: 1, title: 42)) }
        #expect(try RawDatabase(path).rows("SELECT typeof(title) FROM Item") == [["integer"]])
    }
}
