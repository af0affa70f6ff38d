import CodableStore
import Foundation
import Testing

/// The oracle: a plain Decodable mirror of `GitIssue` decoded by Foundation's JSONDecoder. For Codable contract
/// failures, StoreDecoder must report the same error kind, coding path and wording.
private struct PlainIssue: Decodable {
    let id: Int
    let number: Int
    let title: String
    let comments: Int?
    let user: PlainUser?
}

private struct PlainUser: Decodable {
    let id: Int
    let login: String?
}

private struct ErrorShape: Equatable, CustomStringConvertible {
    let kind: String
    let path: [String]
    let message: String
    var description: String { "\(kind) at \(path): \(message)" }

    init(_ error: any Error) {
        switch error as? DecodingError {
        case .typeMismatch(_, let context)?: self.init("typeMismatch", context)
        case .valueNotFound(_, let context)?: self.init("valueNotFound", context)
        case .keyNotFound(let key, let context)?: self.init("keyNotFound", context, key: key)
        case .dataCorrupted(let context)?: self.init("dataCorrupted", context)
        default: self.init(kind: "other", path: [], message: "\(error)")
        }
    }

    private init(_ kind: String, _ context: DecodingError.Context, key: (any CodingKey)? = nil) {
        self.init(
            kind: kind, path: context.codingPath.map(\.stringValue) + (key.map { ["→" + $0.stringValue] } ?? []),
            message: context.debugDescription)
    }

    private init(kind: String, path: [String], message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }
}

@Suite struct DecodingErrorTests {
    static let cases: [String] = [
        #"[{"id": 1, "number": 1, "title": 5}]"#,  // typeMismatch String
        #"[{"id": 1, "number": "1", "title": "a"}]"#,  // typeMismatch Int from a string
        #"[{"id": 1, "title": "a"}]"#,  // keyNotFound number (new object)
        #"[{"id": 1, "number": null, "title": "a"}]"#,  // valueNotFound
        #"[{"id": 1, "number": 1, "title": "a"}, {"id": 2, "number": 2, "title": "b", "comments": true}]"#,
        #"[{"id": 1, "number": 1, "title": "a", "user": {"id": "x"}}]"#,  // nested typeMismatch
        #"[{"id": 1, "number": 1, "title": "a", "user": {"id": 1, "login": 3}}]"#,
        #"[{"id": 1, "number": 1, "title": "a", "user": [1, 2]}]"#,
        #"{"id": 1}"#,  // not an array
    ]

    @Test(arguments: cases)
    func codableFailuresMatchFoundationsErrors(json: String) throws {
        let expected = ErrorShape(try #require(throws: (any Error).self) {
            _ = try JSONDecoder().decode([PlainIssue].self, from: Data(json.utf8))
        })
        let store = try Store.inMemory(entities: issueEntities)
        let actual = ErrorShape(try #require(throws: (any Error).self) {
            try store.write { context in _ = try StoreDecoder().decode([GitIssue].self, from: Data(json.utf8), into: context) }
        })
        #expect(actual == expected)
    }

    @Test func wrongTypeDeepInABatchReportsTheFullPath() throws {
        var elements = (0..<41).map { #"{"id": \#($0), "number": 1, "title": "t", "user": {"id": \#($0)}}"# }
        elements.append(#"{"id": 41, "number": 1, "title": "t", "user": {"id": "forty-one"}}"#)
        let store = try Store.inMemory(entities: issueEntities)
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([GitIssue].self, from: Data("[\(elements.joined(separator: ","))]".utf8), into: $0) }
        }
        guard case .typeMismatch(_, let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["Index 41", "user", "id"])
        #expect(context.debugDescription == "Expected to decode Int but found a string instead.")
        // Nothing of the failed write is kept.
        #expect(try store.read { try $0.count(GitIssue.self) } == 0)
    }

    @Test func numbersThatDoNotFitAreErrorsNotWrongValues() throws {
        let store = try Store.inMemory(entities: issueEntities)
        for (json, text) in [(#"{"id": 1.5, "number": 1, "title": "a"}"#, "1.5"), (#"{"id": 99999999999999999999, "number": 1, "title": "a"}"#, "99999999999999999999")] {
            let error = try #require(throws: DecodingError.self) {
                try store.write { _ = try StoreDecoder().decode(GitIssue.self, from: Data(json.utf8), into: $0) }
            }
            guard case .dataCorrupted(let context) = error else { Testing.Issue.record("\(error)"); continue }
            #expect(context.codingPath.map(\.stringValue) == ["id"])
            #expect(context.debugDescription == "Parsed JSON number <\(text)> does not fit in Int.")
        }
    }

    @Test func missingIdentityIsAStoreErrorListingTheKeysReceived() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let error = try #require(throws: StoreError.self) {
            try store.write { _ = try StoreDecoder().decode([GitIssue].self, from: Data(#"[{"id": 1, "number": 1, "title": "a", "user": {"login": "x", "name": "y"}}]"#.utf8), into: $0) }
        }
        #expect(error.code == .missingIdentity)
        #expect(error.message == "User at [0].user has no identity: expected key 'id' but received keys 'login', 'name'")
        #expect(error.codingPath.map(\.stringValue) == ["Index 0", "user"])
    }

    @Test func invalidEnumRawValueAndDateAreDataCorrupted() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try issueDecoder().decode(GitIssue.self, from: Data(#"{"id": 1, "number": 1, "title": "a", "state": "merged"}"#.utf8), into: $0) }
        }
        guard case .dataCorrupted(let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["state"])
        #expect(context.debugDescription == "Cannot initialize IssueState from invalid String value merged")
        let dateError = try #require(throws: DecodingError.self) {
            try store.write { _ = try issueDecoder().decode(GitIssue.self, from: Data(#"{"id": 1, "number": 1, "title": "a", "created_at": "yesterday"}"#.utf8), into: $0) }
        }
        guard case .dataCorrupted(let dateContext) = dateError else { Testing.Issue.record("\(dateError)"); return }
        #expect(dateContext.codingPath.map(\.stringValue) == ["created_at"])
        #expect(dateContext.debugDescription == "Expected date string to be ISO8601-formatted.")
    }
}
