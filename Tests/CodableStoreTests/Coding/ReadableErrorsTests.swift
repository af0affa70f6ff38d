import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// A hook that refuses some JSON: with a plain error and with a DecodingError of its own.
@Entity final class Gadget {
    var id: Int
    var name: String = ""
    static let identity = Identity(\Gadget.id)
    init(id: Int) { self.id = id }
}

struct GadgetRefused: Error, CustomStringConvertible {
    var description: String { "gadgets named 'bad' are refused" }
}

extension Gadget: EntityJSONPreparing {
    static func prepareForDecoding(_ json: inout JSONValue) throws {
        if json["name"]?.stringValue == "bad" { throw GadgetRefused() }
        if json["name"]?.stringValue == "worse" {
            throw DecodingError.dataCorrupted(.init(codingPath: [AnyCodingKey(stringValue: "name")], debugDescription: "worse"))
        }
    }
}

/// Errors and reports a program can read, not only a person.
@Suite struct ReadableErrorsTests {
    @Test func aMissingIdentityCarriesItsKeysAsFields() throws {
        let store = try Store.inMemory(entities: TestStore.entities + [OwnedRepository.self])
        let error = try #require(throws: StoreError.self) {
            try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(#"[{"id": 1}, {"name": "x", "age": 3}]"#.utf8), into: $0) }
        }
        #expect(error.code == .missingIdentity)
        #expect(error.entity == "Person")
        #expect(error.identityKeys == ["id"])
        #expect(error.receivedKeys == ["name", "age"])
        #expect(error.nullKeys.isEmpty)
        let null = try #require(throws: StoreError.self) {
            try store.write { _ = try StoreDecoder().decode(OwnedRepository.self, from: Data(#"{"owner": null, "name": "n"}"#.utf8), into: $0) }
        }
        #expect(null.identityKeys == ["owner.login", "name"])
        #expect(null.receivedKeys == ["owner", "name"])
        #expect(null.nullKeys == ["owner"])
    }

    @Test func errorsOfPrepareForDecodingCarryTheCodingPath() throws {
        let store = try Store.inMemory(entities: [Gadget.self])
        let plain = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([Gadget].self, from: Data(#"[{"id": 1}, {"id": 2, "name": "bad"}]"#.utf8), into: $0) }
        }
        guard case .dataCorrupted(let context) = plain else { Testing.Issue.record("\(plain)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["Index 1"])
        #expect(context.debugDescription == "Gadget.prepareForDecoding failed: gadgets named 'bad' are refused")
        #expect(context.underlyingError is GadgetRefused)

        let decoding = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([Gadget].self, from: Data(#"[{"id": 1}, {"id": 2, "name": "worse"}]"#.utf8), into: $0) }
        }
        guard case .dataCorrupted(let decodingContext) = decoding else { Testing.Issue.record("\(decoding)"); return }
        #expect(decodingContext.codingPath.map(\.stringValue) == ["Index 1", "name"])

        // An import names the record.
        let dump = TestStore.temporaryPath("g.json")
        try #"[{"id": 1}, {"id": 2}, {"id": 3, "name": "bad"}]"#.write(toFile: dump, atomically: true, encoding: .utf8)
        let imported = try #require(throws: ImportError.self) { try store.importJSON(Gadget.self, from: .file(dump)) }
        #expect(imported.recordIndex == 2)
        #expect(imported.codingPath == "[2]")
    }

    @Test func decodeAndSaveCountsAsTheImportReportDoes() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let page = try SharedFixtures.data("github/labels-page-1.json")
        try store.write { _ = try StoreDecoder().decode([Topic].self, from: Data(#"[{"id": 71, "name": "bug"}]"#.utf8), into: $0) }
        let (names, first, second) = try store.write { context in
            let decoder = StoreDecoder()
            let (topics, first) = try decoder.decodeAndSave([Topic].self, from: page, into: context)
            let (_, second) = try decoder.decodeAndSave([Topic].self, from: page, into: context)
            return (topics.map(\.name), first, second)
        }
        #expect(names == ["bug", "pr-ready"])
        #expect(first == ["Topic": .init(inserted: 1, updated: 0, unchanged: 1)])
        #expect(second == ["Topic": .init(inserted: 0, updated: 0, unchanged: 2)])
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Topic") == "2")

        // The same page through an import gives the same counts.
        let dump = TestStore.temporaryPath("page.json")
        try page.write(to: URL(fileURLWithPath: dump))
        let report = try store.importJSON(Topic.self, from: .file(dump))
        #expect(report.entities == second)
    }

    @Test func typedAggregatesMatchSQL() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.load([.records(GitIssue.self, "issues-1k.json")], decoder: issueDecoder(), location: SharedFixtures.location)
        let raw = try RawDatabase(path)
        let results = try store.read { context in
            (
                try context.sum(of: \GitIssue.comments),
                try context.sum(of: \GitIssue.comments, where: \.state == .closed),
                try context.average(of: \GitIssue.comments),
                try context.minimum(of: \GitIssue.createdAt),
                try context.maximum(of: \GitIssue.title),
                try context.maximum(of: \GitIssue.score),
                try context.count(of: \GitIssue.score),
                try context.minimum(of: \GitIssue.number, where: \.id < 0),
                try context.sum(of: \GitIssue.comments, where: \.id < 0)
            )
        }
        #expect(results.0 == Int(try raw.value("SELECT sum(comments) FROM GitIssue")))
        #expect(results.1 == Int(try raw.value("SELECT sum(comments) FROM GitIssue WHERE state = 'closed'")))
        // (SQLite renders reals as text with 15 significant digits.)
        #expect(abs(try #require(results.2) - Double(try raw.value("SELECT avg(comments) FROM GitIssue"))!) < 1e-9)
        #expect(results.3 == Date(timeIntervalSince1970: Double(try raw.value("SELECT min(createdAt) FROM GitIssue"))!))
        #expect(results.4 == (try raw.value("SELECT max(title) FROM GitIssue")))
        #expect(results.5 == Double(try raw.value("SELECT max(score) FROM GitIssue")))
        #expect(results.6 == Int(try raw.value("SELECT count(score) FROM GitIssue")))
        #expect(results.7 == nil)
        #expect(results.8 == 0)
    }
}
