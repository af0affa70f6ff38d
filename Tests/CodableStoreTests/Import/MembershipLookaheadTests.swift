import CodableStore
import Foundation
import Testing

/// The writer thread loads, ahead of decoding, the join-table memberships a batch will replace: only those.
@Suite struct MembershipLookaheadTests {
    @Test func recordsWithoutAToManyFieldDoNotLoadItsMemberships() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let issues = try WriteBehindTests.write(
            """
            [{"id": 1, "number": 1, "title": "a", "labels": [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]},
             {"id": 2, "number": 2, "title": "b", "labels": [{"id": 2}]}]
            """)
        _ = try store.importJSON(GitIssue.self, from: .file(issues), options: ImportTests.options(batchSize: 1))
        let topics = try WriteBehindTests.write(#"[{"id": 1, "name": "x2"}, {"id": 2, "name": "y2"}, {"id": 1, "name": "x3"}]"#)
        log.reset()
        _ = try store.importJSON(Topic.self, from: .file(topics), options: ImportTests.options(batchSize: 1))
        let loads = log.all.filter { $0.contains("JOIN \"GitIssue_labels\"") }
        #expect(loads.isEmpty, "\(loads.prefix(1))")
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, name FROM Topic ORDER BY id") == [["1", "x3"], ["2", "y2"]])
        #expect(try raw.value("SELECT count(*) FROM GitIssue_labels") == "3")
    }

    /// Records that do replace memberships get them loaded once per batch: a second import of the same issues
    /// with other labels ends with exactly the new ones.
    @Test func recordsThatReplaceMembershipsGetThemLoadedAhead() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let first = try WriteBehindTests.write(
            """
            [{"id": 1, "number": 1, "title": "a", "labels": [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]},
             {"id": 2, "number": 2, "title": "b", "labels": [{"id": 2}]}]
            """)
        _ = try store.importJSON(GitIssue.self, from: .file(first), options: ImportTests.options(batchSize: 10))
        let second = try WriteBehindTests.write(
            #"[{"id": 1, "number": 1, "title": "a", "labels": [{"id": 2}]}, {"id": 2, "number": 2, "title": "b", "labels": [{"id": 1}, {"id": 2}]}]"#)
        log.reset()
        _ = try store.importJSON(GitIssue.self, from: .file(second), options: ImportTests.options(batchSize: 10))
        #expect(log.all.filter { $0.contains("JOIN \"GitIssue_labels\"") }.count == 1)
        #expect(
            try RawDatabase(path).rows(
                "SELECT i.id, t.id FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY i.id, t.id"
            ) == [["1", "2"], ["2", "1"], ["2", "2"]])
    }
}
