import CodableStore
import Foundation
import Testing

@Entity final class SyncIssue {
    var id: Int
    var repository: String = ""
    var title: String = ""
    var labels: Set<SyncLabel> = []
    var parent: SyncIssue?
    var comments: [SyncComment] = []
    var blockers: Set<SyncBlocker> = []
    static let identity = Identity(\SyncIssue.id)
    static let deleteRules: [DeleteRule<SyncIssue>] = [.cascade(\.comments), .deny(\.blockers)]
    init(id: Int) { self.id = id }
}

@Entity final class SyncLabel {
    var id: Int
    var issues: Set<SyncIssue> = []
    static let identity = Identity(\SyncLabel.id)
    init(id: Int) { self.id = id }
}

@Entity final class SyncComment {
    var id: Int
    var issue: SyncIssue?
    static let identity = Identity(\SyncComment.id)
    init(id: Int) { self.id = id }
}

@Entity final class SyncBlocker {
    var id: Int
    var issue: SyncIssue?
    static let identity = Identity(\SyncBlocker.id)
    init(id: Int) { self.id = id }
}

/// An entity without delete rules, whose sync deletions take the one-statement path.
@Entity final class SyncNote {
    var id: Int
    var topic: String = ""
    var tags: Set<SyncLabel> = []
    static let identity = Identity(\SyncNote.id)
    init(id: Int) { self.id = id }
}

/// A tree whose children go with their parent.
@Entity final class SyncFolder {
    var id: Int
    var name: String = ""
    var parent: SyncFolder?
    var children: Set<SyncFolder> = []
    static let identity = Identity(\SyncFolder.id)
    static let inverses = [Inverse(\SyncFolder.parent, \SyncFolder.children)]
    static let deleteRules: [DeleteRule<SyncFolder>] = [.cascade(\.children)]
    init(id: Int) { self.id = id }
}

/// A tree whose parents cannot go while they have children.
@Entity final class SyncNode {
    var id: Int
    var parent: SyncNode?
    var children: Set<SyncNode> = []
    static let identity = Identity(\SyncNode.id)
    static let inverses = [Inverse(\SyncNode.parent, \SyncNode.children)]
    static let deleteRules: [DeleteRule<SyncNode>] = [.deny(\.children)]
    init(id: Int) { self.id = id }
}

/// No identity: nothing stored can be recognized in a payload.
@Entity final class SyncEvent {
    var name: String = ""
    init(name: String) { self.name = name }
}

@Suite struct SyncTests {
    static let entities: [any EntityObject.Type] = [
        SyncIssue.self, SyncLabel.self, SyncComment.self, SyncBlocker.self, SyncNote.self, SyncFolder.self, SyncNode.self,
        SyncEvent.self,
    ]

    /// Issues 1–4 of repository a and 5–6 of b, each with label 1 (and 2 for even ids) and two comments.
    static func seeded() throws -> (Store, String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { context in
            let labels = [SyncLabel(id: 1), SyncLabel(id: 2)]
            for id in 1...6 {
                let issue = SyncIssue(id: id)
                issue.repository = id <= 4 ? "a" : "b"
                issue.title = "issue \(id)"
                try context.insert(issue)
                issue.labels = id % 2 == 0 ? Set(labels) : [labels[0]]
                issue.comments = [SyncComment(id: id * 10 + 1), SyncComment(id: id * 10 + 2)]
            }
            for id in 1...6 {
                let note = SyncNote(id: id)
                note.topic = id <= 3 ? "x" : "y"
                try context.insert(note)
                note.tags = [labels[0]]
            }
        }
        return (store, path)
    }

    static func write(_ lines: [String], _ name: String = "sync.jsonl") throws -> String {
        let path = TestStore.temporaryPath(name)
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func ids(_ path: String, _ sql: String) throws -> [String] {
        try RawDatabase(path).rows(sql).map { $0.joined(separator: " ") }
    }

    static func jsonLines(_ batchSize: Int = 1_000, policy: ImportOptions.FailurePolicy = .stop, commitEveryBatch: Bool = false) -> ImportOptions {
        ImportOptions(layout: .jsonLines, batchSize: batchSize, failurePolicy: policy, commitEveryBatch: commitEveryBatch)
    }

    @Test(arguments: [
        (1_000, ImportOptions.FailurePolicy.stop, false), (1, .stop, false), (2, .skip, false), (1, .stop, true),
    ])
    func anImportDeletesExactlyTheMissingObjectsOfTheScope(batchSize: Int, policy: ImportOptions.FailurePolicy, commits: Bool) throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.write([
            #"{"id": 1, "repository": "a", "title": "one", "labels": [1]}"#,
            #"{"id": 3, "repository": "a", "title": "issue 3", "labels": [1]}"#,
            #"{"id": 7, "repository": "a", "title": "new", "labels": [2]}"#,
        ])
        let report = try store.importJSON(
            SyncIssue.self, from: .file(dump), options: Self.jsonLines(batchSize, policy: policy, commitEveryBatch: commits),
            syncing: .matching(\.repository == "a"))

        #expect(try Self.ids(path, "SELECT id, repository, title FROM SyncIssue ORDER BY id") == [
            "1 a one", "3 a issue 3", "5 b issue 5", "6 b issue 6", "7 a new",
        ])
        // Their comments went with them (cascade), their label links too (join rows); labels stay.
        #expect(try Self.ids(path, "SELECT id FROM SyncComment ORDER BY id") == ["11", "12", "31", "32", "51", "52", "61", "62"])
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncIssue_labels WHERE source NOT IN (SELECT _pk FROM SyncIssue)") == ["0"])
        #expect(try Self.ids(path, "SELECT id FROM SyncLabel ORDER BY id") == ["1", "2"])
        #expect(report.sync == ImportReport.Sync(entity: "SyncIssue", present: 2, deleted: 2))
        #expect(report.entities["SyncIssue"]?.deleted == 2)
        #expect(report.entities["SyncIssue"]?.inserted == 1)
        #expect(report.entities["SyncComment"]?.deleted == 4)
        #expect(report.summary.contains("sync of SyncIssue: 2 deleted that the dump no longer has"))
        #expect(report.summary.contains("SyncComment: 0 inserted, 0 updated, 0 unchanged, 4 deleted"))
    }

    @Test func theAllScopeDeletesEveryStoredObjectTheDumpLacks() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.write([#"{"id": 2, "repository": "a"}"#, #"{"id": 6, "repository": "b"}"#])
        let report = try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(), syncing: .all)
        #expect(try Self.ids(path, "SELECT id FROM SyncIssue ORDER BY id") == ["2", "6"])
        #expect(report.sync?.deleted == 4)
        #expect(report.sync?.present == 2)
    }

    @Test func anEmptyDumpEmptiesTheScope() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.write([])
        let report = try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(), syncing: .matching(\.repository == "b"))
        #expect(try Self.ids(path, "SELECT id FROM SyncIssue ORDER BY id") == ["1", "2", "3", "4"])
        #expect(report.sync?.deleted == 2)
    }

    @Test func anEntityWithoutRulesIsDeletedByRowIDAndItsLinksCleared() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.write([#"{"id": 1, "topic": "x"}"#, #"{"id": 5, "topic": "y"}"#])
        let report = try store.importJSON(SyncNote.self, from: .file(dump), options: Self.jsonLines(), syncing: .matching(\.topic == "x"))
        #expect(try Self.ids(path, "SELECT id FROM SyncNote ORDER BY id") == ["1", "4", "5", "6"])
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncNote_tags") == ["4"])
        #expect(report.entities["SyncNote"]?.deleted == 2)
    }

    @Test func aReferenceCountsAsPresentAndObjectsTheDumpMadeAreKept() throws {
        let (store, path) = try Self.seeded()
        // Issue 4 only appears as issue 1's parent; issue 99 is a stub the dump made: both stay.
        let dump = try Self.write([#"{"id": 1, "repository": "a", "parent": 4}"#, #"{"id": 3, "repository": "a", "parent": 99}"#])
        let report = try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(), syncing: .all)
        #expect(try Self.ids(path, "SELECT id FROM SyncIssue ORDER BY id") == ["1", "3", "4", "99"])
        #expect(report.sync?.deleted == 3)
    }

    @Test func aFailedImportDeletesNothing() throws {
        let (store, path) = try Self.seeded()
        let before = try RawDatabase(path).rows("SELECT * FROM SyncIssue ORDER BY id")
        let dump = try Self.write([#"{"id": 1, "repository": "a"}"#, #"{"id": "bad"}"#])
        #expect(throws: ImportError.self) {
            try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(1), syncing: .all)
        }
        #expect(try RawDatabase(path).rows("SELECT * FROM SyncIssue ORDER BY id") == before)
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncComment") == ["12"])
    }

    @Test func aFailedImportThatCommittedBatchesDeletesNothing() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.write([#"{"id": 1, "repository": "a", "title": "kept"}"#, #"{"id": "bad"}"#])
        #expect(throws: ImportError.self) {
            try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(1, commitEveryBatch: true), syncing: .all)
        }
        // The first batch was committed; nothing was deleted.
        #expect(try Self.ids(path, "SELECT id, title FROM SyncIssue WHERE id IN (1, 2)") == ["1 kept", "2 issue 2"])
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncIssue") == ["6"])
    }

    @Test func aSkippedRecordWithholdsTheDeletions() throws {
        let (store, path) = try Self.seeded()
        let dump = try Self.write([#"{"id": 1, "repository": "a", "title": "one"}"#, #"{"id": "bad"}"#])
        let report = try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(policy: .skip), syncing: .all)
        #expect(report.recordsSkipped == 1)
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncIssue") == ["6"])
        #expect(try Self.ids(path, "SELECT title FROM SyncIssue WHERE id = 1") == ["one"])
        let sync = try #require(report.sync)
        #expect(sync.deleted == 0)
        #expect(sync.withheldReason == "1 record was skipped, so the dump is not the whole truth: nothing was deleted")
        #expect(report.entities["SyncIssue"]?.deleted == 0)
    }

    @Test func aDeniedDeletionFailsTheImportAndChangesNothing() throws {
        let (store, path) = try Self.seeded()
        try store.write { context in
            try #require(try context.object(SyncIssue.self, identity: 2)).blockers = [SyncBlocker(id: 1)]
        }
        let before = try RawDatabase(path).rows("SELECT * FROM SyncIssue ORDER BY id")
        let dump = try Self.write([#"{"id": 1, "repository": "a", "title": "changed"}"#])
        let error = try #require(throws: ImportError.self) {
            try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(), syncing: .matching(\.repository == "a"))
        }
        let cause = try #require(error.underlyingError as? StoreError)
        #expect(cause.code == .deleteDenied)
        #expect(cause.message.contains("cannot delete SyncIssue id = 2: its blockers still has 1 SyncBlocker object"))
        #expect(try RawDatabase(path).rows("SELECT * FROM SyncIssue ORDER BY id") == before)
    }

    @Test func manyPagesOfRowIDsAreSynced() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        let all = try Self.write((1...5_000).map { #"{"id": \#($0), "topic": "\#($0 % 2 == 0 ? "even" : "odd")"}"# }, "all.jsonl")
        _ = try store.importJSON(SyncNote.self, from: .file(all), options: Self.jsonLines())
        // Every third note is missing from the second dump; only the even ones are in scope.
        let kept = (1...5_000).filter { $0 % 3 != 0 }
        let dump = try Self.write(kept.map { #"{"id": \#($0), "topic": "\#($0 % 2 == 0 ? "even" : "odd")"}"# }, "kept.jsonl")
        let report = try store.importJSON(SyncNote.self, from: .file(dump), options: Self.jsonLines(), syncing: .matching(\.topic == "even"))
        let expected = (1...5_000).filter { $0 % 3 != 0 || $0 % 2 == 1 }
        #expect(try Self.ids(path, "SELECT id FROM SyncNote ORDER BY id") == expected.map(String.init))
        #expect(report.sync?.deleted == (1...5_000).filter { $0 % 6 == 0 }.count)
        #expect(report.sync?.present == kept.count)
    }

    @Test func observersHearOfSyncDeletions() async throws {
        let (store, _) = try Self.seeded()
        // Comments were cascaded to; notes' links to labels went with the notes.
        var comments = store.observe(SyncComment.self).makeAsyncIterator()
        var labels = store.observe(SyncLabel.self).makeAsyncIterator()
        #expect(try #require(await comments.next()).rows.count == 12)
        _ = try #require(await labels.next())
        let dump = try Self.write([#"{"id": 1, "repository": "a"}"#])
        _ = try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(), syncing: .all)
        let change = try #require(await comments.next())
        #expect(change.rows.count == 2)
        #expect(change.deleted.count == 10)
        // Label rows did not change, but their links did: observers of labels are told too.
        let labelChange = try #require(await labels.next())
        #expect(labelChange.rows.count == 2 && labelChange.deleted.isEmpty)
    }

    @Test func theScopeIsWhatItWasBeforeAnyDeletion() throws {
        // More objects than a page of row ids: deleting the first page's parent would put its child in the scope.
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        try store.write { context in
            for id in 1...4_100 { try context.insert(SyncIssue(id: id)) }
            let child = SyncIssue(id: 5_000)
            try context.insert(child)
            child.parent = try context.object(SyncIssue.self, identity: 1)
        }
        let dump = try Self.write([])
        let report = try store.importJSON(SyncIssue.self, from: .file(dump), options: Self.jsonLines(), syncing: .matching(\.parent == nil))
        #expect(try Self.ids(path, "SELECT id, parent FROM SyncIssue") == ["5000 NULL"])
        #expect(report.sync?.deleted == 4_100)
    }

    @Test func aDenyHoldsOnlyForWhatStays() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        try store.write { context in
            for id in 1...4_100 { try context.insert(SyncNode(id: id)) }
            // Node 1's child is on a later page of row ids, and goes too: no denial.
            try #require(try context.object(SyncNode.self, identity: 4_100)).parent = try context.object(SyncNode.self, identity: 1)
        }
        let report = try store.importJSON(SyncNode.self, from: .file(try Self.write([])), options: Self.jsonLines(), syncing: .all)
        #expect(report.sync?.deleted == 4_100)
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncNode") == ["0"])
    }

    @Test func aCascadeStopsAtWhatThePayloadHas() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        try store.write { context in
            let parent = SyncFolder(id: 1)
            try context.insert(parent)
            for id in 2...3 { parent.children.insert(SyncFolder(id: id)) }
        }
        // Folder 1 is gone from the payload, folder 2 is not: the cascade takes folder 3 only.
        let dump = try Self.write([#"{"id": 2, "name": "still here"}"#])
        let report = try store.importJSON(SyncFolder.self, from: .file(dump), options: Self.jsonLines(), syncing: .all)
        #expect(try Self.ids(path, "SELECT id, name, parent FROM SyncFolder") == ["2 still here NULL"])
        #expect(report.sync?.deleted == 2)
        #expect(report.entities["SyncFolder"]?.deleted == 2)
    }

    @Test func anEntityWithoutIdentityCannotBeSynced() throws {
        let (store, _) = try Self.seeded()
        let error = try #require(throws: ImportError.self) {
            try store.importJSON(SyncEvent.self, from: .file(try Self.write([#"{"name": "x"}"#])), options: Self.jsonLines(), syncing: .all)
        }
        #expect(error.description.contains("cannot sync SyncEvent: it has no identity"))
        #expect(error.recordIndex == nil)  // refused before any record was read
        #expect(try store.read { try $0.count(SyncEvent.self) } == 0)
    }

    // MARK: - Decoder

    @Test func aDenialInADecodeLeavesNothingDeletedEvenWhenCaught() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        try store.write { context in
            for id in 1...4_098 { try context.insert(SyncNode(id: id)) }
            // Node 4097 (second page) keeps a child the payload has: denied after the first page was deleted.
            try #require(try context.object(SyncNode.self, identity: 4_098)).parent = try context.object(SyncNode.self, identity: 4_097)
        }
        try store.write { context in
            let error = try #require(throws: StoreError.self) {
                try StoreDecoder().decodeAndSave(
                    [SyncNode].self, from: Data(#"[{"id": 4098}]"#.utf8), into: context, syncing: .all(SyncNode.self))
            }
            #expect(error.code == .deleteDenied)
            #expect(try context.count(SyncNode.self) == 4_098)
        }
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncNode") == ["4098"])
    }

    @Test func decodeAndSaveSyncsThePayloadInTheSameTransaction() throws {
        let (store, path) = try Self.seeded()
        let page = Data(#"[{"id": 5, "repository": "b", "title": "five"}, {"id": 8, "repository": "b"}]"#.utf8)
        let counts = try store.write { context in
            let (issues, counts) = try StoreDecoder().decodeAndSave(
                [SyncIssue].self, from: page, into: context, syncing: .matching(\SyncIssue.repository == "b"))
            #expect(issues.map(\.id) == [5, 8])
            #expect(try context.count(SyncIssue.self) == 6)
            return counts
        }
        #expect(counts["SyncIssue"] == ImportReport.EntityCounts(inserted: 1, updated: 1, unchanged: 0, deleted: 1))
        #expect(counts["SyncComment"]?.deleted == 2)
        #expect(try Self.ids(path, "SELECT id FROM SyncIssue ORDER BY id") == ["1", "2", "3", "4", "5", "8"])
    }

    @Test func aWrapperPayloadSyncsItsEntity() throws {
        struct Page: Decodable { let items: Many<SyncNote> }
        let (store, path) = try Self.seeded()
        let page = Data(#"{"items": [{"id": 2, "topic": "x"}]}"#.utf8)
        let counts = try store.write { context in
            try StoreDecoder().decodeAndSave(Page.self, from: page, into: context, syncing: .all(SyncNote.self)).entities
        }
        #expect(counts["SyncNote"]?.deleted == 5)
        #expect(try Self.ids(path, "SELECT id FROM SyncNote") == ["2"])
    }

    @Test func aPayloadThatFailsDeletesNothing() throws {
        let (store, path) = try Self.seeded()
        let page = Data(#"[{"id": 5, "repository": "b"}, {"id": "five"}]"#.utf8)
        #expect(throws: DecodingError.self) {
            try store.write { context in
                _ = try StoreDecoder().decodeAndSave([SyncIssue].self, from: page, into: context, syncing: .all(SyncIssue.self))
            }
        }
        #expect(try Self.ids(path, "SELECT count(*) FROM SyncIssue") == ["6"])
    }

    @Test func oldReportsWithoutDeletionsStillDecode() throws {
        let json = #"{"inserted": 1, "updated": 2, "unchanged": 3}"#
        let counts = try JSONDecoder().decode(ImportReport.EntityCounts.self, from: Data(json.utf8))
        #expect(counts == ImportReport.EntityCounts(inserted: 1, updated: 2, unchanged: 3, deleted: 0))
    }
}
