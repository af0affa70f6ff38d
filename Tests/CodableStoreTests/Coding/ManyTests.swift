import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// Issues and how they were exported, as an app declares them.
private struct IssueExport: Codable {
    var issues: Many<GitIssue>
    var pinned: One<GitIssue>
    var total: Int
}

@Suite struct ManyTests {
    /// Five topics (1…5), and one issue labelled 1 and 2.
    private func topicsStore() throws -> (Store, String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.write { context in
            let topics = (1...5).map { Topic(id: $0) }
            for topic in topics { try context.insert(topic) }
            let issue = GitIssue(id: 1, number: 1, title: "one")
            try context.insert(issue)
            issue.labels = [topics[0], topics[1]]
        }
        return (store, path)
    }

    private func topics(_ context: Context) throws -> [Topic] {
        try context.fetch(Topic.self, orderBy: [.ascending(\.id)])
    }

    @Test func manyIsChangedLikeAnArrayWithoutChangingTheStore() throws {
        let (store, path) = try topicsStore()
        let steps = try store.write { context -> [[Int]] in
            let t = try topics(context)
            var steps: [[Int]] = []
            var many: Many<Topic> = [t[0], t[1]]  // an array literal
            steps.append(many.map(\.id))
            many.append(t[2])
            steps.append(many.map(\.id))
            many.insert(t[3], at: 0)
            steps.append(many.map(\.id))
            #expect(many.remove(at: 1) === t[0])
            steps.append(many.map(\.id))
            many.replaceSubrange(0..<1, with: [t[4], t[0]])
            steps.append(many.map(\.id))
            many[1] = t[3]  // subscript set
            steps.append(many.map(\.id))
            many += [t[1]]
            many.append(contentsOf: [t[2]])
            steps.append(many.map(\.id))
            many.removeAll { $0.id == 2 }
            steps.append(many.map(\.id))
            many.swapAt(0, many.count - 1)
            many[1...2].reverse()  // a mutable slice
            steps.append(many.map(\.id))
            many.array.removeLast()  // through the array
            steps.append(many.array.map(\.id))
            #expect(many.first === t[2] && many.last === t[3])
            #expect(many.firstIndex(of: t[3]) == 2 && many.firstIndex(of: t[1]) == nil && many.indices == 0..<3)
            many.removeAll()
            steps.append(many.map(\.id))
            #expect(many.isEmpty && Many<Topic>().isEmpty)
            return steps
        }
        #expect(steps == [
            [1, 2], [1, 2, 3], [4, 1, 2, 3], [4, 2, 3], [5, 1, 2, 3], [5, 4, 2, 3], [5, 4, 2, 3, 2, 3], [5, 4, 3, 3],
            [3, 3, 4, 5], [3, 3, 4], [],
        ])
        // A collection of objects, not a relationship: the store is as it was.
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id FROM Topic ORDER BY id") == [["1"], ["2"], ["3"], ["4"], ["5"]])
        #expect(try raw.rows("SELECT t.id FROM GitIssue_labels j JOIN Topic t ON t._pk = j.target ORDER BY j.position") == [["1"], ["2"]])
    }

    @Test func manyIsEqualAndHashedAsTheObjectsItHoldsInOrder() throws {
        let (store, _) = try topicsStore()
        try store.write { context in
            let t = try topics(context)
            let pair: Many<Topic> = [t[0], t[1]]
            #expect(pair == Many([t[0], t[1]]))
            #expect(pair != [t[1], t[0]])
            #expect(pair != [t[0]])
            #expect(pair.hashValue == Many([t[0], t[1]]).hashValue)
            #expect(Set([pair, Many([t[0], t[1]]), [t[1], t[0]]]).count == 2)
            #expect(One(t[0]) == One(t[0]) && One(t[0]) != One(t[1]))
            #expect(Set([One(t[0]), One(t[0])]).count == 1)
            // Entities compare by identity: the same row read by another context is another object.
            let sameRowElsewhere = try store.read { other in
                let copy = try #require(try other.object(Topic.self, identity: 1))
                return (Many([copy]) == Many([t[0]]), copy.id == t[0].id)
            }
            #expect(sameRowElsewhere == (false, true))
        }
    }

    @Test func manyAndOneEncodeAsTheEntitiesUnderStoreEncoderAndJSONEncoder() throws {
        let store = try Store.inMemory(entities: issueEntities)
        try store.write { context in
            _ = try issueDecoder().decode(Many<GitIssue>.self, from: SharedFixtures.data("decoding/issues.json"), into: context)
        }
        let (fromStoreEncoder, fromJSONEncoder, identities) = try store.read { context in
            let issues = try context.fetch(GitIssue.self, where: .isIn(\.id, [1, 3]), orderBy: [.ascending(\.id)])
            let export = IssueExport(issues: Many(issues), pinned: One(issues[1]), total: 2)
            let storeEncoder = StoreEncoder()
            storeEncoder.outputFormatting = [.sortedKeys]
            storeEncoder.dateEncodingStrategy = .iso8601
            let jsonEncoder = JSONEncoder()
            jsonEncoder.outputFormatting = [.sortedKeys]
            jsonEncoder.dateEncodingStrategy = .iso8601
            storeEncoder.relationshipEncodingStrategy = .identities
            let identities = String(decoding: try storeEncoder.encode(Many(issues)), as: UTF8.self)
            storeEncoder.relationshipEncodingStrategy = .nestedObjects
            return (
                String(decoding: try storeEncoder.encode(export), as: UTF8.self),
                String(decoding: try jsonEncoder.encode(export), as: UTF8.self), identities
            )
        }
        let expected = #"{"issues":[{"body":"It crashes é 😀","comments":23,"created_at":"2015-06-05T09:52:26Z","id":1,"labels":[{"id":1009,"name":"bug"},{"id":1010,"name":"crash"}],"number":10,"score":21.86,"state":"open","title":"Crash on start","user":{"id":7,"login":"ada"}},{"body":null,"comments":0,"created_at":null,"id":3,"labels":[],"number":12,"score":null,"state":"open","title":"Docs","user":{"id":7,"login":"ada"}}],"pinned":{"body":null,"comments":0,"created_at":null,"id":3,"labels":[],"number":12,"score":null,"state":"open","title":"Docs","user":{"id":7,"login":"ada"}},"total":2}"#
        #expect(fromStoreEncoder == expected)
        // Foundation's encoder: the StoreEncoder's defaults (nested relationships, nil as null), its own strategies.
        #expect(fromJSONEncoder == expected)
        #expect(identities == #"[{"body":"It crashes é 😀","comments":23,"created_at":"2015-06-05T09:52:26Z","id":1,"labels":[1009,1010],"number":10,"score":21.86,"state":"open","title":"Crash on start","user":7},{"body":null,"comments":0,"created_at":null,"id":3,"labels":[],"number":12,"score":null,"state":"open","title":"Docs","user":7}]"#)
    }

    @Test func anObjectOutsideAContextIsAnEncodingError() throws {
        let error = try #require(throws: EncodingError.self) {
            try JSONEncoder().encode(Many([Topic(id: 1)]))
        }
        guard case .invalidValue(_, let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["Index 0"])
        #expect(context.debugDescription == "Topic is not held by a context: encode objects inside store.read or store.write")
    }

    /// The tables of the issues' model, rows in order: two stores whose dumps are equal hold the same data.
    private func dump(_ path: String) throws -> [[String]] {
        let raw = try RawDatabase(path)
        return try [
            "SELECT id, number, title, state, createdAt, comments, score, body FROM GitIssue ORDER BY id",
            "SELECT i.id, u.id, u.login FROM GitIssue i LEFT JOIN User u ON u._pk = i.user ORDER BY i.id",
            "SELECT id, login FROM User ORDER BY id",
            "SELECT id, name FROM Topic ORDER BY id",
            "SELECT i.id, t.id, j.position FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY i.id, j.position",
        ].flatMap { try raw.rows($0) + [["--"]] }
    }

    @Test(arguments: ["StoreEncoder", "JSONEncoder"])
    func decodingWhatManyEncodedYieldsTheSameStore(_ encoderName: String) throws {
        // Dates in milliseconds: exact for both encoders (JSONEncoder's ISO 8601 drops fractions of seconds).
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        func encode(_ issues: Many<GitIssue>) throws -> Data {
            if encoderName == "StoreEncoder" {
                let encoder = StoreEncoder()
                encoder.outputFormatting = [.sortedKeys]  // keys in a stable order, to compare bytes
                encoder.dateEncodingStrategy = .millisecondsSince1970
                return try encoder.encode(issues)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .millisecondsSince1970
            return try encoder.encode(issues)
        }
        let firstPath = TestStore.temporaryPath()
        let first = try Store(path: firstPath, entities: issueEntities)
        try first.write { context in
            _ = try issueDecoder().decode(Many<GitIssue>.self, from: SharedFixtures.data("decoding/issues.json"), into: context)
        }
        let exported = try first.read { context in
            try encode(Many(try context.fetch(GitIssue.self, orderBy: [.ascending(\.id)])))
        }
        // Decoded by StoreDecoder into one store, by JSONDecoder (through Many) into another.
        let secondPath = TestStore.temporaryPath()
        let second = try Store(path: secondPath, entities: issueEntities)
        let decodedCount = try second.write { try decoder.decode(Many<GitIssue>.self, from: exported, into: $0).count }
        let thirdPath = TestStore.temporaryPath()
        let third = try Store(path: thirdPath, entities: issueEntities)
        try third.write { context in
            let foundation = JSONDecoder()
            foundation.userInfo[.codableStoreContext] = ContextReference(context, decoder: decoder)
            _ = try foundation.decode(Many<GitIssue>.self, from: exported)
        }
        #expect(decodedCount == 3)
        let original = try dump(firstPath)
        #expect(try dump(secondPath) == original)
        #expect(try dump(thirdPath) == original)
        #expect(original.count > 15)
        // And encoding the copy gives the same bytes.
        let again = try second.read { context in try encode(Many(try context.fetch(GitIssue.self, orderBy: [.ascending(\.id)]))) }
        #expect(String(decoding: again, as: UTF8.self) == String(decoding: exported, as: UTF8.self))
    }
}
