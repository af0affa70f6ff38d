import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// A store's rows against a literal table.
@Suite struct RowExpectationTests {
    static func seeded() throws -> FixtureStore {
        try FixtureStore(entities: entities, fixtures: [.records(Post.self, "posts.json")], location: .bundle(Bundle.module))
    }

    @Test func matchingRowsPass() throws {
        let fixture = try Self.seeded()
        try fixture.store.expectRows(Post.self, ["id", "title"], orderBy: [.ascending(\.id)], [[10, "Engines"], [11, "Notes"]])
        try fixture.store.expectRows(Author.self, ["id", "login"], orderBy: [.ascending(\.id)], [[1, nil], [2, "bob"]])
        try fixture.store.expectRows(Post.self, ["title"], where: \.id > 10, [["Notes"]])
    }

    @Test func aDifferentValueNamesItsRowAndFieldAndListsTheStoresRows() throws {
        let fixture = try Self.seeded()
        let error = try #require(throws: FixtureError.self) {
            try fixture.store.expectRows(Post.self, ["id", "title"], orderBy: [.ascending(\.id)], [[10, "Engines"], [11, "Note"]])
        }
        #expect(error.kind == .rowsMismatch)
        #expect(
            error.message == """
                Post row 2, title: expected "Note", store "Notes"; the store's rows (id, title):
                  [10, "Engines"]
                  [11, "Notes"]
                """)
    }

    @Test func aMissingRowIsACountMismatch() throws {
        let fixture = try Self.seeded()
        let error = try #require(throws: FixtureError.self) {
            try fixture.store.expectRows(Post.self, ["id"], orderBy: [.ascending(\.id)], [[10]])
        }
        #expect(error.message.hasPrefix("Post: expected 1 rows, the store has 2; the store's rows (id):"), "\(error)")
    }

    @Test func aWrongExpectationSaysSo() throws {
        let fixture = try Self.seeded()
        let unknown = try #require(throws: FixtureError.self) { try fixture.store.expectRows(Post.self, ["author"], [[1], [2]]) }
        #expect(unknown.kind == .invalidExpectation)
        #expect(unknown.message == "Post has no attribute named 'author'")
        let short = try #require(throws: FixtureError.self) { try fixture.store.expectRows(Post.self, ["id", "title"], [[10], [11, "Notes"]]) }
        #expect(short.message == "row 1 of the expected Post rows has 1 values for 2 fields")
    }
}
