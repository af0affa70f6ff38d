import CodableStore
import Foundation
import Testing

@Entity final class Rack {
    var id: Int
    var books: [Binder]?
    var genres: Set<Category>?
    static let identity = Identity(\Rack.id)
    init(id: Int) { self.id = id }
}

@Entity final class Binder {
    var id: Int
    var shelf: Rack?
    static let identity = Identity(\Binder.id)
    init(id: Int) { self.id = id }
}

@Entity final class Category {
    var name: String
    var racks: Set<Rack> = []
    static let identity = Identity(\Category.name)
    init(name: String) { self.name = name }
}

/// An optional to-many relationship (`[T]?`, `Set<T>?`) is a to-many relationship whose `nil` reads as empty.
@Suite struct OptionalToManyTests {
    @Test func nilIsNoMembersAndMembersAreStoredAndLoaded() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Rack.self, Binder.self, Category.self])
        try store.write { context in
            let empty = Rack(id: 1)
            #expect(empty.books == nil)
            try context.insert(empty)
            let full = Rack(id: 2)
            try context.insert(full)
            full.books = [Binder(id: 10), Binder(id: 11)]
            full.genres = [Category(name: "poetry")]
        }
        try store.read { context in
            let shelves = try context.fetch(Rack.self, orderBy: [.ascending(\.id)])
            #expect(shelves[0].books == [])  // loaded: an empty array, not nil
            #expect(shelves[0].genres == [])
            #expect(shelves[1].books?.map(\.id) == [10, 11])
            #expect(shelves[1].genres?.map(\.name) == ["poetry"])
            #expect(try context.object(Binder.self, identity: 11)?.shelf === shelves[1])
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT b.id, s.id FROM Binder b JOIN Rack s ON s._pk = b.shelf ORDER BY b.id") == [["10", "2"], ["11", "2"]])
        // Setting nil removes the members, as setting [] does.
        try store.write { context in try #require(try context.object(Rack.self, identity: 2)).books = nil }
        #expect(try raw.rows("SELECT count(*) FROM Binder WHERE shelf IS NOT NULL") == [["0"]])
    }

    @Test func theDecoderFillsThemFromJSON() throws {
        let store = try Store.inMemory(entities: [Rack.self, Binder.self, Category.self])
        try store.write { context in
            _ = try StoreDecoder().decode(
                [Rack].self, from: Data(#"[{"id": 1, "books": [{"id": 5}], "genres": [{"name": "essay"}]}, {"id": 2}]"#.utf8),
                into: context)
        }
        let books = try store.read { context in try context.fetch(Rack.self, orderBy: [.ascending(\.id)]).map { $0.books?.map(\.id) } }
        #expect(books == [[5], []])
    }
}
