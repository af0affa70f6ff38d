import CodableStore
import Foundation
import Testing

private func decodeIssues(_ json: String, in store: Store, decoder: StoreDecoder = issueDecoder()) throws -> [Int] {
    try store.write { context in
        try decoder.decode([GitIssue].self, from: Data(json.utf8), into: context).map(\.id)
    }
}

func issueDecoder() -> StoreDecoder {
    let decoder = StoreDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}

@Suite struct StoreDecoderTests {
    @Test func decodingTheFixtureFillsTheStore() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let ids = try store.write { context in
            try issueDecoder().decode([GitIssue].self, from: try SharedFixtures.data("decoding/issues.json"), into: context).map(\.id)
        }
        #expect(ids == [1, 2, 3])
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, number, title, state, createdAt, comments, score, body FROM GitIssue ORDER BY id") == [
            ["1", "10", "Crash on start", "open", "1433497946.0", "23", "21.86", "It crashes é 😀"],
            ["2", "11", "Slow import", "closed", "1433584800.25", "0", "3.5", "NULL"],
            ["3", "12", "Docs", "open", "NULL", "0", "NULL", "NULL"],
        ])
        #expect(try raw.rows("SELECT i.id, u.login FROM GitIssue i JOIN User u ON u._pk = i.user ORDER BY i.id")
            == [["1", "ada"], ["2", "grace"], ["3", "ada"]])
        #expect(try raw.rows("SELECT id, name FROM Topic ORDER BY id") == [["1009", "bug"], ["1010", "crash"]])
        #expect(try raw.rows("""
            SELECT i.id, t.id, j.position FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target
            ORDER BY i.id, j.position
            """) == [["1", "1009", "0"], ["1", "1010", "1"], ["2", "1009", "0"]])
    }

    @Test func upsertUpdatesTheSameObjectAndKeepsMissingKeys() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        _ = try decodeIssues(#"[{"id": 1, "number": 1, "title": "a", "body": "kept", "score": 2.5}]"#, in: store)
        try store.write { context in
            let before = try #require(try context.object(GitIssue.self, identity: 1))
            let after = try issueDecoder().decode(GitIssue.self, from: Data(#"{"id": 1, "title": "b", "score": null}"#.utf8), into: context)
            #expect(before === after)
        }
        #expect(try RawDatabase(path).rows("SELECT count(*), title, number, body, score FROM GitIssue") == [["1", "b", "1", "kept", "NULL"]])
    }

    @Test func reDecodingTheSameDataWritesNothing() throws {
        let log = StatementLog()
        let store = try Store(path: TestStore.temporaryPath(), entities: issueEntities, options: .init(statementObserver: log.observer))
        let data = try SharedFixtures.data("decoding/issues.json")
        try store.write { _ = try issueDecoder().decode([GitIssue].self, from: data, into: $0) }
        log.reset()
        try store.write { _ = try issueDecoder().decode([GitIssue].self, from: data, into: $0) }
        #expect(log.writes.isEmpty, "\(log.writes)")
    }

    @Test func duplicatesInOnePayloadAreOneObjectAppliedInOrder() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let same = try store.write { context in
            let issues = try issueDecoder().decode(
                [GitIssue].self,
                from: Data(#"[{"id": 5, "number": 1, "title": "first"}, {"id": 6, "number": 2, "title": "x"}, {"id": 5, "title": "second"}]"#.utf8),
                into: context)
            return issues.map(\.id) == [5, 6, 5] && issues[0] === issues[2]
        }
        #expect(same)
        #expect(try RawDatabase(path).rows("SELECT id, title FROM GitIssue ORDER BY id") == [["5", "second"], ["6", "x"]])
    }

    @Test func relationshipsFromIdsMixedArraysNullsAndStubs() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        _ = try decodeIssues(#"[{"id": 1, "number": 1, "title": "a", "user": {"id": 7, "login": "ada"}, "labels": [{"id": 1, "name": "one"}]}]"#, in: store)
        // Mixed: a bare id of a stored topic, a nested new one, a null element (skipped), an unknown id (stub).
        _ = try decodeIssues(#"[{"id": 1, "labels": [1, {"id": 2, "name": "two"}, null, 3], "user": 8}]"#, in: store)
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT t.id, t.name, j.position FROM GitIssue_labels j JOIN Topic t ON t._pk = j.target ORDER BY j.position")
            == [["1", "one", "0"], ["2", "two", "1"], ["3", "", "2"]])
        #expect(try raw.rows("SELECT u.id, u.login FROM GitIssue i JOIN User u ON u._pk = i.user") == [["8", "NULL"]])
        // null unlinks a to-one and empties a to-many; the targets stay.
        _ = try decodeIssues(#"[{"id": 1, "labels": null, "user": null}]"#, in: store)
        #expect(try raw.rows("SELECT user FROM GitIssue") == [["NULL"]])
        #expect(try raw.value("SELECT count(*) FROM GitIssue_labels") == "0")
        #expect(try raw.value("SELECT count(*) FROM Topic") == "3")
        // The ignore policy skips unknown references.
        let ignoring = issueDecoder()
        ignoring.unknownReferencePolicy = .ignore
        _ = try decodeIssues(#"[{"id": 1, "labels": [1, 99], "user": 99}]"#, in: store, decoder: ignoring)
        #expect(try raw.rows("SELECT t.id FROM GitIssue_labels j JOIN Topic t ON t._pk = j.target") == [["1"]])
        #expect(try raw.value("SELECT count(*) FROM User WHERE id = 99") == "0")
        // The append policy adds to the membership.
        let appending = issueDecoder()
        appending.toManyPolicy = .append
        _ = try decodeIssues(#"[{"id": 1, "labels": [2]}]"#, in: store, decoder: appending)
        #expect(try raw.rows("SELECT t.id FROM GitIssue_labels j JOIN Topic t ON t._pk = j.target ORDER BY j.position") == [["1"], ["2"]])
    }

    @Test func inversesAreConsistentAfterDecoding() throws {
        let store = try Store.inMemory(entities: issueEntities)
        try store.write { context in
            let issues = try issueDecoder().decode([GitIssue].self, from: try SharedFixtures.data("decoding/issues.json"), into: context)
            let ada = try #require(issues[0].user)
            #expect(ada.issues == [issues[0], issues[2]])
            #expect(issues[0].labels.map(\.id) == [1009, 1010])
            let bug = try #require(try context.object(Topic.self, identity: 1009))
            #expect(bug.issues == [issues[0], issues[1]])
        }
    }

    @Test func keyPathKeysWithACustomDelimiterAndCompositeReferences() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.write { context in
            try context.insert(Membership(team: "red", user: 1, role: "owner"))
            let decoder = StoreDecoder()
            let places = try decoder.decode(
                [Place].self,
                from: Data(#"""
                    [{"code": "a", "origin": {"country": {"name": "France"}, "city": "Lyon"}, "owner": {"team": "red", "user": 1}},
                     {"code": "b", "origin": {"city": "Rome"}, "owner": ["red", 1]},
                     {"code": "c"}]
                    """#.utf8),
                into: context)
            #expect(places[0].owner === places[1].owner)
            #expect(places[0].owner?.role == "owner")
            // An unknown composite reference cannot become a stub: Membership.role has no default.
            let error = try #require(throws: StoreError.self) {
                _ = try decoder.decode(Place.self, from: Data(#"{"code": "d", "owner": ["blue", 2]}"#.utf8), into: context)
            }
            #expect(error.code == .invalidObject)
            #expect(error.message.hasPrefix("cannot create a stub Membership for a reference at owner: its attribute 'role' has no default value"))
        }
        #expect(try RawDatabase(path).rows("SELECT code, country, city FROM Place WHERE code IN ('a', 'b', 'c') ORDER BY code") == [
            ["a", "France", "Lyon"], ["b", "NULL", "Rome"], ["c", "NULL", "NULL"],
        ])
    }

    @Test func entitiesInsidePlainDecodableStructs() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let (count, next) = try store.write { context in
            let page = try issueDecoder().decode(
                IssuePage.self,
                from: Data(#"{"results": [{"id": 1, "number": 1, "title": "a"}, {"id": 2, "number": 2, "title": "b"}], "next": "https://api.example.com/issues?page=2"}"#.utf8),
                into: context)
            return (page.results.count, page.next)
        }
        #expect(count == 2)
        #expect(next == URL(string: "https://api.example.com/issues?page=2"))
        #expect(try store.read { try $0.count(GitIssue.self) } == 2)
    }

    @Test func foundationJSONDecoderWithAContextReference() throws {
        let store = try Store.inMemory(entities: issueEntities)
        try store.write { context in
            let decoder = JSONDecoder()
            decoder.userInfo[.codableStoreContext] = ContextReference(context, decoder: issueDecoder())
            let page = try decoder.decode(
                IssuePage.self,
                from: Data(#"{"results": [{"id": 1, "number": 1, "title": "a", "user": {"id": 7}}, {"id": 1, "title": "b"}], "next": null}"#.utf8))
            #expect(page.results.count == 2)
            #expect(page.results[0] === page.results[1])
            #expect(page.results[0].title == "b")
            #expect(page.results[0].user?.id == 7)
        }
        // Without the reference, a clear error.
        let error = try #require(throws: DecodingError.self) {
            _ = try JSONDecoder().decode(IssuePage.self, from: Data(#"{"results": [], "next": null}"#.utf8))
        }
        guard case .dataCorrupted(let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["results"])
        #expect(context.debugDescription.contains("StoreDecoder"))
    }
}
