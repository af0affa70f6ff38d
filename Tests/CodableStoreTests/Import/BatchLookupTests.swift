@testable import CodableStore
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

/// The importer's reader thread collects each batch's identities (`BatchLookup.Collector`) so that the decoding thread
/// does not: they must be exactly what the decoding thread collects, and the reader must not run code that may not
/// be thread-safe.
@Suite struct BatchLookupTests {
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
            return StoreDecoderImpl.collectKeys(mapping, items, model: context.model).map { $0.map(\.values) }
        }
        let model = try Schema(entities: issueEntities)
        let collector = try #require(BatchLookup.Collector(try model.mapping(for: GitIssue.self), model: model, options: options))
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

    @Test func notWhenAnIdentityIsReadWithADateFormatter() throws {
        let model = try Schema(entities: [Reading.self])
        let mapping = try model.mapping(for: Reading.self)
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        #expect(BatchLookup.Collector(mapping, model: model, options: decoder.options) != nil)
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd"
        decoder.dateDecodingStrategy = .formatted(formatter)
        #expect(BatchLookup.Collector(mapping, model: model, options: decoder.options) == nil)
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
