import CodableStore
import CodableStoreTesting
import Foundation
import Testing

@Suite struct StoreEncoderTests {
    private func decodedStore(_ path: String) throws -> Store {
        let store = try Store(path: path, entities: issueEntities)
        try store.load([.records(GitIssue.self, "decoding/issues.json")], decoder: issueDecoder(), location: SharedFixtures.location)
        return store
    }

    private func encoder(_ relationships: StoreEncoder.RelationshipEncodingStrategy = .nestedObjects) -> StoreEncoder {
        let encoder = StoreEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        encoder.relationshipEncodingStrategy = relationships
        return encoder
    }

    @Test func entitiesEncodeWithNestedRelationshipsAndWithoutTheWayBack() throws {
        let store = try decodedStore(TestStore.temporaryPath())
        let json = try store.read { context in
            String(decoding: try encoder().encode(try #require(try context.object(GitIssue.self, identity: 2))), as: UTF8.self)
        }
        #expect(json == #"{"body":null,"comments":0,"created_at":"2015-06-06T10:00:00.25Z","id":2,"labels":[{"id":1009,"name":"bug"}],"number":11,"score":3.5,"state":"closed","title":"Slow import","user":{"id":8,"login":"grace"}}"#)
    }

    @Test func relationshipsAsIdentitiesAndKeyPathKeysAsNestedObjects() throws {
        let store = try decodedStore(TestStore.temporaryPath())
        let issue = try store.read { context in
            String(decoding: try encoder(.identities).encode(try #require(try context.object(GitIssue.self, identity: 1))), as: UTF8.self)
        }
        #expect(issue.contains(#""labels":[1009,1010]"#))
        #expect(issue.contains(#""user":7"#))
        let place = try store.write { context in
            try context.insert(Membership(team: "red", user: 1, role: "owner"))
            _ = try StoreDecoder().decode(
                Place.self, from: Data(#"{"code": "a", "origin": {"country": {"name": "France"}, "city": "Lyon"}, "owner": ["red", 1]}"#.utf8),
                into: context)
            return String(decoding: try encoder(.identities).encode(try #require(try context.object(Place.self, identity: "a"))), as: UTF8.self)
        }
        #expect(place == #"{"code":"a","origin":{"city":"Lyon","country":{"name":"France"}},"owner":{"team":"red","user":1}}"#)
    }

    @Test func decodingWhatWasEncodedYieldsTheSameStore() throws {
        let firstPath = TestStore.temporaryPath()
        let first = try decodedStore(firstPath)
        let exported = try first.read { context in
            try encoder().encode(try context.fetch(GitIssue.self, orderBy: [.ascending(\.id)]))
        }
        let secondPath = TestStore.temporaryPath()
        let second = try Store(path: secondPath, entities: issueEntities)
        try second.write { _ = try issueDecoder().decode([GitIssue].self, from: exported, into: $0) }
        for query in [
            "SELECT id, number, title, state, createdAt, comments, score, body FROM GitIssue ORDER BY id",
            "SELECT i.id, u.id, u.login FROM GitIssue i LEFT JOIN User u ON u._pk = i.user ORDER BY i.id",
            "SELECT id, name FROM Topic ORDER BY id",
            "SELECT i.id, t.id, j.position FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY i.id, j.position",
        ] {
            #expect(try RawDatabase(secondPath).rows(query) == RawDatabase(firstPath).rows(query), "\(query)")
        }
        // And re-encoding gives the same bytes.
        let again = try second.read { context in try encoder().encode(try context.fetch(GitIssue.self, orderBy: [.ascending(\.id)])) }
        #expect(again == exported)
    }

    @Test func manyInsidePlainEncodableTypes() throws {
        struct Export: Encodable {
            let issues: Many<GitIssue>
            let total: Int
        }
        let store = try decodedStore(TestStore.temporaryPath())
        let json = try store.read { context in
            let issues = try context.fetch(GitIssue.self, where: \.id == 3)
            return String(decoding: try encoder(.identities).encode(Export(issues: Many(issues), total: 1)), as: UTF8.self)
        }
        #expect(json == #"{"issues":[{"body":null,"comments":0,"created_at":null,"id":3,"labels":[],"number":12,"score":null,"state":"open","title":"Docs","user":7}],"total":1}"#)
    }
}
