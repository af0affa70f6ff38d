@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore
import Foundation
import IssuesModel
import Testing

/// An entity whose identity is a date: collecting its identities may call a `DateFormatter`.
@Entity final class Reading {
    var takenAt: Date
    var value: Double = 0
    static let identity = Identity(\Reading.takenAt)
    init(takenAt: Date) { self.takenAt = takenAt }
}

/// The importer's reader thread collects each batch's identities (`BatchIdentityCollector`) so that the decoding thread
/// does not: they must be exactly what the decoding thread collects, and the reader must not run code that may not
/// be thread-safe.
@Suite struct BatchLookupTests {
    /// A batch's distinct identities: each once, in first-seen order, as a `Set` would keep them; single integers
    /// (the fast path) and other keys (text, composite: the fallback) alike.
    @Test func distinctKeysKeepTheFirstOfEachInOrder() {
        var random = SyncOracleTests.SeededGenerator(seed: 11)
        func reference(_ keys: [Context.IdentityKey]) -> [Context.IdentityKey] {
            var seen: [Context.IdentityKey] = []
            for key in keys where !seen.contains(key) { seen.append(key) }
            return seen
        }
        let edges: [Int64] = [0, -1, 1, .min, .max, .min + 1, 16, 32, 1 << 40]
        for round in 0..<200 {
            let count = Int(random.next() % 300)
            let spread = UInt64(1 + round % 50) * UInt64(1 + count)
            var keys = (0..<count).map { _ in
                Context.IdentityKey(single: .integer(random.next() % 4 == 0 ? edges[Int(random.next() % UInt64(edges.count))] : Int64(random.next() % spread)))
            }
            #expect(BatchIdentities.distinct(keys) == reference(keys))
            if round % 10 == 0, count > 0 {
                keys.insert(Context.IdentityKey(single: .text("a")), at: Int(random.next() % UInt64(count)))
                keys.append(Context.IdentityKey([.integer(1), .integer(2)]))
                keys.append(Context.IdentityKey(single: .text("a")))
                #expect(BatchIdentities.distinct(keys) == reference(keys))
            }
        }
    }

    static func records(_ json: String) throws -> [JSONRecord] {
        let stream = JSONRecordStream(mode: .array)
        var records: [JSONRecord] = []
        try Array(json.utf8).withUnsafeBytes { bytes in try stream.feed(bytes) { records.append($0.compacted()) } }
        try stream.finish { records.append($0.compacted()) }
        return records
    }

    @Test func theReaderCollectsWhatTheDecodingThreadWould() throws {
        var generator = IssueDumpGenerator(seed: 11, duplicateFraction: 0.3)
        var bytes: [UInt8] = []
        generator.writeArray(count: 300) { bytes += $0 }
        let records = try Self.records(String(decoding: bytes, as: UTF8.self))
        let store = try Store.inMemory(entities: issueEntities)
        let options = issueDecoder().options
        let expected = try store.write { context in
            let mapping = try context.model.mapping(for: GitIssue.self)
            let session = DecodingSession(context: context, options: options)
            let items = records.map { StoreDecoderImpl.item(for: $0, session) }
            return StoreDecoderImpl.collectKeys(mapping, items, model: context.model).all.map { $0.map(\.values) }
        }
        let model = try Schema(entities: issueEntities)
        let collector = try #require(BatchIdentityCollector(try model.mapping(for: GitIssue.self), model: model, options: options))
        let collected = collector.identities(of: records)
        #expect(collected.all.map { $0.map(\.values) } == expected)
        // Issues, users and topics, with repeats; each once and in first-seen order in `distinct`.
        let issues = try model.mapping(for: GitIssue.self).index
        #expect(collected.all[issues].count == 300)
        #expect(collected.distinct[issues].count == Set(collected.all[issues]).count)
        #expect(collected.distinct[issues].count < 300)
        var seen = Set<Context.IdentityKey>()
        #expect(collected.distinct[issues] == collected.all[issues].filter { seen.insert($0).inserted })
    }

    /// The reader thread collects through a schema of its own (two threads retaining and releasing the same schema
    /// objects for every record made the import slower), with the same entity indexes as the importer's, whatever
    /// order the entities were given in.
    @Test func theReaderCollectsThroughASchemaOfItsOwn() throws {
        var generator = IssueDumpGenerator(seed: 12, duplicateFraction: 0.2)
        var bytes: [UInt8] = []
        generator.writeArray(count: 50) { bytes += $0 }
        let records = try Self.records(String(decoding: bytes, as: UTF8.self))
        let options = issueDecoder().options
        for entities in [issueEntities, issueEntities.reversed(), [Topic.self, GitIssue.self]] {
            let model = try Schema(entities: entities)
            let mapping = try model.mapping(for: GitIssue.self)
            let collector = try #require(BatchIdentityCollector(mapping, model: model, options: options))
            #expect(collector.model !== model)
            #expect(collector.model.mappings.map(\.name) == model.mappings.map(\.name))
            let session = DecodingSession(model: model, options: options)
            let items = records.map { StoreDecoderImpl.item(for: $0, session, locating: false) }
            let expected = StoreDecoderImpl.collectKeys(mapping, items, model: model)
            let collected = collector.identities(of: records)
            #expect(collected.all == expected.all)
            #expect(collected.all[mapping.index].count == 50)
        }
    }

    /// What the reader collects from the tape alone, and what it leaves to a decoder (a missing or `null` identity, a
    /// value to convert or out of range, a composite reference, another key strategy), in one batch: the keys, their
    /// nodes and each record's end are the decoder's, records after one left to a decoder included.
    @Test func recordsTheTapeAloneCannotDecideAreCollectedByADecoder() throws {
        let model = try Schema(entities: issueEntities)
        func check(_ entity: any EntityObject.Type, _ json: String, options: StoreDecoder.Options = issueDecoder().options) throws {
            let records = try Self.records(json)
            let mapping = try model.mapping(for: entity)
            let session = DecodingSession(model: model, options: options)
            let items = records.map { StoreDecoderImpl.item(for: $0, session, locating: false) }
            let expected = StoreDecoderImpl.collectKeys(mapping, items, model: model, keepingNodes: true)
            let collector = try #require(BatchIdentityCollector(mapping, model: model, options: options))
            let collected = collector.identities(of: records)
            let known = try #require(collected.known)
            #expect(collected.all == expected.all, "\(json)")
            #expect(known.ends == expected.ends, "\(json)")
            #expect(known.entries.map(\.key) == expected.known.map(\.key), "\(json)")
            #expect(known.entries.map(\.node) == expected.known.map(\.node), "\(json)")
            #expect(known.entries.map(\.entity) == expected.known.map(\.entity), "\(json)")
        }
        let issues = """
            [{"id": 1, "user": {"id": 5}, "labels": [7, {"id": 8}, null]},
             {"id": null, "user": {"id": 6}, "labels": [9]},
             {"number": 3, "user": {"id": 7, "login": "u"}, "labels": [{"id": 10}]},
             {"id": 2, "user": {"id": "8"}, "labels": [11]},
             {"id": 99999999999999999999, "user": {"id": 9}},
             {"id": 3, "user": null, "labels": ["12", 13]},
             {"id": 4.0, "labels": 14},
             4,
             {"id": 5, "user": {"id": 10}, "labels": [15, 16]}]
            """
        try check(GitIssue.self, issues)
        // Nothing in that batch is left out by both, and some records only a decoder reads.
        let collected = try #require(BatchIdentityCollector(try model.mapping(for: GitIssue.self), model: model, options: issueDecoder().options))
            .identities(of: try Self.records(issues))
        #expect(collected.all[try model.mapping(for: GitIssue.self).index].map(\.singleInteger) == [1, 2, 3, 4, 4, 5])
        // A string identity read from the tape; a composite reference, which only a decoder reads.
        try check(Place.self, #"[{"code": "a", "origin/city": "x"}, {"code": "b", "owner": ["t", 1]}, {"code": "c"}]"#)
        // Another key strategy: every record through a decoder, whose keys are not the JSON's.
        var options = issueDecoder().options
        options.keyDecodingStrategy = .custom { path in
            let key = path.last!.stringValue
            return CodingKeys(stringValue: key == key.uppercased() ? key.lowercased() : "x" + key)
        }
        try check(GitIssue.self, #"[{"ID": 7, "id": 1, "USER": {"ID": 8, "id": 2}}]"#, options: options)
    }

    /// Each identity the reader reads is kept with the node it read it from, so that decoding takes it instead of
    /// reading it again (`KnownIdentities`): it must be what decoding would read there.
    @Test func theReaderKeepsEachIdentityWithItsNode() throws {
        var generator = IssueDumpGenerator(seed: 12, duplicateFraction: 0.3)
        // Bare label references too, and a record that is one.
        var json = #"[{"id": 1, "number": 1, "title": "a", "user": {"id": 5, "login": "u5"}, "labels": [7, {"id": 8, "name": "x"}, 9]}, 4"#
        for index in 0..<100 { json += ", " + generator.record(index: index, count: 100) }
        let records = try Self.records(json + "]")
        let model = try Schema(entities: issueEntities)
        let mapping = try model.mapping(for: GitIssue.self)
        let options = issueDecoder().options
        let collector = try #require(BatchIdentityCollector(mapping, model: model, options: options))
        let collected = collector.identities(of: records)
        let known = try #require(collected.known)
        #expect(known.ends.count == records.count)
        #expect(known.entries.count == collected.all.map(\.count).reduce(0, +))
        #expect(known.ends == known.ends.sorted() && known.ends.last == known.entries.count)
        // Per entity, in the same order as `all`.
        for entity in model.mappings.indices {
            #expect(known.entries.filter { $0.entity == entity }.map(\.key) == collected.all[entity])
        }
        // Read again where each was read, by a decoder without them, as the entity it was read as.
        let session = DecodingSession(model: model, options: options)
        var start = 0
        for (record, end) in zip(records, known.ends) {
            let (impl, _) = StoreDecoderImpl.item(for: record, session)
            for entry in known.entries[start..<end] {
                let destination = model.mappings[entry.entity]
                #expect(try impl.referenceKey(destination, entry.node, .root) == entry.key)
            }
            start = end
        }
        // The first record: its issue, its user and three topics, two of them bare.
        let topics = try model.mapping(for: Topic.self).index
        #expect(known.entries[..<known.ends[0]].filter { $0.entity == topics }.map(\.key.singleInteger) == [7, 8, 9])
        #expect(known.ends[1] - known.ends[0] == 1)  // the bare record `4`
    }

    /// A decoder takes the identity kept for a node and entity, and reads any other.
    @Test func aDecoderTakesTheIdentitiesKeptForIt() throws {
        let records = try Self.records(#"[{"id": 1, "number": 1, "title": "a", "user": {"id": 5}, "labels": [7, 8]}]"#)
        let model = try Schema(entities: issueEntities)
        let issues = try model.mapping(for: GitIssue.self)
        let users = try model.mapping(for: User.self)
        let topics = try model.mapping(for: Topic.self)
        let session = DecodingSession(model: model, options: issueDecoder().options)
        let (impl, root) = StoreDecoderImpl.item(for: records[0], session)
        let user = try #require(impl.tape.value(forKey: "user", in: root))
        let labels = try #require(impl.tape.value(forKey: "labels", in: root))
        let seven = try #require(Array(impl.tape.elements(of: labels)).first)
        func key(_ value: Int64) -> Context.IdentityKey { Context.IdentityKey(single: .integer(value)) }
        // Kept keys unlike the JSON's, to see which are taken.
        let kept = [
            KnownIdentity(node: root, entity: issues.index, key: key(101)),
            KnownIdentity(node: user, entity: users.index, key: key(105)),
            KnownIdentity(node: seven, entity: users.index, key: key(107)),  // the node, not as that entity
        ]
        impl.known = KnownIdentities(kept[...])
        #expect(try impl.identityKey(users, user, .root) == key(105))
        #expect(try impl.identityKey(issues, root, .root) == key(101))  // before the last match: searched again
        #expect(try impl.referenceKey(topics, seven, .root) == key(7))
        #expect(try impl.identityKey(users, user, .root) == key(105))
        impl.known = nil
        #expect(try impl.identityKey(issues, root, .root) == key(1))
    }

    @Test func notWhenAnIdentityIsReadWithADateFormatter() throws {
        let model = try Schema(entities: [Reading.self])
        let mapping = try model.mapping(for: Reading.self)
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        #expect(BatchIdentityCollector(mapping, model: model, options: decoder.options) != nil)
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd"
        decoder.dateDecodingStrategy = .formatted(formatter)
        #expect(BatchIdentityCollector(mapping, model: model, options: decoder.options) == nil)
    }

    /// Imported with a formatter, the decoding thread collects the identities itself, with the same result.
    @Test func anImportWithADateFormatterForIdentities() throws {
        let path = TestStore.temporaryPath("readings.json")
        try Data(#"[{"takenAt": "2026-01-02", "value": 1}, {"takenAt": "2026-01-03", "value": 2}, {"takenAt": "2026-01-02", "value": 3}]"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd"
        formatter.timeZone = TimeZone(identifier: "UTC")
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .formatted(formatter)
        let store = try Store.inMemory(entities: [Reading.self])
        let report = try store.importJSON(Reading.self, from: .file(path), options: ImportOptions(batchSize: 1, decoder: decoder))
        #expect(report.recordsImported == 3)
        #expect(try store.read { try $0.fetch(Reading.self).map(\.value).sorted() } == [2, 3])
    }
}
