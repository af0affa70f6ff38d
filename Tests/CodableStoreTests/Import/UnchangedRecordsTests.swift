import CodableStore
import Foundation
import IssuesModel
import Testing

/// ImportOptions.skipsUnchangedRecords: records whose rows an earlier import left as they would write them are not
/// decoded again. The oracle is the same sequence of imports and changes without skipping: both stores must hold the
/// same, and report the same counts.
@Suite struct UnchangedRecordsTests {
    static func options(skipping: Bool, batchSize: Int = 100, decoder: StoreDecoder = issueDecoder()) -> ImportOptions {
        ImportOptions(batchSize: batchSize, skipsUnchangedRecords: skipping, decoder: decoder)
    }

    /// A dump of the reference workload with its own seed: the same ids as another seed's, with other values.
    static func dump(count: Int, seed: UInt64, duplicates: Double = 0.1) throws -> String {
        var generator = IssueDumpGenerator(seed: seed, duplicateFraction: duplicates)
        var bytes: [UInt8] = []
        generator.writeArray(count: count) { bytes += $0 }
        let path = TestStore.temporaryPath("dump-\(seed).json")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The first `count` records of a dump the generator wrote (one record a line), byte for byte.
    static func prefix(_ count: Int, of dump: String) throws -> String {
        let lines = try String(contentsOfFile: dump, encoding: .utf8).split(separator: "\n")
        var records = lines[1...count].map(String.init)
        if records[count - 1].hasSuffix(",") { records[count - 1].removeLast() }
        return try write("[\n" + records.joined(separator: "\n") + "\n]\n")
    }

    static func write(_ json: String) throws -> String {
        let path = TestStore.temporaryPath("records.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A store that skips unchanged records and one that does not, fed the same.
    struct Pair {
        let skipping: (path: String, store: Store)
        let decoding: (path: String, store: Store)

        init() throws {
            let first = TestStore.temporaryPath("skipping.sqlite")
            let second = TestStore.temporaryPath("decoding.sqlite")
            skipping = (first, try Store(path: first, entities: issueEntities))
            decoding = (second, try Store(path: second, entities: issueEntities))
        }

        /// Imports `dump` into both; checks they hold the same and counted the same; returns the skipping store's
        /// report.
        @discardableResult
        func importBoth(_ dump: String, batchSize: Int = 100, syncing: Bool = false, sourceLocation: SourceLocation = #_sourceLocation)
            throws -> ImportReport
        {
            let skipped = try skipping.store.importJSON(
                GitIssue.self, from: .file(dump), options: UnchangedRecordsTests.options(skipping: true, batchSize: batchSize),
                syncing: syncing ? .all : nil)
            let decoded = try decoding.store.importJSON(
                GitIssue.self, from: .file(dump), options: UnchangedRecordsTests.options(skipping: false, batchSize: batchSize),
                syncing: syncing ? .all : nil)
            #expect(decoded.unchangedRecordsSkipped == nil, sourceLocation: sourceLocation)
            #expect(skipped.entities == decoded.entities, sourceLocation: sourceLocation)
            #expect(skipped.sync == decoded.sync, sourceLocation: sourceLocation)
            #expect(try ImportTests.contents(skipping.path) == ImportTests.contents(decoding.path), sourceLocation: sourceLocation)
            return skipped
        }

        /// Runs the same change in both stores.
        func writeBoth(_ change: (Context) throws -> Void) throws {
            try skipping.store.write { try change($0) }
            try decoding.store.write { try change($0) }
        }
    }

    @Test func aReImportOfTheSameDumpSkipsEveryRecordAndWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let dump = try Self.dump(count: 400, seed: 7, duplicates: 0)
        let report = try Store(path: path, entities: issueEntities).importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true))
        #expect(report.unchangedRecordsSkipped == 0)
        // Every row has the digest of the record that wrote it.
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT count(*) FROM GitIssue WHERE _digest IS NULL") == "0")
        #expect(try raw.value("SELECT count(DISTINCT _digest) FROM GitIssue") == "400")
        let before = try ImportTests.contents(path)

        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let again = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true))
        #expect(log.writes.isEmpty, "\(log.writes.prefix(3))")
        #expect(again.unchangedRecordsSkipped == 400)
        #expect(again.summary.contains("400 unchanged records not decoded"))
        #expect(again.entities["GitIssue"] == ImportReport.EntityCounts(unchanged: 400))
        // The skipped records' issues are not read: no identity lookup returned their rows' columns, and no
        // membership of theirs was loaded.
        #expect(!log.all.contains { $0.contains("FROM \"Topic\" JOIN \"GitIssue_labels\"") }, "\(log.all.filter { $0.hasPrefix("SELECT") })")
        #expect(try ImportTests.contents(path) == before)
    }

    @Test func reImportsOfChangingDumpsEndInTheSameStoreAsDecodingEverything() throws {
        let pair = try Pair()
        let first = try Self.dump(count: 600, seed: 7)
        #expect(try pair.importBoth(first).unchangedRecordsSkipped == 0)
        // The same dump: its repeated ids, whose occurrences carry other values, are decoded (a row holds the last).
        let again = try #require(try pair.importBoth(first).unchangedRecordsSkipped)
        #expect(again > 450 && again < 600, "\(again)")
        // Another dump over the first 400 ids, then the first again: the rows the second rewrote are decoded.
        let second = try Self.dump(count: 400, seed: 11)
        #expect(try pair.importBoth(second).unchangedRecordsSkipped == 0)
        let back = try #require(try pair.importBoth(first).unchangedRecordsSkipped)
        #expect(back > 100 && back < again, "\(back)")
        #expect(try #require(try pair.importBoth(first).unchangedRecordsSkipped) == again)
        // Batches of one record.
        #expect(try #require(try pair.importBoth(second, batchSize: 1).unchangedRecordsSkipped) < 100)
        #expect(try #require(try pair.importBoth(second, batchSize: 1).unchangedRecordsSkipped) > 300)
    }

    /// The nested user of a skipped record is still upserted: a later record of the last import changed it, and the
    /// order of this one decides.
    @Test func aSkippedRecordStillUpsertsWhatIsNestedInIt() throws {
        let pair = try Pair()
        let issue1 = #"{"id": 1, "number": 1, "title": "a", "user": {"id": 5, "login": "x"}, "labels": [{"id": 9, "name": "bug"}]}"#
        let issue2 = #"{"id": 2, "number": 2, "title": "b", "user": {"id": 5, "login": "y"}, "labels": [{"id": 9, "name": "crash"}]}"#
        try pair.importBoth(try Self.write("[\(issue1), \(issue2)]"))
        let report = try pair.importBoth(try Self.write("[\(issue1)]"))
        #expect(report.unchangedRecordsSkipped == 1)
        let raw = try RawDatabase(pair.skipping.path)
        #expect(try raw.rows("SELECT id, login FROM User") == [["5", "x"]])
        #expect(try raw.rows("SELECT id, name FROM Topic") == [["9", "bug"]])
        #expect(report.entities["User"]?.updated == 1)
    }

    /// Whatever changes a row or its links through the store clears its digest: the next import restores the dump's
    /// values, as one that decodes everything does.
    @Test func changesMadeThroughTheStoreAreNotSkipped() throws {
        let pair = try Pair()
        let dump = try Self.dump(count: 200, seed: 7, duplicates: 0)
        try pair.importBoth(dump)
        let raw = try RawDatabase(pair.skipping.path)
        let labelled = try raw.rows(
            "SELECT i.id, t.id FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY i.id LIMIT 2")
        try #require(labelled.count == 2)
        let (unlinkedIssue, unlinkedTopic) = (Int(labelled[0][0])!, Int(labelled[0][1])!)
        let deletedTopic = Int(labelled[1][1])!
        let deletedUser = Int(try raw.value("SELECT u.id FROM GitIssue i JOIN User u ON u._pk = i.user WHERE i.id = 10"))!
        try pair.writeBoth { context in
            try #require(try context.object(GitIssue.self, identity: 3)).title = "edited"
            // A link removed from the other side, whose list is the only one loaded.
            let topic = try #require(try context.object(Topic.self, identity: unlinkedTopic))
            topic.issues = topic.issues.filter { $0.id != unlinkedIssue }
            try context.delete(try #require(try context.object(Topic.self, identity: deletedTopic)))
            try context.delete(try #require(try context.object(User.self, identity: deletedUser)))
            #expect(try context.updateAll(GitIssue.self, where: \.id == 20, set: [.set(\.comments, to: -1)]) == 1)
        }
        #expect(try raw.value("SELECT count(*) FROM GitIssue WHERE _digest IS NULL") != "0")
        let report = try pair.importBoth(dump)
        let skipped = try #require(report.unchangedRecordsSkipped)
        #expect(skipped > 100 && skipped < 195, "\(skipped)")
        #expect(try raw.value("SELECT title FROM GitIssue WHERE id = 3") != "edited")
        #expect(try raw.value("SELECT comments FROM GitIssue WHERE id = 20") != "-1")
        // The fresh import of the dump holds the same.
        let fresh = TestStore.temporaryPath()
        _ = try Store(path: fresh, entities: issueEntities).importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: false))
        #expect(try ImportTests.contents(fresh) == ImportTests.contents(pair.skipping.path))
    }

    /// SQL of another program that bypasses the store's digest guards (see DigestGuardTests) does not clear digests:
    /// `forgetImportDigests()` makes the next import decode everything.
    @Test func forgettingDigestsAfterForeignSQLRestoresTheDump() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let dump = try Self.dump(count: 100, seed: 7, duplicates: 0)
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true))
        let title = try RawDatabase(path).value("SELECT title FROM GitIssue WHERE id = 1")
        let bypassing = try RawDatabase(path)
        try bypassing.setTriggersEnabled(false)
        try bypassing.execute("UPDATE GitIssue SET title = 'foreign' WHERE id = 1")
        let trusting = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true))
        #expect(trusting.unchangedRecordsSkipped == 100)
        #expect(try RawDatabase(path).value("SELECT title FROM GitIssue WHERE id = 1") == "foreign")
        try store.forgetImportDigests()
        let restoring = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true))
        #expect(restoring.unchangedRecordsSkipped == 0)
        #expect(try RawDatabase(path).value("SELECT title FROM GitIssue WHERE id = 1") == title)
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true)).unchangedRecordsSkipped == 100)
    }

    /// A digest covers the decoder's options: other options decode every record again; options with closures turn
    /// skipping off.
    @Test func otherDecoderOptionsSkipNothing() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let dump = try Self.dump(count: 100, seed: 7, duplicates: 0)
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true))
        let ignoring = issueDecoder()
        ignoring.unknownReferencePolicy = .ignore
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true, decoder: ignoring)).unchangedRecordsSkipped == 0)
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true, decoder: ignoring)).unchangedRecordsSkipped == 100)
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true)).unchangedRecordsSkipped == 0)
        let custom = StoreDecoder()
        custom.dateDecodingStrategy = .custom { decoder in
            try ISO8601DateFormatter().date(from: decoder.singleValueContainer().decode(String.self)) ?? Date()
        }
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true, decoder: custom)).unchangedRecordsSkipped == nil)
        // Not under the skip policy (each batch in a savepoint), nor with a commit per batch.
        var perBatch = Self.options(skipping: true)
        perBatch.commitEveryBatch = true
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: perBatch).unchangedRecordsSkipped == nil)
    }

    /// A record that leaves a reference unresolved gets no digest: once its destination exists, the same record links it.
    @Test func aRecordWithAnIgnoredReferenceIsDecodedAgain() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let ignoring = issueDecoder()
        ignoring.unknownReferencePolicy = .ignore
        let dump = try Self.write(#"[{"id": 1, "number": 1, "title": "a", "labels": [7]}, {"id": 2, "number": 2, "title": "b"}]"#)
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true, decoder: ignoring))
        #expect(try RawDatabase(path).rows("SELECT id, _digest IS NULL FROM GitIssue ORDER BY id") == [["1", "1"], ["2", "0"]])
        try store.write { try $0.insert(Topic(id: 7)) }
        let report = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true, decoder: ignoring))
        #expect(report.unchangedRecordsSkipped == 1)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM GitIssue_labels") == "1")
    }

    /// A sync that skips unchanged records still counts them as present: it deletes only what the dump lacks.
    @Test func aSyncDeletesOnlyWhatTheDumpLacks() throws {
        let pair = try Pair()
        let dump = try Self.dump(count: 300, seed: 7)
        try pair.importBoth(dump)
        let report = try pair.importBoth(try Self.prefix(250, of: dump), syncing: true)
        #expect(try #require(report.unchangedRecordsSkipped) > 150)
        #expect(try #require(report.sync).deleted > 0)
    }

    /// A store of storage version 3 gets the `_digest` column on open, its rows kept.
    @Test func aVersionThreeStoreGetsTheDigestColumn() throws {
        let path = TestStore.temporaryPath()
        let dump = try Self.dump(count: 50, seed: 7, duplicates: 0)
        _ = try Store(path: path, entities: issueEntities).importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: false))
        let before = try ImportTests.contents(path)
        let raw = try RawDatabase(path)
        for table in ["GitIssue", "User", "Topic", "Place", "Membership"] {
            try raw.execute("ALTER TABLE \"\(table)\" DROP COLUMN _digest")
        }
        try raw.execute(#"UPDATE _codablestore_metadata SET value = replace(value, '"version":4', '"version":3') WHERE key = 'model'"#)
        let store = try Store(path: path, entities: issueEntities)
        #expect(try raw.value("SELECT count(*) FROM pragma_table_info('GitIssue') WHERE name = '_digest'") == "1")
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'").contains(#""version":4"#))
        #expect(try ImportTests.contents(path) == before)
        // The first import with skipping leaves digests (each row one UPDATE of its digest alone); the next skips.
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true)).unchangedRecordsSkipped == 0)
        #expect(try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(skipping: true)).unchangedRecordsSkipped == 50)
        #expect(try ImportTests.contents(path) == before)
    }
}

@Entity final class DigestBook {
    var id: Int
    var title: String = ""
    var tags: Set<DigestTag> = []
    static let identity = Identity(\DigestBook.id)
    init(id: Int) { self.id = id }
}

@Entity final class DigestTag {
    var id: Int
    var name: String = ""
    var books: Set<DigestBook> = []
    static let identity = Identity(\DigestTag.id)
    init(id: Int) { self.id = id }
}

/// Links of an unordered many-to-many (a join table without positions) change without their rows: each change clears
/// the digests of both sides' rows, in a later write as within the import itself.
@Suite struct UnchangedRecordLinkTests {
    static let entities: [any EntityObject.Type] = [DigestBook.self, DigestTag.self]

    static func importBooks(_ json: String, into store: Store) throws -> ImportReport {
        try store.importJSON(
            DigestBook.self, from: .file(try UnchangedRecordsTests.write(json)), options: ImportOptions(skipsUnchangedRecords: true))
    }

    static func links(_ path: String) throws -> [[String]] {
        try RawDatabase(path).rows(
            "SELECT b.id, t.id FROM DigestBook_tags j JOIN DigestBook b ON b._pk = j.source JOIN DigestTag t ON t._pk = j.target ORDER BY 1, 2")
    }

    @Test func aLinkRemovedFromTheOtherSideIsRestoredByTheNextImport() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        let books = #"[{"id": 1, "title": "a", "tags": [{"id": 9, "name": "t"}]}, {"id": 2, "title": "b", "tags": [{"id": 9, "name": "t"}]}]"#
        _ = try Self.importBooks(books, into: store)
        #expect(try Self.links(path) == [["1", "9"], ["2", "9"]])
        try store.write { context in
            let tag = try #require(try context.object(DigestTag.self, identity: 9))
            tag.books = tag.books.filter { $0.id != 1 }
        }
        #expect(try Self.links(path) == [["2", "9"]])
        #expect(try RawDatabase(path).rows("SELECT id, _digest IS NULL FROM DigestBook ORDER BY id") == [["1", "1"], ["2", "0"]])
        let report = try Self.importBooks(books, into: store)
        #expect(report.unchangedRecordsSkipped == 1)
        #expect(try Self.links(path) == [["1", "9"], ["2", "9"]])
    }

    /// A record's row linked by a later record of the same import (a nested tag listing books) keeps no digest of its
    /// own record: an import of that record alone then unlinks it again.
    @Test func aLinkMadeByALaterRecordClearsTheDigestOfTheEarlierOne() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        let second = #"{"id": 2, "title": "b", "tags": []}"#
        _ = try Self.importBooks(#"[\#(second), {"id": 1, "title": "a", "tags": [{"id": 9, "name": "t", "books": [1, 2]}]}]"#, into: store)
        #expect(try Self.links(path) == [["1", "9"], ["2", "9"]])
        #expect(try RawDatabase(path).rows("SELECT id, _digest IS NULL FROM DigestBook ORDER BY id") == [["1", "0"], ["2", "1"]])
        let report = try Self.importBooks("[\(second)]", into: store)
        #expect(report.unchangedRecordsSkipped == 0)
        #expect(try Self.links(path) == [["1", "9"]])
    }
}
