import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// Predicates users reach for first: to-one `!=`, `== nil`, `!= nil`; conditions on to-many members; sorting by a
/// to-one's field. Each is checked against a count written in plain SQL over the same file.
@Suite struct RelationshipPredicateTests {
    /// The 1k fixture as GitIssue/User/Topic, with every seventh issue's user unset.
    private func store() throws -> (Store, RawDatabase) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.load([.records(GitIssue.self, "issues-1k.json")], decoder: issueDecoder(), location: SharedFixtures.location)
        let raw = try RawDatabase(path)
        try raw.execute("UPDATE GitIssue SET user = NULL WHERE id % 7 = 0")
        return (store, raw)
    }

    private func count(_ raw: RawDatabase, _ sql: String) throws -> Int { Int(try raw.value(sql))! }

    @Test func toOneInequalityAndNil() throws {
        let (store, raw) = try store()
        let (unset, set, notFirstUser, firstUserRow) = try store.read { context in
            let someone = try #require(try context.first(User.self, orderBy: [.ascending(\.id)]))
            return (
                try context.count(GitIssue.self, where: \.user == nil),
                try context.count(GitIssue.self, where: \.user != nil),
                try context.count(GitIssue.self, where: \.user != someone),
                someone.entityState.rowID
            )
        }
        #expect(unset == (try count(raw, "SELECT count(*) FROM GitIssue WHERE user IS NULL")))
        #expect(set == (try count(raw, "SELECT count(*) FROM GitIssue WHERE user IS NOT NULL")))
        #expect(notFirstUser == (try count(raw, "SELECT count(*) FROM GitIssue WHERE user IS NOT \(firstUserRow)")))
        #expect(unset > 0 && set > 0 && notFirstUser > set - 20)
    }

    @Test func membersOfAJoinTableRelationship() throws {
        let (store, raw) = try store()
        let results = try store.read { context in
            [
                try context.count(GitIssue.self, where: .any(\.labels, \Topic.name == "documentation")),
                try context.count(GitIssue.self, where: .none(\.labels, \Topic.name == "documentation")),
                try context.count(GitIssue.self, where: .any(\.labels)),
                try context.count(GitIssue.self, where: .none(\.labels)),
                try context.count(GitIssue.self, where: .count(\.labels, .atLeast(2))),
                try context.count(GitIssue.self, where: .count(\.labels, .equal(0))),
                try context.count(GitIssue.self, where: .count(\.labels, where: .begins(\Topic.name, with: "crash"), .equal(1))),
                try context.count(GitIssue.self, where: .any(\.labels, \Topic.name == "documentation") && \.state == .closed),
                // From the other side of the many-to-many.
                try context.count(Topic.self, where: .count(\.issues, .greaterThan(40))),
            ]
        }
        let labelled = "SELECT j.source FROM GitIssue_labels j JOIN Topic t ON t._pk = j.target"
        #expect(results == [
            try count(raw, "SELECT count(DISTINCT j.source) FROM GitIssue_labels j JOIN Topic t ON t._pk = j.target WHERE t.name = 'documentation'"),
            try count(raw, "SELECT count(*) FROM GitIssue WHERE _pk NOT IN (\(labelled) WHERE t.name = 'documentation')"),
            try count(raw, "SELECT count(DISTINCT source) FROM GitIssue_labels"),
            try count(raw, "SELECT count(*) FROM GitIssue WHERE _pk NOT IN (SELECT source FROM GitIssue_labels)"),
            try count(raw, "SELECT count(*) FROM (SELECT source FROM GitIssue_labels GROUP BY source HAVING count(*) >= 2)"),
            try count(raw, "SELECT count(*) FROM GitIssue WHERE _pk NOT IN (SELECT source FROM GitIssue_labels)"),
            try count(raw, "SELECT count(*) FROM (\(labelled) WHERE t.name LIKE 'crash%' GROUP BY j.source HAVING count(*) = 1)"),
            try count(raw, "SELECT count(*) FROM GitIssue WHERE state = 'closed' AND _pk IN (\(labelled) WHERE t.name = 'documentation')"),
            try count(raw, "SELECT count(*) FROM (SELECT target FROM GitIssue_labels GROUP BY target HAVING count(*) > 40)"),
        ])
        #expect(results[0] > 0 && results[1] > 0 && results[4] > 0 && results[8] > 0)
        #expect(results[0] + results[1] == (try count(raw, "SELECT count(*) FROM GitIssue")))
    }

    @Test func membersOfAForeignKeyRelationship() throws {
        let (store, raw) = try store()
        let results = try store.read { context in
            [
                try context.count(User.self, where: .any(\.issues, \GitIssue.state == .closed)),
                try context.count(User.self, where: .none(\.issues)),
                try context.count(User.self, where: .count(\.issues, .greaterThan(3))),
                try context.count(User.self, where: .count(\.issues, where: \GitIssue.comments >= 180, .atMost(1))),
            ]
        }
        #expect(results == [
            try count(raw, "SELECT count(DISTINCT user) FROM GitIssue WHERE state = 'closed' AND user IS NOT NULL"),
            try count(raw, "SELECT count(*) FROM User WHERE _pk NOT IN (SELECT user FROM GitIssue WHERE user IS NOT NULL)"),
            try count(raw, "SELECT count(*) FROM (SELECT user FROM GitIssue WHERE user IS NOT NULL GROUP BY user HAVING count(*) > 3)"),
            try count(raw, "SELECT count(*) FROM User u WHERE (SELECT count(*) FROM GitIssue i WHERE i.user = u._pk AND i.comments >= 180) <= 1"),
        ])
        #expect(results[0] > 0 && results[2] > 0 && results[3] > 0, "\(results)")
    }

    @Test func sortingByAToOnesField() throws {
        let (store, raw) = try store()
        let (ascending, descending) = try store.read { context in
            (
                try context.fetch(GitIssue.self, orderBy: [.ascending(\.user, \User.login), .ascending(\.id)]).map(\.id),
                try context.fetch(GitIssue.self, orderBy: [.descending(\.user, \User.login), .descending(\.number)]).map(\.id)
            )
        }
        #expect(ascending == (try raw.rows("SELECT i.id FROM GitIssue i LEFT JOIN User u ON u._pk = i.user ORDER BY u.login ASC, i.id ASC, i._pk").map { Int($0[0])! }))
        #expect(descending == (try raw.rows("SELECT i.id FROM GitIssue i LEFT JOIN User u ON u._pk = i.user ORDER BY u.login DESC, i.number DESC, i._pk").map { Int($0[0])! }))
        #expect(ascending.count == (try count(raw, "SELECT count(*) FROM GitIssue")))
    }
}
