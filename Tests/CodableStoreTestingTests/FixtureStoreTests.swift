import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// Seeding a store from fixtures: where they are found, what they hold, and where their errors are.
@Suite struct FixtureStoreTests {
    static let resources = FixtureLocation.bundle(Bundle.module)

    static func titles(_ store: Store) throws -> [Int: String] {
        try store.read { context in
            Dictionary(uniqueKeysWithValues: try context.fetch(Post.self).map { ($0.id, $0.title) })
        }
    }

    @Test func fixturesNextToTheTestFileAndInTheBundleLoadInOrderIntoTheStoreFile() throws {
        let fixture = try FixtureStore(
            entities: entities,
            fixtures: [.records(Author.self, "authors.json"), .records(Post.self, "posts.json", in: Self.resources)],
            storage: .temporaryFile)
        // The rows, read back from the file by a connection of its own.
        let path = fixture.store.path
        let connection = try Connection(path: path, mode: .readOnly)
        #expect(try connection.scalar(sql: "SELECT group_concat(id || ':' || login, ',') FROM (SELECT * FROM Author ORDER BY id)") == .text("1:ada,2:bob"))
        #expect(try connection.scalar(sql: "SELECT count(*) FROM Post") == .integer(2))
        #expect(try connection.scalar(sql: "SELECT a.login FROM Post p JOIN Author a ON a._pk = p.author WHERE p.id = 10") == .text("ada"))
        #expect(try connection.scalar(sql: "SELECT count(*) FROM Tag") == .integer(2))
    }

    @Test func theTemporaryFileIsRemovedWithTheFixtureStore() throws {
        var fixture: FixtureStore? = try FixtureStore(entities: entities, storage: .temporaryFile)
        let path = try #require(fixture?.store.path)
        #expect(FileManager.default.fileExists(atPath: path))
        fixture = nil
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aSingleObjectJSONLinesAFolderOfPagesAndAWrappedResponse() throws {
        let fixture = try FixtureStore(entities: entities, location: Self.resources)
        try fixture.load([.records(Post.self, "single-post.json"), .records(Post.self, "posts.jsonl")])
        try fixture.load([.folder(Post.self, "pages"), .value(SearchPage.self, "search.json")])
        #expect(
            try Self.titles(fixture.store) == [
                60: "Alone", 30: "Line one", 31: "Line two", 20: "First page, edited", 21: "Second page", 70: "Found",
                71: "Also found",
            ])
        let authors = try fixture.store.read { context in try context.fetch(Author.self, orderBy: [.ascending(\.id)]).map { "\($0.id):\($0.login ?? "-")" } }
        #expect(authors == ["1:ada", "3:cy"])
    }

    @Test func theDecoderGivenIsTheOneUsed() throws {
        let decoder = StoreDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let fixture = try FixtureStore(entities: entities, decoder: decoder, location: Self.resources)
        // With the key strategy, "total_count" is "totalCount", which SearchPage does not have.
        let error = try #require(throws: FixtureError.self) { try fixture.load([.value(SearchPage.self, "search.json")]) }
        #expect(error.kind == .invalidFixture)
        #expect(error.message.contains("total_count"), "\(error)")
    }

    @Test func aValueOfTheWrongTypeIsLocatedByFileLineColumnAndPath() throws {
        let fixture = try FixtureStore(entities: entities, location: Self.resources)
        let error = try #require(throws: FixtureError.self) { try fixture.load([.records(Post.self, "wrong-type.json")]) }
        #expect(error.kind == .invalidFixture)
        #expect(error.file?.hasSuffix("Fixtures/wrong-type.json") == true)
        #expect(error.line == 4)
        #expect(error.column == 13)
        #expect(error.jsonPath == "[1].title")
        #expect(error.message == "Expected to decode String but found number instead.")
        #expect(error.description.hasSuffix("wrong-type.json:4:13 at [1].title: \(error.message)"))
        // Nothing of the failing fixture is stored.
        #expect(try Self.titles(fixture.store).isEmpty)
    }

    @Test func aSyntaxErrorIsLocatedByFileLineAndColumn() throws {
        let error = try #require(throws: FixtureError.self) {
            _ = try FixtureStore(entities: entities, fixtures: [.records(Post.self, "broken.json")], location: Self.resources)
        }
        #expect(error.kind == .invalidFixture)
        #expect(error.file?.hasSuffix("broken.json") == true)
        #expect(error.line == 4)
        #expect(error.column == 1)
        #expect(error.message.hasPrefix("invalid JSON: "), "\(error)")
    }

    @Test func aJSONLinesErrorIsLocatedByTheImporter() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fixtures-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("{\"id\": 1, \"title\": \"a\"}\n{\"id\": 2, \"title\": [\"b\"]}\n".utf8).write(to: folder.appendingPathComponent("bad.jsonl"))
        let error = try #require(throws: FixtureError.self) {
            _ = try FixtureStore(entities: entities, fixtures: [.records(Post.self, "bad.jsonl")], location: .folder(at: folder))
        }
        #expect(error.line == 2)
        #expect(error.jsonPath?.hasSuffix("title") == true, "\(error)")
    }

    @Test func aMissingFixtureSaysWhereItWasLookedFor() throws {
        let error = try #require(throws: FixtureError.self) {
            _ = try FixtureStore(entities: entities, fixtures: [.records(Post.self, "nowhere.json")])
        }
        #expect(error.kind == .notFound)
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
        #expect(error.description == "nowhere.json: no fixture 'nowhere.json' in \(here)/Fixtures or \(here)")
    }
}

/// A seed folder: files of several entities, in name order, each entity known by its file name.
@Suite struct SeedFolderTests {
    @Test func filesLoadInNameOrderAsTheEntityTheirNameStartsWith() throws {
        let fixture = try FixtureStore(entities: entities, fixtures: [.folder("seed", in: .bundle(Bundle.module))])
        try fixture.store.expectRows(Author.self, ["id", "login"], orderBy: [.ascending(\.id)], [[1, "ada"], [2, "bob"]])
        try fixture.store.expectRows(Post.self, ["id", "title"], orderBy: [.ascending(\.id)], [[10, "Engines"], [11, "Notes"]])
        try fixture.store.expectRows(Tag.self, ["name"], [["math"]])
        let authors = try fixture.store.read { context in try context.fetch(Post.self, orderBy: [.ascending(\.id)]).map { $0.author?.login } }
        #expect(authors == ["ada", "bob"])
    }

    @Test func aFileOfNoEntityNamesTheEntities() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("seed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("[]".utf8).write(to: folder.appendingPathComponent("01-Postman.json"))
        let error = try #require(throws: FixtureError.self) {
            _ = try FixtureStore(entities: entities, fixtures: [.folder("", in: .folder(at: folder))])
        }
        #expect(error.message == "the file name starts with no entity of the store (Author, Post, Tag)")
        #expect(error.file?.hasSuffix("01-Postman.json") == true)
    }
}

/// Fixtures of entities described at run time (a model file's) load as a class's do.
@Suite struct RuntimeFixtureTests {
    /// The test model (Author, Post, Tag) described at run time, with the same names, keys and relationships.
    static func runtimeEntities() -> [EntityDescription] {
        var author = RuntimeEntityBuilder(name: "Author")
        author.attribute("id", .integer)
        author.attribute("login", .string, optional: true)
        author.relationship("posts", to: "Post", kind: .toManyUnordered)
        var post = RuntimeEntityBuilder(name: "Post")
        post.attribute("id", .integer)
        post.attribute("title", .string)
        post.relationship("author", to: "Author")
        post.relationship("tags", to: "Tag", kind: .toManyUnordered)
        var tag = RuntimeEntityBuilder(name: "Tag")
        tag.attribute("name", .string)
        tag.relationship("posts", to: "Post", kind: .toManyUnordered)
        return [author.build(identity: ["id"]), post.build(identity: ["id"]), tag.build(identity: ["name"])]
    }

    @Test func aSeedFolderAndRecordsByEntityNameStoreWhatTheClassesStore() throws {
        let resources = FixtureLocation.bundle(Bundle.module)
        let compiled = try FixtureStore(
            entities: entities,
            fixtures: [.folder("seed", in: resources), .records(Post.self, "posts.jsonl", in: resources), .records(Post.self, "single-post.json", in: resources), .records(Author.self, "authors.json")])
        let runtime = try FixtureStore(
            entities: [], runtimeEntities: Self.runtimeEntities(),
            fixtures: [.folder("seed", in: resources), .records(entity: "Post", "posts.jsonl", in: resources), .records(entity: "Post", "single-post.json", in: resources), .records(entity: "Author", "authors.json")])
        let expected = String(decoding: try compiled.store.stableExport(), as: UTF8.self)
        #expect(expected.contains("\"Engines\""))
        #expect(String(decoding: try runtime.store.stableExport(), as: UTF8.self) == expected)
        let titles = try runtime.store.read { context in
            try context.fetch(entity: "Post", orderBy: [.ascending("id")]).map { try $0.value("title", as: String.self) }
        }
        #expect(titles.contains("Engines"))
        // A file of an entity the store does not have names the ones it has.
        let error = try #require(throws: StoreError.self) {
            try runtime.load([.records(entity: "Comment", "authors.json")])
        }
        #expect(error.code == .unknownEntity)
    }
}
