import CodableStore
import Foundation
import IssuesModel
import Testing

/// An entity with a unique attribute besides its identity: the only way an upsert import can fail in SQLite.
@Entity final class Voucher {
    var id: Int
    var code: String
    static let identity = Identity(\Voucher.id)
    static let indexes = [EntityIndex(\Voucher.code, unique: true)]
    init(id: Int, code: String) {
        self.id = id
        self.code = code
    }
}

/// Dolls inside dolls: nested deeper than the importer's lookahead collects identities (16 levels), so the
/// deepest ones are looked up while decoding, with the writer thread sharing the connection.
@Entity final class Doll {
    var id: Int
    var label: String?
    var inner: Doll?
    static let identity = Identity(\Doll.id)
    init(id: Int) { self.id = id }
}

/// Under the stop policy, an import writes each batch on a writer thread while it decodes the next one
/// (`WriteBehind`). Committing every batch writes each batch before decoding the next: the two must end in
/// the same store, whatever repeats across batches.
@Suite struct WriteBehindTests {
    static func importBothWays(
        _ dumps: [String], batchSize: Int, retainedObjectLimit: Int = ImportOptions().retainedObjectLimit
    ) throws -> (behind: [[String]], inOrder: [[String]]) {
        var results: [[[String]]] = []
        for commitEveryBatch in [false, true] {
            let path = TestStore.temporaryPath()
            let store = try Store(path: path, entities: issueEntities)
            var options = ImportTests.options(batchSize: batchSize)
            options.commitEveryBatch = commitEveryBatch
            options.retainedObjectLimit = retainedObjectLimit
            for dump in dumps { _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options) }
            let raw = try RawDatabase(path)
            #expect(try raw.value("PRAGMA integrity_check") == "ok")
            #expect(try raw.rows("PRAGMA foreign_key_check").isEmpty)
            results.append(try ImportTests.contents(path))
        }
        return (results[0], results[1])
    }

    static func write(_ json: String) throws -> String {
        let path = TestStore.temporaryPath("dump.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// 40% of the records repeat an earlier id (often one of the batch before, still waiting for the writer),
    /// with other values, users and labels; a second dump then updates the stored records. With the default limit of
    /// retained objects every user and label stays in memory; with 3, retained ones are let go at almost every batch.
    @Test(arguments: [1, 2, 7, 64], [3, ImportOptions().retainedObjectLimit])
    func writingBehindEndsInTheSameStoreAsWritingEachBatchFirst(batchSize: Int, retainedObjectLimit: Int) throws {
        var dumps: [String] = []
        for seed: UInt64 in [3, 4] {
            var generator = IssueDumpGenerator(seed: seed, duplicateFraction: 0.4)
            var bytes: [UInt8] = []
            generator.writeArray(count: 400) { bytes += $0 }
            // GitIssue has no updated_at; the generator's other keys are all GitIssue's.
            let path = TestStore.temporaryPath("dump.json")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            dumps.append(path)
        }
        let (behind, inOrder) = try Self.importBothWays(dumps, batchSize: batchSize, retainedObjectLimit: retainedObjectLimit)
        #expect(behind.count > 400)
        #expect(behind == inOrder)
    }

    /// A user changed in one batch and changed back in the next: the next batch must compare with the value
    /// the writer has not written yet, not with the stored one. Labels replaced batch after batch, and again
    /// after the issue left memory.
    @Test func aValueChangedBackInTheNextBatchAndMembershipsReplacedAcrossBatches() throws {
        let dump = try Self.write(
            """
            [{"id": 1, "number": 1, "title": "a", "user": {"id": 5, "login": "old"}, "labels": [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]},
             {"id": 2, "number": 2, "title": "b", "user": {"id": 5, "login": "new"}, "labels": [{"id": 2}]},
             {"id": 1, "number": 1, "title": "a2", "user": {"id": 5, "login": "old"}, "labels": [{"id": 3, "name": "z"}, {"id": 1}]},
             {"id": 3, "number": 3, "title": "c", "user": {"id": 6, "login": "other"}, "labels": []},
             {"id": 4, "number": 4, "title": "d", "user": {"id": 6}, "labels": [{"id": 2}]},
             {"id": 5, "number": 5, "title": "e", "user": null},
             {"id": 1, "number": 1, "title": "a3", "user": {"id": 6}, "labels": [{"id": 2}, {"id": 3}]},
             {"id": 2, "number": 2, "title": "b2", "labels": [{"id": 1}]}]
            """)
        let (behind, inOrder) = try Self.importBothWays([dump], batchSize: 1)
        #expect(behind == inOrder)
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: ImportTests.options(batchSize: 1))
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, login FROM User ORDER BY id") == [["5", "old"], ["6", "other"]])
        #expect(try raw.rows("SELECT id, title FROM GitIssue ORDER BY id") == [["1", "a3"], ["2", "b2"], ["3", "c"], ["4", "d"], ["5", "e"]])
        #expect(
            try raw.rows(
                "SELECT i.id, t.id, j.position FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY i.id, j.position"
            ) == [["1", "2", "0"], ["1", "3", "1"], ["2", "1", "0"], ["4", "2", "0"]])
        #expect(
            try raw.rows("SELECT i.id, u.id FROM GitIssue i LEFT JOIN User u ON u._pk = i.user ORDER BY i.id")
                == [["1", "6"], ["2", "5"], ["3", "6"], ["4", "6"], ["5", "NULL"]])
    }

    /// A failed write on the writer thread stops the import with the store's error, and the whole import is
    /// rolled back.
    @Test func aWriteThatFailsOnTheWriterThreadStopsTheImportAndLeavesTheStoreAsBefore() throws {
        var records = (1...50).map { #"{"id": \#($0), "code": "c\#($0)"}"# }
        records.append(#"{"id": 51, "code": "c7"}"#)  // the unique code of record 7, in another batch
        records += (52...80).map { #"{"id": \#($0), "code": "c\#($0)"}"# }
        let dump = try Self.write("[" + records.joined(separator: ",\n") + "]")
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Voucher.self])
        try store.write { try $0.insert(Voucher(id: 1000, code: "kept")) }
        let error = try #require(throws: ImportError.self) {
            _ = try store.importJSON(Voucher.self, from: .file(dump), options: ImportOptions(batchSize: 10))
        }
        let cause = try #require(error.underlyingError as? StoreError)
        #expect(cause.code == .identityConflict)
        #expect(error.reason.contains("Voucher"), "\(error)")
        #expect(try RawDatabase(path).rows("SELECT id, code FROM Voucher") == [["1000", "kept"]])
        // The store is usable afterwards, by a write and by another import.
        try store.write { try $0.insert(Voucher(id: 1001, code: "after")) }
        let fixed = try Self.write("[" + (1...30).map { #"{"id": \#($0), "code": "c\#($0)"}"# }.joined(separator: ",") + "]")
        let report = try store.importJSON(Voucher.self, from: .file(fixed), options: ImportOptions(batchSize: 10))
        #expect(report.entities["Voucher"]?.inserted == 30)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Voucher") == "32")
    }

    /// Records nest 24 dolls; chains repeat (with new labels, and sometimes a shorter chain) across batches, so the
    /// lookups past the lookahead find rows the writer wrote and objects it has yet to write.
    @Test(arguments: [1, 3])
    func nestingDeeperThanTheLookaheadEndsInTheSameStore(batchSize: Int) throws {
        func chain(_ record: Int, depth: Int) -> String {
            let base = (record % 4) * 100
            var json = "null"
            for level in stride(from: depth - 1, through: 0, by: -1) {
                json = #"{"id": \#(base + level), "label": "r\#(record)-l\#(level)", "inner": \#(json)}"#
            }
            return json
        }
        let dump = try Self.write("[" + (0..<14).map { chain($0, depth: $0 == 9 ? 20 : 24) }.joined(separator: ",\n") + "]")
        var results: [[[String]]] = []
        for commitEveryBatch in [false, true] {
            let path = TestStore.temporaryPath()
            let store = try Store(path: path, entities: [Doll.self])
            var options = ImportOptions(batchSize: batchSize)
            options.commitEveryBatch = commitEveryBatch
            let report = try store.importJSON(Doll.self, from: .file(dump), options: options)
            #expect(report.recordsImported == 14)
            let raw = try RawDatabase(path)
            #expect(try raw.value("PRAGMA integrity_check") == "ok")
            results.append(try raw.rows("SELECT d.id, d.label, i.id FROM Doll d LEFT JOIN Doll i ON i._pk = d.inner ORDER BY d.id"))
        }
        #expect(results[0] == results[1])
        // 4 chains of 24 dolls; each chain as its last record left it (record 9 cut chain 1 short, 13 restored it).
        #expect(results[0].count == 96)
        #expect(results[0].first == ["0", "r12-l0", "1"])
        #expect(results[0].last == ["323", "r11-l23", "NULL"])
        #expect(results[0].first { $0[0] == "123" } == ["123", "r13-l23", "NULL"])
        #expect(results[0].first { $0[0] == "119" } == ["119", "r13-l19", "120"])
    }
}
