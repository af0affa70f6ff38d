import CodableStore
import Foundation
import Synchronization
import Testing

/// A release of a repository: a composite identity, and a title a stub could not have.
@Entity final class RepoRelease {
    var repo: String
    var number: Int
    var title: String
    static let identity = Identity(\RepoRelease.repo, \RepoRelease.number)
    init(repo: String, number: Int, title: String) {
        self.repo = repo
        self.number = number
        self.title = title
    }
}

/// A composite owner whose to-one and to-many references wait for their objects.
@Entity final class ReleaseReview {
    var repo: String
    var pr: Int
    var release: RepoRelease?
    var issues: [GitIssue] = []
    static let identity = Identity(\ReleaseReview.repo, \ReleaseReview.pr)
    init(repo: String, pr: Int) {
        self.repo = repo
        self.pr = pr
    }
}

extension ReleaseReview: EntityReferencePolicies {
    static let referencePolicies = [ReferencePolicy(\ReleaseReview.release, .deferred), ReferencePolicy(\ReleaseReview.issues, .deferred)]
}

/// An owner without identity: named by its row id.
@Entity final class LooseNote {
    var text: String = ""
    var issue: GitIssue?
    init() {}
}

extension LooseNote: EntityReferencePolicies {
    static let referencePolicies = [ReferencePolicy(\LooseNote.issue, .deferred)]
}

@Suite struct UnresolvedReferenceTests {
    let entities: [any EntityObject.Type] =
        issueEntities + [IssueComment.self, RepoRelease.self, ReleaseReview.self, LooseNote.self]

    static func comment(_ id: Int64, to issue: Int64) -> UnresolvedReference {
        UnresolvedReference(
            ownerEntity: "IssueComment", ownerIdentity: .init(names: ["id"], values: [.integer(id)]), ownerRowID: id - 7000,
            relationship: "issue", destinationEntity: "GitIssue", missingIdentity: .init(names: ["id"], values: [.integer(issue)]))
    }

    static func writeDump(_ records: [String]) throws -> String {
        let dump = TestStore.temporaryPath("comments.json")
        try ("[" + records.joined(separator: ",\n") + "]").write(toFile: dump, atomically: true, encoding: .utf8)
        return dump
    }

    // MARK: - Listing

    @Test func eachReferenceNamesItsOwnerRelationshipAndMissingIdentity() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: entities)
        try store.write { context in
            _ = try StoreDecoder().decode([IssueComment].self, from: SharedFixtures.data("github/comments-page.json"), into: context)
            #expect(try context.listUnresolvedReferences() == [Self.comment(7001, to: 9001), Self.comment(7002, to: 9002), Self.comment(7003, to: 9999)])
            #expect(try context.listUnresolvedReferences(limit: 2) == [Self.comment(7001, to: 9001), Self.comment(7002, to: 9002)])
            _ = try issueDecoder().decode([GitIssue].self, from: SharedFixtures.data("github/issues-page.json"), into: context)
            let left = try context.listUnresolvedReferences()
            #expect(left == [Self.comment(7003, to: 9999)])
            #expect(left.map(\.description) == ["IssueComment id = 7003: issue → GitIssue id = 9999 never arrived"])
            // The count API is unchanged.
            #expect(context.unresolvedReferences == ["GitIssue": 1])
        }
    }

    @Test func compositeIdentitiesAreNamedAndToManyMembersKeepTheirOrder() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: entities)
        try store.write { context in
            let json = #"[{"repo": "apple/swift", "pr": 12, "release": ["apple/swift", 6], "issues": [9003, 9001]}]"#
            _ = try StoreDecoder().decode([ReleaseReview].self, from: Data(json.utf8), into: context)
            let owner = UnresolvedReference.Identity(names: ["repo", "pr"], values: [.text("apple/swift"), .integer(12)])
            let references = try context.listUnresolvedReferences()
            #expect(
                references == [
                    UnresolvedReference(
                        ownerEntity: "ReleaseReview", ownerIdentity: owner, ownerRowID: 1, relationship: "release",
                        destinationEntity: "RepoRelease",
                        missingIdentity: .init(names: ["repo", "number"], values: [.text("apple/swift"), .integer(6)])),
                    UnresolvedReference(
                        ownerEntity: "ReleaseReview", ownerIdentity: owner, ownerRowID: 1, relationship: "issues",
                        destinationEntity: "GitIssue", missingIdentity: .init(names: ["id"], values: [.integer(9003)])),
                    UnresolvedReference(
                        ownerEntity: "ReleaseReview", ownerIdentity: owner, ownerRowID: 1, relationship: "issues",
                        destinationEntity: "GitIssue", missingIdentity: .init(names: ["id"], values: [.integer(9001)])),
                ])
            #expect(
                references.first?.description
                    == #"ReleaseReview repo = "apple/swift", pr = 12: release → RepoRelease repo = "apple/swift", number = 6 never arrived"#)
            #expect(context.unresolvedReferences == ["RepoRelease": 1, "GitIssue": 2])
        }
    }

    @Test func anOwnerWithoutIdentityIsNamedByItsRowID() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: entities)
        try store.write { context in
            _ = try StoreDecoder().decode([LooseNote].self, from: Data(#"[{"text": "a", "issue": 5}, {"text": "b", "issue": 6}]"#.utf8), into: context)
            try context.save()  // the owners' rows exist, and the objects are still held
            let references = try context.listUnresolvedReferences()
            #expect(references.map(\.ownerIdentity) == [nil, nil])
            #expect(references.map(\.ownerRowID) == [1, 2])
            #expect(
                references.map(\.description) == [
                    "LooseNote row 1: issue → GitIssue id = 5 never arrived", "LooseNote row 2: issue → GitIssue id = 6 never arrived",
                ])
        }
    }

    @Test func anImportReportsTheFirstHundredWithOwnersItLetGo() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: entities)
        // 300 comments refer to issues that never arrive; each batch of 2 is saved and its objects let go.
        let records = (1...300).map { #"{"id": \#(7000 + $0), "issue": \#(100_000 + $0)}"# }
        let report = try store.importJSON(IssueComment.self, from: .file(Self.writeDump(records)), options: .init(batchSize: 2))
        #expect(report.unresolvedReferences == ["GitIssue": 300])
        let listed = try #require(report.unresolvedReferenceList)
        #expect(listed == (1...100).map { Self.comment(7000 + $0, to: 100_000 + $0) })  // ImportOptions.unresolvedReferenceListLimit
        #expect(report.summary.contains("300 references to GitIssue never found their object"))
        #expect(report.summary.contains("\n    IssueComment id = 7001: issue → GitIssue id = 100001 never arrived\n"))
        #expect(report.summary.contains("\n    and 200 more"))
    }

    @Test func ownersLetGoByAnImportKeepTheirIdentityAndCostOneQueryPerChunk() throws {
        let statements = Mutex<[String]>([])
        let store = try Store(
            path: TestStore.temporaryPath(), entities: entities,
            options: .init(statementProfiler: { sql, _ in statements.withLock { $0.append(sql) } }))
        let records = (1...300).map { #"{"id": \#(7000 + $0), "issue": \#(100_000 + $0)}"# }
        var options = ImportOptions(batchSize: 2)
        options.unresolvedReferenceListLimit = 1_000
        let report = try store.importJSON(IssueComment.self, from: .file(Self.writeDump(records)), options: options)
        #expect(report.unresolvedReferenceList == (1...300).map { Self.comment(7000 + $0, to: 100_000 + $0) })
        // The owners' identities: two statements of 256 row ids, not 300 lookups.
        let ownerReads = statements.withLock { $0 }.filter { $0.hasPrefix("SELECT") && $0.contains(#"FROM "IssueComment" WHERE "_pk" IN ("#) }
        #expect(ownerReads.count == 2)
    }

    // MARK: - Checking a write

    @Test func aWriteChecksOnceEveryPageIsDecoded() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { context in
            // Page 1 refers to issues of page 2 and of page 3.
            _ = try StoreDecoder().decode([IssueComment].self, from: SharedFixtures.data("github/comments-page.json"), into: context)
            _ = try issueDecoder().decode([GitIssue].self, from: SharedFixtures.data("github/issues-page.json"), into: context)
            let error = try #require(throws: UnresolvedReferencesError.self) { try context.requireResolvedReferences() }
            #expect(error.references == [Self.comment(7003, to: 9999)])
            _ = try issueDecoder().decode([GitIssue].self, from: Data(#"[{"id": 9999, "number": 99, "title": "late"}]"#.utf8), into: context)
            try context.requireResolvedReferences()
        }
        #expect(try RawDatabase(path).value("SELECT i.id FROM IssueComment c JOIN GitIssue i ON i._pk = c.issue WHERE c.id = 7003") == "9999")
    }

    @Test func aWriteFailingItsCheckCommitsNothingAndNamesTheFirstThree() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        let error = try #require(throws: UnresolvedReferencesError.self) {
            try store.write { context in
                let page = "[" + (1...5).map { #"{"id": \#($0), "issue": \#(100 + $0)}"# }.joined(separator: ",") + "]"
                _ = try StoreDecoder().decode([IssueComment].self, from: Data(page.utf8), into: context)
                try context.requireResolvedReferences()
            }
        }
        #expect(error.count == 5)
        #expect(error.references.map(\.ownerIdentity?.values) == (1...5).map { Optional([DatabaseValue.integer(Int64($0))]) })
        #expect(
            error.description == "5 unresolved references: IssueComment id = 1: issue → GitIssue id = 101 never arrived; "
                + "IssueComment id = 2: issue → GitIssue id = 102 never arrived; IssueComment id = 3: issue → GitIssue id = 103 never arrived; "
                + "and 2 more")
        #expect(try RawDatabase(path).value("SELECT count(*) FROM IssueComment") == "0")
    }

    // MARK: - Imports

    @Test func anImportErrorListsUpToTheLimitAndCountsAll() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: entities)
        let dump = try Self.writeDump((1...5).map { #"{"id": \#(7000 + $0), "issue": \#(100 + $0)}"# })
        var options = ImportOptions(batchSize: 2, failsOnUnresolvedReferences: true)
        options.unresolvedReferenceListLimit = 2
        let error = try #require(throws: ImportError.self) { try store.importJSON(IssueComment.self, from: .file(dump), options: options) }
        let unresolved = try #require(error.underlyingError as? UnresolvedReferencesError)
        #expect(unresolved.references == [Self.comment(7001, to: 101), Self.comment(7002, to: 102)])
        #expect(unresolved.count == 5)
        #expect(unresolved.description.hasSuffix("IssueComment id = 7002: issue → GitIssue id = 102 never arrived; and 3 more"))
    }

    // MARK: - Rendering and encoding

    @Test func textIsQuotedAsInJSON() {
        let identity = UnresolvedReference.Identity(names: ["name", "n"], values: [.text("a\"b\\c\n\u{1}"), .integer(-5)])
        #expect(identity.description == #"name = "a\"b\\c\n\u0001", n = -5"#)
    }

    @Test func aReportWithItsReferencesRoundTripsThroughJSON() throws {
        var report = ImportReport()
        report.unresolvedReferences = ["B": 2]
        report.unresolvedReferenceList = [
            UnresolvedReference(
                ownerEntity: "A", ownerIdentity: .init(names: ["at", "raw", "note"], values: [.real(7), .blob(Data([0, 255])), .null]),
                ownerRowID: 3, relationship: "b", destinationEntity: "B",
                missingIdentity: .init(names: ["name", "n"], values: [.text("x\"y"), .integer(-5)])),
            UnresolvedReference(
                ownerEntity: "C", ownerIdentity: nil, ownerRowID: 4, relationship: "b", destinationEntity: "B",
                missingIdentity: .init(names: ["id"], values: [.integer(1)])),
        ]
        let data = try JSONEncoder().encode(report)
        #expect(try JSONDecoder().decode(ImportReport.self, from: data) == report)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let identity = UnresolvedReference.Identity(names: ["repo", "number"], values: [.text("apple/swift"), .integer(6)])
        #expect(String(decoding: try encoder.encode(identity), as: UTF8.self) == #"{"names":["repo","number"],"values":["apple/swift",6]}"#)
    }

    // MARK: - Failing a decode

    static func strictDecoder() -> StoreDecoder {
        let decoder = issueDecoder()
        decoder.failsOnUnresolvedReferences = true
        return decoder
    }

    static let commentRows = "SELECT c.id, c.body, coalesce(c.author, 'NULL'), coalesce(i.id, 'NULL') FROM IssueComment c LEFT JOIN GitIssue i ON i._pk = c.issue ORDER BY c.id"

    /// Issue 10 and comment 1 (linked to it), committed.
    static func storeWithOneComment(_ entities: [any EntityObject.Type]) throws -> (Store, String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { context in
            _ = try issueDecoder().decode([GitIssue].self, from: Data(#"[{"id": 10, "number": 1, "title": "ten"}]"#.utf8), into: context)
            _ = try StoreDecoder().decode([IssueComment].self, from: Data(#"[{"id": 1, "body": "first", "issue": 10}]"#.utf8), into: context)
        }
        return (store, path)
    }

    @Test func aDecodeLeavingAReferenceUnresolvedFailsAndLeavesNothingBehind() throws {
        let (store, path) = try Self.storeWithOneComment(entities)
        let error = try store.write { context -> UnresolvedReferencesError in
            // Changed before the decode: saved first, and kept.
            let comment = try #require(try context.object(IssueComment.self, identity: 1))
            comment.author = "before"
            let payload = #"[{"id": 2, "issue": 10}, {"id": 3, "body": "x", "issue": 99}, {"id": 1, "body": "changed by the failing decode"}]"#
            let error = try #require(throws: UnresolvedReferencesError.self) {
                try Self.strictDecoder().decode([IssueComment].self, from: Data(payload.utf8), into: context)
            }
            // Nothing of the decode is left in the context.
            #expect(context.unresolvedReferences == [:])
            #expect(try context.listUnresolvedReferences() == [])
            #expect(try context.object(IssueComment.self, identity: 2) == nil)
            #expect(try context.object(IssueComment.self, identity: 3) == nil)
            let first = try #require(try context.object(IssueComment.self, identity: 1))
            #expect(first.body == "first")
            #expect(first.author == "before")
            return error
        }
        #expect(
            error.references == [
                UnresolvedReference(
                    ownerEntity: "IssueComment", ownerIdentity: .init(names: ["id"], values: [.integer(3)]), ownerRowID: 3,
                    relationship: "issue", destinationEntity: "GitIssue", missingIdentity: .init(names: ["id"], values: [.integer(99)])),
            ])
        #expect(error.count == 1)
        #expect(error.counts == ["GitIssue": 1])
        #expect(error.description == "1 unresolved reference: IssueComment id = 3: issue → GitIssue id = 99 never arrived")
        #expect(
            error.detailedDescription() == """
                UnresolvedReferencesError: 1 reference never arrived
                ├─ To GitIssue: 1
                └─ IssueComment id = 3: issue → GitIssue id = 99 never arrived
                """)
        // The store's rows are those before the decode (with the change made before it).
        let raw = try RawDatabase(path)
        #expect(try raw.rows(Self.commentRows) == [["1", "first", "before", "10"]])
        #expect(try raw.value("SELECT count(*) FROM GitIssue") == "1")
    }

    @Test func theTwoThreadDecodeAndDecodeAndSaveFailAndLeaveNothingBehindToo() throws {
        let (store, path) = try Self.storeWithOneComment(entities)
        let decoder = Self.strictDecoder()
        decoder.parallelDecodingThreshold = 1  // every array document on two threads
        let payload = Data(#"[{"id": 2, "issue": 10}, {"id": 3, "body": "x", "issue": 99}, {"id": 1, "body": "changed"}]"#.utf8)
        try store.write { context in
            // A malformed document, parsed while it is decoded: the syntax error, not the references' check.
            #expect(throws: JSONSyntaxError.self) {
                try decoder.decode([IssueComment].self, from: Data(#"[{"id": 2, "issue": 99}, {"id": 3"#.utf8), into: context)
            }
            let parallel = try #require(throws: UnresolvedReferencesError.self) {
                try decoder.decode([IssueComment].self, from: payload, into: context)
            }
            #expect(parallel.description == "1 unresolved reference: IssueComment id = 3: issue → GitIssue id = 99 never arrived")
            let saving = try #require(throws: UnresolvedReferencesError.self) {
                try decoder.decodeAndSave([IssueComment].self, from: payload, into: context)
            }
            #expect(saving.references == parallel.references)
            #expect(context.unresolvedReferences == [:])
        }
        #expect(try RawDatabase(path).rows(Self.commentRows) == [["1", "first", "NULL", "10"]])
    }

    @Test func aMalformedDocumentStillChangesNothing() throws {
        let (store, path) = try Self.storeWithOneComment(entities)
        let decoder = Self.strictDecoder()
        try store.write { context in
            let comment = try #require(try context.object(IssueComment.self, identity: 1))
            comment.author = "unsaved"
            let held = context.registeredObjectCount
            #expect(throws: JSONSyntaxError.self) {
                try decoder.decode([IssueComment].self, from: Data(#"[{"id": 2, "issue": 99}, {"id": 3"#.utf8), into: context)
            }
            // Not saved first, not forgotten: the savepoint never began.
            #expect(context.hasChanges)
            #expect(context.registeredObjectCount == held)
            #expect(comment.author == "unsaved")
            #expect(context.unresolvedReferences == [:])
        }
        #expect(try RawDatabase(path).rows(Self.commentRows) == [["1", "first", "unsaved", "10"]])
    }

    @Test func referencesArrivingLaterInThePayloadOrDeferredBeforeDoNotFailADecode() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { context in
            // A lenient decode first: its three references wait (two arrive below, one never).
            _ = try StoreDecoder().decode([IssueComment].self, from: SharedFixtures.data("github/comments-page.json"), into: context)
            let thread = #"{"comments": [{"id": 1, "issue": 20}], "issues": [{"id": 20, "number": 2, "title": "twenty"}]}"#
            _ = try Self.strictDecoder().decode(CommentThread.self, from: Data(thread.utf8), into: context)
            _ = try Self.strictDecoder().decodeAndSave([GitIssue].self, from: SharedFixtures.data("github/issues-page.json"), into: context)
            #expect(try context.listUnresolvedReferences() == [Self.comment(7003, to: 9999)])
        }
        #expect(
            try RawDatabase(path).rows(Self.commentRows) == [
                ["1", "", "NULL", "20"], ["7001", "Same here with a 2 GB dump.", "octo-bob", "9001"],
                ["7002", "Fixed by #42?", "octo-ada", "9002"], ["7003", "+1", "octo-cy", "NULL"],
            ])
    }

    @Test(arguments: [false, true])
    func anImportFailsNamingTheReferencesOfOwnersItLetGo(commitEveryBatch: Bool) throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        // 7001 waits for issue 10, which arrives with 7003 (a later batch); 7002's issue 11 never does.
        let dump = try Self.writeDump([
            #"{"id": 7001, "issue": 10}"#, #"{"id": 7002, "issue": 11}"#,
            #"{"id": 7003, "issue": {"id": 10, "number": 1, "title": "late"}}"#,
        ])
        // The decoder's option asks for the same check as ImportOptions.failsOnUnresolvedReferences: at the end.
        let error = try #require(throws: ImportError.self) {
            try store.importJSON(
                IssueComment.self, from: .file(dump), options: .init(batchSize: 1, commitEveryBatch: commitEveryBatch, decoder: Self.strictDecoder()))
        }
        #expect(
            error.description
                == "input: 1 unresolved reference: IssueComment id = 7002: issue → GitIssue id = 11 never arrived"
                + (commitEveryBatch ? "; the batches before were committed" : "; nothing was imported"))
        let unresolved = try #require(error.underlyingError as? UnresolvedReferencesError)
        #expect(unresolved.references == [Self.comment(7002, to: 11)])
        #expect(unresolved.counts == ["GitIssue": 1])
        #expect(!error.isStoreFailure)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM IssueComment") == (commitEveryBatch ? "3" : "0"))
    }
}

/// Comments and the issues they refer to, in one payload.
struct CommentThread: Decodable {
    let comments: Many<IssueComment>
    let issues: Many<GitIssue>
}
