import CodableStore
import Foundation
import Testing

/// A webhook body as an app declares it for Foundation's JSONDecoder.
struct IssueWebhook: Decodable {
    let action: String
    let issue: One<GitIssue>
    let labels: Many<Topic>
}

/// Foundation's `JSONDecoder` upserts single entities and arrays through `One` and `Many`.
@Suite struct ForeignDecoderTests {
    private let body = Data(#"""
        {"action": "edited", "issue": {"id": 10, "number": 3, "title": "New title", "user": {"id": 5, "login": "ada"}},
         "labels": [1, {"id": 2, "name": "docs"}]}
        """#.utf8)

    @Test func oneAndManyUpsertUnderJSONDecoder() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.write { context in
            _ = try StoreDecoder().decode(GitIssue.self, from: Data(#"{"id": 10, "number": 3, "title": "Old"}"#.utf8), into: context)
            _ = try StoreDecoder().decode(Topic.self, from: Data(#"{"id": 1, "name": "bug"}"#.utf8), into: context)
        }
        let sameObject = try store.write { context in
            let stored = try #require(try context.object(GitIssue.self, identity: 10))
            let decoder = JSONDecoder()
            decoder.userInfo[.codableStoreContext] = ContextReference(context)
            let event = try decoder.decode(IssueWebhook.self, from: body)
            #expect(event.action == "edited")
            #expect(event.labels.map(\.name) == ["bug", "docs"])
            return event.issue.object === stored
        }
        #expect(sameObject)
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, title FROM GitIssue") == [["10", "New title"]])
        #expect(try raw.rows("SELECT id, login FROM User") == [["5", "ada"]])
        #expect(try raw.rows("SELECT id, name FROM Topic ORDER BY id") == [["1", "bug"], ["2", "docs"]])
    }

    @Test func oneWorksUnderStoreDecoderToo() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let title = try store.write { try StoreDecoder().decode(IssueWebhook.self, from: body, into: $0).issue.object.title }
        #expect(title == "New title")
    }

    @Test func withoutAContextTheErrorsSayWhatToDo() throws {
        let one = try #require(throws: DecodingError.self) { try JSONDecoder().decode(IssueWebhook.self, from: body) }
        guard case .dataCorrupted(let context) = one else { Testing.Issue.record("\(one)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["issue"])
        #expect(context.debugDescription == "One<GitIssue> upserts into a store context: decode it with StoreDecoder, or put a ContextReference in userInfo[.codableStoreContext]")
        let plain = try #require(throws: DecodingError.self) { try JSONDecoder().decode(GitIssue.self, from: Data(#"{"id": 1}"#.utf8)) }
        guard case .dataCorrupted(let plainContext) = plain else { Testing.Issue.record("\(plain)"); return }
        #expect(plainContext.debugDescription.contains("decode One<GitIssue> or Many<GitIssue> with a ContextReference"))
    }
}
