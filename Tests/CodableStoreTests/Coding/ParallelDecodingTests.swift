@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore
import Foundation
import IssuesModel
import Testing

/// An entity whose decoding hook runs a query now and then: a query writes the context's pending changes first,
/// so a decode of it writes rows before the end of the document is known to be valid.
@Entity final class Checkpointed: EntityCustomDecoding {
    var id: Int
    var title: String = ""
    static let identity = Identity(\Checkpointed.id)
    init(id: Int) { self.id = id }

    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder)
        if id % 500 == 0 { _ = try entityState.context?.count(Checkpointed.self) }
    }
}

/// A large top-level array decoded into a pristine context is parsed on a second thread while its first records
/// are decoded (`ParallelArrayDecoding`). Everything observable must be what the one-thread decode gives: the
/// results, the store, the errors, and "a malformed document changes nothing".
@Suite struct ParallelDecodingTests {
    static func decoder(parallel: Bool) -> StoreDecoder {
        let decoder = issueDecoder()
        decoder.parallelDecodingThreshold = parallel ? 0 : nil
        return decoder
    }

    /// A generated dump: 3 batches of the parallel path, a third of the records repeating an earlier id.
    static func dump(seed: UInt64, count: Int = 2_500) -> [UInt8] {
        var generator = IssueDumpGenerator(seed: seed, duplicateFraction: 0.3)
        var bytes: [UInt8] = []
        generator.writeArray(count: count) { bytes += $0 }
        return bytes
    }

    /// Decodes `payload` into a store that first holds `stored` (decoded on one thread), one way or the other.
    static func decode(_ payload: [UInt8], parallel: Bool, after stored: [UInt8]? = nil, log: StatementLog? = nil)
        throws -> (path: String, ids: [Int], distinctObjects: Int)
    {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log?.observer))
        if let stored {
            try store.write { _ = try decoder(parallel: false).decode([GitIssue].self, from: Data(stored), into: $0) }
        }
        log?.reset()
        let (ids, distinct) = try store.write { context in
            let issues = try decoder(parallel: parallel).decode([GitIssue].self, from: Data(payload), into: context)
            return (issues.map(\.id), Set(issues.map(ObjectIdentifier.init)).count)
        }
        return (path, ids, distinct)
    }

    @Test(arguments: [false, true])
    func resultsAndStoreAreTheSameAsOnOneThread(intoAStoreHoldingRecords: Bool) throws {
        let stored = intoAStoreHoldingRecords ? Self.dump(seed: 3) : nil
        let payload = Self.dump(seed: 4)
        let log = StatementLog()
        let parallel = try Self.decode(payload, parallel: true, after: stored, log: log)
        let oneThread = try Self.decode(payload, parallel: false, after: stored)
        #expect(parallel.ids.count == 2_500)
        #expect(parallel.ids == oneThread.ids)
        // Repeated ids are one object, across batches too.
        #expect(parallel.distinctObjects == Set(parallel.ids).count)
        #expect(parallel.distinctObjects < 2_000)
        let contents = try ImportTests.contents(parallel.path)
        #expect(contents.count > 2_000)
        #expect(contents == (try ImportTests.contents(oneThread.path)))
        #expect(try RawDatabase(parallel.path).value("PRAGMA integrity_check") == "ok")
        // Identities are looked up per batch of 1,000 records, never per record: 3 batches, each with one query
        // per entity (the issues' in chunks of 256 keys).
        let lookups = log.all.filter { $0.hasPrefix("SELECT") && ($0.contains(" IN (") || $0.contains(" BETWEEN ")) }
        if intoAStoreHoldingRecords {
            #expect(lookups.count >= 3 && lookups.count <= 20, "\(lookups.count) lookups")
        } else {
            #expect(lookups.isEmpty, "\(lookups.prefix(3))")
        }
    }

    @Test func setsAndManyDecodeInParallelToo() throws {
        let payload = Data(Self.dump(seed: 5))
        let store = try Store.inMemory(entities: issueEntities)
        let (many, set) = try store.write { context in
            let many = try Self.decoder(parallel: true).decode(Many<GitIssue>.self, from: payload, into: context)
            try context.saveAndForgetObjects()
            let set = try Self.decoder(parallel: true).decode(Set<GitIssue>.self, from: payload, into: context)
            return (many.map(\.id), set.map(\.id))
        }
        #expect(many.count == 2_500)
        #expect(Set(many) == Set(set))
        #expect(set.count == Set(many).count)
    }

    /// A document cut short after 2,375 records: the parser finds it long after the first batches were decoded
    /// into the context (rows written meanwhile: see the next test). The context and the store are as before, the
    /// error is the one-thread decode's, and the write goes on.
    @Test func aSyntaxErrorFoundLateChangesNothingAndIsTheOneThreadError() throws {
        let full = Self.dump(seed: 6)
        let cut = Array(full[..<(full.count * 19 / 20)])
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.write { _ = try Self.decoder(parallel: false).decode([GitIssue].self, from: Data(Self.dump(seed: 3)), into: $0) }
        let before = try ImportTests.contents(path)

        var errors: [JSONSyntaxError] = []
        for parallel in [true, false] {
            try store.write { context in
                #expect(context.isPristine)
                do {
                    _ = try Self.decoder(parallel: parallel).decode([GitIssue].self, from: Data(cut), into: context)
                    Issue.record("a truncated document decoded")
                } catch let error as JSONSyntaxError {
                    errors.append(error)
                }
                #expect(context.registeredObjectCount == 0)
                #expect(!context.hasChanges)
                // The write transaction is intact: the rollback went back to the decode's savepoint only.
                try context.insert(GitIssue(id: -1, number: 0, title: "after the error"))
            }
            #expect(try ImportTests.contents(path).filter { $0.first != "-1" } == before)
            try store.write { context in try context.delete(try #require(try context.fetch(GitIssue.self, where: \.id == -1).first)) }
        }
        #expect(errors.count == 2)
        #expect(errors.first == errors.last)
        #expect(errors.first?.reason.isEmpty == false)
        #expect(try RawDatabase(path).value("PRAGMA integrity_check") == "ok")
    }

    /// Rows a hook's query wrote during the decode are rolled back with the savepoint when the parser then finds a
    /// syntax error: the store holds what it held before, and the write goes on.
    @Test func rowsWrittenBeforeTheSyntaxErrorAreRolledBack() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Checkpointed.self])
        try store.write { context in
            for id in [1, 2, 3] { try context.insert(Checkpointed(id: id)) }
        }
        let records = (1...2_500).map { #"{"id": \#($0), "title": "title \#($0)"}"# }
        let cut = "[" + records.joined(separator: ",\n") + ",\n{\"id\": 2501, \"title\": }]"
        let decoder = StoreDecoder()
        decoder.parallelDecodingThreshold = 0
        try store.write { context in
            #expect(throws: JSONSyntaxError.self) {
                _ = try decoder.decode([Checkpointed].self, from: Data(cut.utf8), into: context)
            }
            #expect(context.registeredObjectCount == 0)
            let count = try context.count(Checkpointed.self)
            #expect(count == 3)
        }
        #expect(try RawDatabase(path).rows("SELECT id, title FROM Checkpointed ORDER BY id") == [["1", ""], ["2", ""], ["3", ""]])
        // The same document, well-formed, decodes whole (and the hook's queries wrote along the way).
        let whole = "[" + records.joined(separator: ",\n") + "]"
        try store.write { _ = try decoder.decode([Checkpointed].self, from: Data(whole.utf8), into: $0) }
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Checkpointed WHERE title <> ''") == "2500")
    }

    /// A wrong type in record 10 and a syntax error near the end: on one thread the document is parsed before
    /// anything is decoded, so the syntax error wins; so it must in parallel.
    @Test func aSyntaxErrorAfterAWrongTypeIsTheErrorThrown() throws {
        var text = String(decoding: Self.dump(seed: 7), as: UTF8.self)
        let tenth = try #require(text.ranges(of: #""title":"#).dropFirst(10).first)
        text.replaceSubrange(tenth, with: #""title":5,"ignored":"#)
        text.removeLast(2)  // the closing bracket and the line feed
        for parallel in [true, false] {
            let store = try Store.inMemory(entities: issueEntities)
            #expect(throws: JSONSyntaxError.self) {
                try store.write { _ = try Self.decoder(parallel: parallel).decode([GitIssue].self, from: Data(text.utf8), into: $0) }
            }
            #expect(try store.read { try $0.count(GitIssue.self) } == 0)
        }
    }

    /// In a well-formed document, a wrong type in record 1,500 (the second batch) is a DecodingError with the
    /// record's index in its coding path.
    @Test func aWrongTypeHasTheRecordsCodingPath() throws {
        var text = String(decoding: Self.dump(seed: 8), as: UTF8.self)
        let target = try #require(text.ranges(of: #""comments":"#).dropFirst(1_500).first)
        text.replaceSubrange(target, with: #""comments":"many","ignored":"#)
        var descriptions: [String] = []
        for parallel in [true, false] {
            let store = try Store.inMemory(entities: issueEntities)
            do {
                try store.write { _ = try Self.decoder(parallel: parallel).decode([GitIssue].self, from: Data(text.utf8), into: $0) }
                Issue.record("a wrong type decoded")
            } catch let DecodingError.typeMismatch(_, context) {
                #expect(context.codingPath.map(\.stringValue) == ["Index 1500", "comments"])
                descriptions.append(context.debugDescription)
            }
        }
        #expect(descriptions.count == 2)
        #expect(descriptions.first == descriptions.last)
    }

    /// A context holding objects cannot be rolled back by forgetting everything: it decodes on one thread, and
    /// a malformed document leaves its pending change alone.
    @Test func aContextWithObjectsKeepsThemWhenTheDocumentIsMalformed() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let full = Self.dump(seed: 9)
        let cut = Data(full[..<(full.count / 2)])
        try store.write { context in
            let kept = GitIssue(id: -1, number: 0, title: "pending")
            try context.insert(kept)
            #expect(!context.isPristine)
            #expect(throws: JSONSyntaxError.self) {
                _ = try Self.decoder(parallel: true).decode([GitIssue].self, from: cut, into: context)
            }
            #expect(context.registeredObjectCount == 1)
            #expect(context.hasChanges)
            kept.title = "still tracked"
        }
        #expect(try store.read { try $0.fetch(GitIssue.self).map(\.title) } == ["still tracked"])
    }

    @Test func onlyTopLevelArraysGoParallel() {
        #expect(ParallelArrayDecoding.startsWithArray(Data("\u{FEFF} \n\t[1]".utf8)))
        #expect(ParallelArrayDecoding.startsWithArray(Data(" [".utf8)))
        #expect(!ParallelArrayDecoding.startsWithArray(Data(#" {"results": []}"#.utf8)))
        #expect(!ParallelArrayDecoding.startsWithArray(Data("   ".utf8)))
        #expect(!ParallelArrayDecoding.startsWithArray(Data()))
    }
}
