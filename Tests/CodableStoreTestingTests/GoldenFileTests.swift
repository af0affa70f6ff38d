import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// Golden files: the stable export, written when missing, and a mismatch reported at its entity, identity and field.
/// Serialized: one test sets the record-mode environment variable, which the others must not see.
@Suite(.serialized) struct GoldenFileTests {
    static let resources = FixtureLocation.bundle(Bundle.module)

    static func seeded(_ fixtures: [Fixture]) throws -> FixtureStore {
        try FixtureStore(entities: entities, fixtures: fixtures, location: resources)
    }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("golden-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func theCommittedGoldenFileMatchesWhateverTheLoadOrder() throws {
        let authorsFirst = try Self.seeded([.records(Author.self, "authors.json", in: .folder()), .records(Post.self, "posts.json")])
        try authorsFirst.expectMatchesGolden("authors-posts-tags.json")
        let postsFirst = try Self.seeded([.records(Post.self, "posts.json"), .records(Author.self, "authors.json", in: .folder())])
        try postsFirst.expectMatchesGolden("authors-posts-tags.json")
        #expect(try authorsFirst.store.stableExport() == postsFirst.store.stableExport())
    }

    @Test func theExportIsSortedByIdentityWithRelationshipsAsIdentities() throws {
        let fixture = try Self.seeded([.records(Post.self, "posts.json")])
        let export = String(decoding: try fixture.store.stableExport(of: [Post.self]), as: UTF8.self)
        #expect(
            export == """
                {
                  "Post" : [
                    {
                      "author" : 1,
                      "id" : 10,
                      "tags" : [
                        "history",
                        "math"
                      ],
                      "title" : "Engines"
                    },
                    {
                      "author" : 2,
                      "id" : 11,
                      "tags" : [
                        "math"
                      ],
                      "title" : "Notes"
                    }
                  ]
                }
                """)
    }

    @Test func emptyArraysAreWrittenOnOneLineAndStringsAreLeftAsTheyAre() throws {
        let fixture = try Self.seeded([])
        try fixture.store.write { context in
            try context.insert(Post(id: 1, title: "[\n\n  ]"))  // looks like an empty array once escaped: untouched
            try context.insert(Author(id: 2, login: nil))
        }
        let export = String(decoding: try fixture.store.stableExport(of: [Author.self, Post.self]), as: UTF8.self)
        #expect(
            export == #"""
                {
                  "Author" : [
                    {
                      "id" : 2,
                      "login" : null,
                      "posts" : []
                    }
                  ],
                  "Post" : [
                    {
                      "author" : null,
                      "id" : 1,
                      "tags" : [],
                      "title" : "[\n\n  ]"
                    }
                  ]
                }
                """#)
    }

    @Test func aMissingGoldenFileIsWrittenAndTheTestFailsOnce() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try Self.seeded([.records(Post.self, "posts.json")])
        let error = try #require(throws: FixtureError.self) { try fixture.expectMatchesGolden("new/posts.json", in: folder) }
        #expect(error.kind == .goldenRecorded)
        let written = folder.appendingPathComponent("new/posts.json")
        #expect(error.file == written.path)
        #expect(try Data(contentsOf: written) == fixture.store.stableExport())
        try fixture.expectMatchesGolden("new/posts.json", in: folder)
    }

    @Test func aChangedFieldIsReportedAtItsEntityIdentityAndField() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try Self.seeded([.records(Post.self, "posts.json")])
        _ = try? fixture.expectMatchesGolden("posts.json", in: folder)
        try fixture.store.write { context in
            try #require(try context.object(Post.self, identity: 11)).title = "Notes, revised"
        }
        let error = try #require(throws: FixtureError.self) { try fixture.expectMatchesGolden("posts.json", in: folder) }
        #expect(error.kind == .goldenMismatch)
        #expect(
            error.message
                == #"Post id: 11, title: golden "Notes", store "Notes, revised" (CODABLESTORE_RECORD_GOLDEN=1 writes the store's export as the golden file)"#
        )
    }

    @Test func aMissingOrExtraObjectIsReportedByItsIdentity() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try Self.seeded([.records(Post.self, "posts.json")])
        // Posts only: deleting a post also changes its author's and its tags' lists, which would come first.
        _ = try? fixture.expectMatchesGolden("posts.json", entities: [Post.self], in: folder)
        try fixture.store.write { context in try context.insert(Post(id: 9, title: "Earlier")) }
        let extra = try #require(throws: FixtureError.self) { try fixture.expectMatchesGolden("posts.json", entities: [Post.self], in: folder) }
        #expect(extra.message.hasPrefix("Post id: 9 is in the store, not in the golden file"), "\(extra)")
        try fixture.store.write { context in
            try context.delete(try #require(try context.object(Post.self, identity: 9)))
            try context.delete(try #require(try context.object(Post.self, identity: 10)))
        }
        let missing = try #require(throws: FixtureError.self) { try fixture.expectMatchesGolden("posts.json", entities: [Post.self], in: folder) }
        #expect(missing.message.hasPrefix("Post id: 10 is in the golden file, not in the store"), "\(missing)")
    }

    @Test func aChangedRelationshipIsReportedAtItsField() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try Self.seeded([.records(Post.self, "posts.json")])
        _ = try? fixture.expectMatchesGolden("posts.json", in: folder)
        try fixture.store.write { context in
            let post = try #require(try context.object(Post.self, identity: 11))
            post.tags.insert(Tag(name: "new"))
        }
        let error = try #require(throws: FixtureError.self) { try fixture.expectMatchesGolden("posts.json", in: folder) }
        // The new tag is an entity of its own too: Post comes first, and its tags differ in length.
        #expect(error.message.hasPrefix(#"Post id: 11, tags: golden ["math"], store ["math","new"]"#), "\(error)")
    }

    @Test func theEnvironmentVariableRewritesAGoldenFileAndPasses() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try Self.seeded([.records(Post.self, "posts.json")])
        _ = try? fixture.expectMatchesGolden("posts.json", in: folder)
        try fixture.store.write { context in try #require(try context.object(Post.self, identity: 10)).title = "Changed" }
        setenv(recordGoldenEnvironmentVariable, "1", 1)
        defer { unsetenv(recordGoldenEnvironmentVariable) }
        try fixture.expectMatchesGolden("posts.json", in: folder)
        #expect(try Data(contentsOf: folder.appendingPathComponent("posts.json")) == fixture.store.stableExport())
        unsetenv(recordGoldenEnvironmentVariable)
        try fixture.expectMatchesGolden("posts.json", in: folder)
    }
}
