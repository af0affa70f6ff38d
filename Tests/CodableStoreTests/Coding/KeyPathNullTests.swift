import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// GitHub's issue, as an app that flattens `pull_request` and `milestone` into key-path attributes stores it.
@Entity final class FlatIssue {
    var id: Int
    var number: Int
    var title: String
    var body: String?
    var author: String?
    var milestoneTitle: String?
    var pullRequestURL: String?
    var pullRequestHTMLURL: String?

    static let identity = Identity(\FlatIssue.id)

    enum CodingKeys: String, EntityCodingKey {
        case id, number, title, body
        case author = "user.login"
        case milestoneTitle = "milestone.title"
        case pullRequestURL = "pull_request.url"
        case pullRequestHTMLURL = "pull_request.html_url"
    }

    init(id: Int, number: Int, title: String) {
        self.id = id
        self.number = number
        self.title = title
    }
}

/// GitHub's repository with its license flattened.
@Entity final class FlatRepository {
    var id: Int
    var fullName: String
    var stars: Int = 0
    var licenseKey: String?
    var licenseName: String?

    static let identity = Identity(\FlatRepository.id)

    enum CodingKeys: String, EntityCodingKey {
        case id
        case fullName = "full_name"
        case stars = "stargazers_count"
        case licenseKey = "license.key"
        case licenseName = "license.name"
    }

    init(id: Int, fullName: String) {
        self.id = id
        self.fullName = fullName
    }
}

/// A required value under a key path.
@Entity final class Landmark {
    var id: Int
    var latitude: Double
    static let identity = Identity(\Landmark.id)
    enum CodingKeys: String, EntityCodingKey {
        case id
        case latitude = "position.lat"
    }
    init(id: Int, latitude: Double) {
        self.id = id
        self.latitude = latitude
    }
}

/// A `null` parent of key-path keys clears them; the encoder writes such a parent as `null` (or leaves it out),
/// never as an object of nulls.
@Suite struct KeyPathNullTests {
    let entities: [any EntityObject.Type] = [FlatIssue.self, FlatRepository.self]

    private func rows(_ path: String, _ sql: String) throws -> [[String]] { try RawDatabase(path).rows(sql) }

    @Test func aNullParentClearsItsKeysAndAMissingOneLeavesThem() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        let decoder = StoreDecoder()
        let query = "SELECT stars, licenseKey, licenseName FROM FlatRepository"
        try store.load([.records(FlatRepository.self, "github/repository.json")], decoder: decoder, location: SharedFixtures.location)
        #expect(try rows(path, query) == [["120", "mit", "MIT License"]])

        // "license": null clears both, as {"key": null, "name": null} would.
        try store.load([.records(FlatRepository.self, "github/repository-license-removed.json")], decoder: decoder, location: SharedFixtures.location)
        #expect(try rows(path, query) == [["121", "NULL", "NULL"]])

        // Put it back, then leave "license" out: the values stay.
        try store.load([.records(FlatRepository.self, "github/repository.json")], decoder: decoder, location: SharedFixtures.location)
        try store.load([.records(FlatRepository.self, "github/repository-license-absent.json")], decoder: decoder, location: SharedFixtures.location)
        #expect(try rows(path, query) == [["122", "mit", "MIT License"]])

        // The same through an import.
        let dump = TestStore.temporaryPath("dump.json")
        try ("[" + String(decoding: try SharedFixtures.data("github/repository-license-removed.json"), as: UTF8.self) + "]")
            .write(toFile: dump, atomically: true, encoding: .utf8)
        _ = try store.importJSON(FlatRepository.self, from: .file(dump))
        #expect(try rows(path, query) == [["121", "NULL", "NULL"]])
    }

    @Test func aNullParentOfARequiredValueIsValueNotFoundAtTheParent() throws {
        let store = try Store.inMemory(entities: [Landmark.self])
        let error = try #require(throws: DecodingError.self) {
            try store.write {
                _ = try StoreDecoder().decode(Landmark.self, from: Data(#"{"id": 1, "position": null}"#.utf8), into: $0)
            }
        }
        guard case .valueNotFound(_, let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["position"])
    }

    @Test func thePageDecodesPullRequestsAndNullsAsGitHubMeansThem() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.load([.records(FlatIssue.self, "github/issues-page.json")], location: SharedFixtures.location)
        #expect(
            try rows(path, "SELECT id, author, milestoneTitle, pullRequestURL, body FROM FlatIssue ORDER BY id") == [
                ["9001", "octo-ada", "1.1", "NULL", "Reading a truncated file reports the wrong position."],
                ["9002", "octo-bob", "NULL", "https://api.example.test/repos/acme/store/pulls/42", "NULL"],
                ["9003", "octo-ada", "NULL", "NULL", ""],
            ])
    }

    // MARK: - Encoding

    private func encodedPage(_ strategy: StoreEncoder.NilEncodingStrategy) throws -> (store: Store, json: [[String: Any]], data: Data) {
        let store = try Store.inMemory(entities: entities)
        try store.load([.records(FlatIssue.self, "github/issues-page.json")], location: SharedFixtures.location)
        let encoder = StoreEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nilEncodingStrategy = strategy
        let data = try store.read { try encoder.encode(try $0.fetch(FlatIssue.self, orderBy: [.ascending(\.id)])) }
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return (store, json, data)
    }

    @Test func anAllNilParentIsNullNotAnObjectOfNulls() throws {
        let (_, json, data) = try encodedPage(.null)
        #expect(json[0]["pull_request"] is NSNull, "\(String(decoding: data, as: UTF8.self))")
        #expect(json[1]["milestone"] is NSNull)
        #expect((json[1]["pull_request"] as? [String: Any])?["html_url"] as? String == "https://example.test/acme/store/pull/42")
        #expect(json[1]["body"] is NSNull)
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.contains(#""pull_request":{"html_url":null"#))
        #expect(text.hasPrefix(#"[{"body":"Reading a truncated file reports the wrong position.","id":9001,"milestone":{"title":"1.1"},"number":41,"pull_request":null,"title":"Crash when the dump ends mid-string","user":{"login":"octo-ada"}}"#), "\(text)")
    }

    @Test func omittingNilsLeavesOutKeysAndParents() throws {
        let (_, json, data) = try encodedPage(.omit)
        #expect(json[0]["pull_request"] == nil, "\(String(decoding: data, as: UTF8.self))")
        #expect(json[1]["milestone"] == nil)
        #expect(json[1]["body"] == nil)
        #expect(json[1]["pull_request"] != nil)
        #expect(Set(json[2].keys) == ["body", "id", "number", "title", "user"])
    }

    @Test(arguments: [StoreEncoder.NilEncodingStrategy.null, .omit])
    func decodingWhatWasEncodedGivesTheSameStore(strategy: StoreEncoder.NilEncodingStrategy) throws {
        let (_, _, data) = try encodedPage(strategy)
        let original = TestStore.temporaryPath()
        try Store(path: original, entities: entities).write {
            _ = try StoreDecoder().decode([FlatIssue].self, from: SharedFixtures.data("github/issues-page.json"), into: $0)
        }
        let copy = TestStore.temporaryPath()
        try Store(path: copy, entities: entities).write { _ = try StoreDecoder().decode([FlatIssue].self, from: data, into: $0) }
        let query = "SELECT * FROM FlatIssue ORDER BY id"
        #expect(try rows(copy, query) == rows(original, query))
        // And into the original itself: nothing changes.
        let again = try Store(path: original, entities: entities).write { context in
            _ = try StoreDecoder().decode([FlatIssue].self, from: data, into: context)
            return context.hasChanges
        }
        #expect(!again)
    }
}
