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
        #expect(error.references.map(\.ownerIdentity?.values) == (1...5).map { Optional([SQLiteValue.integer(Int64($0))]) })
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
}
