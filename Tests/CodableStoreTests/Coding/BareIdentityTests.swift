import CodableStore
import Foundation
import Testing

/// A plain page type with entity-typed fields.
struct TopicPage: Decodable {
    var items: [Topic]
    var featured: Topic
    var related: Set<Topic>
}

/// Bare identities wherever an entity is decoded, not only inside relationships.
@Suite struct BareIdentityTests {
    /// A store with topics 1 and 2 and an issue 10, and a statement log.
    private func seeded() throws -> (path: String, store: Store, log: StatementLog) {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        try store.write { context in
            _ = try StoreDecoder().decode(
                [Topic].self, from: Data(#"[{"id": 1, "name": "bug"}, {"id": 2, "name": "docs"}]"#.utf8), into: context)
            _ = try StoreDecoder().decode(GitIssue.self, from: Data(#"{"id": 10, "number": 1, "title": "t"}"#.utf8), into: context)
        }
        log.reset()
        return (path, store, log)
    }

    @Test func aTopLevelEntityFromABareIdentityIsTheStoredObjectUntouched() throws {
        let (_, store, log) = try seeded()
        let (title, name) = try store.write { context in
            let issue = try StoreDecoder().decode(GitIssue.self, from: Data("10".utf8), into: context)
            let topic = try StoreDecoder().decode(Topic.self, from: Data("2".utf8), into: context)
            return (issue.title, topic.name)
        }
        #expect(title == "t")
        #expect(name == "docs")
        #expect(log.writes.isEmpty, "\(log.writes)")
    }

    @Test func arraysSetsAndManyFromBareIdentitiesKeepPayloadOrder() throws {
        let (path, store, log) = try seeded()
        let (array, set, many, mixed) = try store.write { context in
            let decoder = StoreDecoder()
            let array = try decoder.decode([Topic].self, from: Data("[2, 1, 3]".utf8), into: context).map(\.id)
            let set = Set(try decoder.decode(Set<Topic>.self, from: Data("[1, 2]".utf8), into: context).map(\.id))
            let many = try decoder.decode(Many<Topic>.self, from: Data("[2, 2]".utf8), into: context).map(\.id)
            let mixed = try decoder.decode(
                [Topic].self, from: Data(#"[1, {"id": 4, "name": "new"}, 2, {"id": 1, "name": "bug"}]"#.utf8), into: context
            ).map(\.id)
            return (array, set, many, mixed)
        }
        #expect(array == [2, 1, 3])
        #expect(set == [1, 2])
        #expect(many == [2, 2])
        #expect(mixed == [1, 4, 2, 1])
        // 3 is unknown: a stub (the default policy), with its defaults. Nothing else was written.
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Topic ORDER BY id") == [["1", "bug"], ["2", "docs"], ["3", ""], ["4", "new"]])
        #expect(log.writes.count == 2, "\(log.writes)")
    }

    @Test func theTwoThreadArrayDecodeTakesBareIdentitiesToo() throws {
        let (_, store, _) = try seeded()
        let decoder = StoreDecoder()
        decoder.parallelDecodingThreshold = 1
        decoder.unknownReferencePolicy = .ignore
        let json = "[" + (0..<3_000).map { $0 % 3 == 0 ? #"{"id": 1, "name": "bug"}"# : String($0 % 5) }.joined(separator: ",") + "]"
        let ids = try store.write { try decoder.decode([Topic].self, from: Data(json.utf8), into: $0).map(\.id) }
        let expected = (0..<3_000).compactMap { $0 % 3 == 0 ? 1 : [1, 2].contains($0 % 5) ? $0 % 5 : nil }
        #expect(ids == expected)
    }

    @Test func entityFieldsOfPlainStructsTakeBareIdentities() throws {
        let (_, store, _) = try seeded()
        let page = try store.write { context in
            let page = try StoreDecoder().decode(
                TopicPage.self, from: Data(#"{"items": [2, {"id": 1, "name": "bug"}], "featured": 1, "related": [2]}"#.utf8), into: context)
            return (page.items.map(\.name), page.featured.name, page.related.map(\.name))
        }
        #expect(page.0 == ["docs", "bug"])
        #expect(page.1 == "bug")
        #expect(page.2 == ["docs"])
    }

    @Test func aBareValueOfTheWrongTypeIsATypeMismatchAtItsIndex() throws {
        let (_, store, _) = try seeded()
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([Topic].self, from: Data(#"[1, true, 2]"#.utf8), into: $0) }
        }
        guard case .typeMismatch(_, let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["Index 1"])
        let nested = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode(TopicPage.self, from: Data(#"{"items": [1, "x"], "featured": 1, "related": []}"#.utf8), into: $0) }
        }
        guard case .typeMismatch(_, let nestedContext) = nested else { Testing.Issue.record("\(nested)"); return }
        #expect(nestedContext.codingPath.map(\.stringValue) == ["items", "Index 1"])
    }

    @Test func unknownBareIdentitiesFollowTheIgnorePolicy() throws {
        let (path, store, _) = try seeded()
        let decoder = StoreDecoder()
        decoder.unknownReferencePolicy = .ignore
        let ids = try store.write { try decoder.decode([Topic].self, from: Data("[1, 99, 2]".utf8), into: $0).map(\.id) }
        #expect(ids == [1, 2])
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try decoder.decode(Topic.self, from: Data("99".utf8), into: $0) }
        }
        guard case .valueNotFound(_, let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.debugDescription == "No stored Topic has the identity 99, and the unknown-reference policy is .ignore.")
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Topic") == "2")
    }

    @Test func anImportOfBareIdentitiesLinksNothingNewAndStubsTheUnknown() throws {
        let (path, store, _) = try seeded()
        let dump = TestStore.temporaryPath("ids.json")
        try "[1, 2, 5]".write(toFile: dump, atomically: true, encoding: .utf8)
        let report = try store.importJSON(Topic.self, from: .file(dump))
        #expect(report.recordsImported == 3)
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Topic ORDER BY id") == [["1", "bug"], ["2", "docs"], ["5", ""]])
    }

    @Test func aStubEncodesEveryMappedKey() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let encoder = StoreEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try store.write { context in
            let user = try StoreDecoder().decode(User.self, from: Data("7".utf8), into: context)
            return String(decoding: try encoder.encode(user), as: UTF8.self)
        }
        #expect(json == #"{"id":7,"issues":[],"login":null}"#)
    }
}
