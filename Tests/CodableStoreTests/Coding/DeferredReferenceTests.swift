import CodableStore
import Foundation
import Testing

/// A comment refers to its issue by id; the issue (which needs a number and a title, so it cannot be a stub)
/// often arrives later.
@Entity final class IssueComment {
    var id: Int
    var body: String = ""
    var author: String?
    var issue: GitIssue?
    static let identity = Identity(\IssueComment.id)
    enum CodingKeys: String, EntityCodingKey {
        case id, body, issue
        case author = "user.login"
    }
    init(id: Int) { self.id = id }
}

extension IssueComment: EntityReferencePolicies {
    static let referencePolicies = [ReferencePolicy(\IssueComment.issue, .deferred)]
}

/// A to-many that waits for its members, and one relationship stubbed while the decoder ignores.
@Entity final class Digest {
    var id: Int
    var issues: [GitIssue] = []
    var topics: Set<Topic> = []
    static let identity = Identity(\Digest.id)
    init(id: Int) { self.id = id }
}

extension Digest: EntityReferencePolicies {
    static let referencePolicies = [ReferencePolicy(\Digest.issues, .deferred), ReferencePolicy(\Digest.topics, .stub)]
}

@Suite struct DeferredReferenceTests {
    let entities: [any EntityObject.Type] = issueEntities + [IssueComment.self, Digest.self]

    @Test func aCommentPageLinksTheIssuesOfALaterPage() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        let unresolved = try store.write { context in
            // The decoder's own policy stays .stub: topics and users referenced by id are stubbed as before.
            _ = try StoreDecoder().decode([IssueComment].self, from: SharedFixtures.data("github/comments-page.json"), into: context)
            #expect(context.unresolvedReferences == ["GitIssue": 3])
            _ = try issueDecoder().decode([GitIssue].self, from: SharedFixtures.data("github/issues-page.json"), into: context)
            return context.unresolvedReferences
        }
        #expect(unresolved == ["GitIssue": 1])
        #expect(
            try RawDatabase(path).rows("SELECT c.id, i.id FROM IssueComment c LEFT JOIN GitIssue i ON i._pk = c.issue ORDER BY c.id")
                == [["7001", "9001"], ["7002", "9002"], ["7003", "NULL"]])
        // No stub issue was made for 9999.
        #expect(try RawDatabase(path).value("SELECT count(*) FROM GitIssue") == "3")
    }

    @Test(arguments: [false, true])
    func anImportLinksReferencesToObjectsOfLaterBatches(commitEveryBatch: Bool) throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        // Comments 1-4 refer to issue 10 by id; comment 5 (a later batch of 2) carries issue 10 itself.
        var records = (1...4).map { #"{"id": \#($0), "issue": {"id": 10}}"# }
        records.append(#"{"id": 5, "issue": {"id": 10, "number": 1, "title": "arrives late"}}"#)
        records.append(#"{"id": 6, "issue": {"id": 11}}"#)
        let dump = TestStore.temporaryPath("comments.json")
        try ("[" + records.joined(separator: ",") + "]").write(toFile: dump, atomically: true, encoding: .utf8)
        let report = try store.importJSON(IssueComment.self, from: .file(dump), options: .init(batchSize: 2, commitEveryBatch: commitEveryBatch))
        #expect(report.unresolvedReferences == ["GitIssue": 1])
        #expect(report.summary.contains("1 reference to GitIssue never found its object"))
        #expect(
            try RawDatabase(path).rows("SELECT c.id, i.id FROM IssueComment c LEFT JOIN GitIssue i ON i._pk = c.issue ORDER BY c.id")
                == [["1", "10"], ["2", "10"], ["3", "10"], ["4", "10"], ["5", "10"], ["6", "NULL"]])
    }

    @Test func unresolvedReferencesCanFailTheImport() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        let dump = TestStore.temporaryPath("comments.json")
        try SharedFixtures.data("github/comments-page.json").write(to: URL(fileURLWithPath: dump))
        let error = try #require(throws: ImportError.self) {
            try store.importJSON(IssueComment.self, from: .file(dump), options: .init(failsOnUnresolvedReferences: true))
        }
        #expect(
            error.description
                == "input: 3 unresolved references: IssueComment id = 7001: issue → GitIssue id = 9001 never arrived; "
                + "IssueComment id = 7002: issue → GitIssue id = 9002 never arrived; "
                + "IssueComment id = 7003: issue → GitIssue id = 9999 never arrived; nothing was imported")
        #expect((error.underlyingError as? UnresolvedReferencesError)?.counts == ["GitIssue": 3])
        #expect((error.underlyingError as? UnresolvedReferencesError)?.references.map(\.ownerIdentity?.description) == ["id = 7001", "id = 7002", "id = 7003"])
        #expect(!error.isStoreFailure)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM IssueComment") == "0")
    }

    @Test func policiesPerRelationship() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        let decoder = StoreDecoder()
        decoder.unknownReferencePolicy = .ignore
        try store.write { context in
            // topics: declared .stub although the decoder ignores; issues: deferred, then arriving in order 9002, 9001.
            _ = try decoder.decode(Digest.self, from: Data(#"{"id": 1, "issues": [9001, 9002], "topics": [5]}"#.utf8), into: context)
            _ = try decoder.decode(
                [GitIssue].self,
                from: Data(#"[{"id": 9002, "number": 2, "title": "b", "labels": [6]}, {"id": 9001, "number": 1, "title": "a"}]"#.utf8),
                into: context)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id FROM Topic") == [["5"]])  // 6 was ignored (the decoder's policy)
        let members = try raw.rows("SELECT i.id, j.position FROM Digest_issues j JOIN GitIssue i ON i._pk = j.target ORDER BY j.position")
        #expect(members == [["9002", "0"], ["9001", "1"]])
    }

    @Test func aReferenceToAPropertyIsAModelError() throws {
        let error = try #require(throws: StoreError.self) { try Store.inMemory(entities: [BadPolicy.self]) }
        #expect(error.code == .invalidModel)
        #expect(error.message.contains("BadPolicy: a reference policy is declared for a key path that does not name a relationship"))
    }
}

@Entity final class BadPolicy {
    var id: Int
    static let identity = Identity(\BadPolicy.id)
    init(id: Int) { self.id = id }
}

extension BadPolicy: EntityReferencePolicies {
    static let referencePolicies = [ReferencePolicy(\BadPolicy.id, .deferred)]
}
