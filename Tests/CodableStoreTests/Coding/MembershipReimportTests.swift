import CodableStore
import Foundation
import Testing

// Memberships changed and changed back within one write: "writes nothing" holds for join rows, positions and
// foreign keys as it does for attributes (DESIGN.md, decoding contract 3). Each test decodes pages whose
// memberships move and move back, and asserts on the statement log and on the rows.

/// An issue whose ordered labels are a many-to-many join table with positions.
@Entity final class MoveIssue {
    var id: Int
    var title: String?
    var labels: [MoveLabel] = []
    static let identity = Identity(\MoveIssue.id)
    init(id: Int) { self.id = id }
}

/// A label, the unordered inverse side of `MoveIssue.labels`.
@Entity final class MoveLabel {
    var id: Int
    var name: String?
    var issues: Set<MoveIssue> = []
    static let identity = Identity(\MoveLabel.id)
    init(id: Int) { self.id = id }
}

/// A team whose unordered members are a many-to-many join table (no positions), owned by the other side
/// (`MoveMember_teams`): the team's changes are recorded from the target's side.
@Entity final class MoveTeam {
    var id: Int
    var members: Set<MoveMember> = []
    static let identity = Identity(\MoveTeam.id)
    init(id: Int) { self.id = id }
}

@Entity final class MoveMember {
    var id: Int
    var teams: Set<MoveTeam> = []
    static let identity = Identity(\MoveMember.id)
    init(id: Int) { self.id = id }
}

/// The fuzzer's model (Fuzz/Sources/StoreFuzzer/FuzzModel.swift): items with an owner whose ordered `items` are
/// stored by the items' foreign key and an order column, and tags whose unordered `items` are a join table.
@Entity final class NestItem {
    var id: Int
    var name: String?
    var owner: NestOwner?
    var tags: [NestTag] = []
    static let identity = Identity(\NestItem.id)
    init(id: Int) { self.id = id }
}

@Entity final class NestOwner {
    var id: Int
    var name: String
    var items: [NestItem] = []
    static let identity = Identity(\NestOwner.id)
    init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

@Entity final class NestTag {
    var id: Int
    var label: String?
    var items: Set<NestItem> = []
    static let identity = Identity(\NestTag.id)
    init(id: Int) { self.id = id }
}

@Suite struct MembershipReimportTests {
    private func json(_ text: String) -> Data { Data(text.utf8) }

    @Test func labelsMovedToAnotherIssueAndBackWriteNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [MoveIssue.self, MoveLabel.self], options: .init(statementObserver: log.observer))
        // Page A as stored; page B moves label 11 from issue 1 to issue 2 and reorders issue 2's labels.
        let pageA = json(#"[{"id": 1, "labels": [10, 11]}, {"id": 2, "labels": [12, 13]}]"#)
        let pageB = json(#"[{"id": 1, "labels": [10]}, {"id": 2, "labels": [13, 11, 12]}]"#)
        try store.write { context in _ = try StoreDecoder().decode([MoveIssue].self, from: pageA, into: context) }
        let rows = #"SELECT i.id, l.id, j.* FROM "MoveIssue" i JOIN "MoveIssue_labels" j ON j.source = i._pk JOIN "MoveLabel" l ON l._pk = j.target ORDER BY 1, 2"#
        let stored = try RawDatabase(path).rows(rows)
        #expect(stored.map { Array($0.prefix(2)) } == [["1", "10"], ["1", "11"], ["2", "12"], ["2", "13"]])

        log.reset()
        try store.write { context in
            for page in [pageA, pageB, pageA] { _ = try StoreDecoder().decode([MoveIssue].self, from: page, into: context) }
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(try RawDatabase(path).rows(rows) == stored)

        // The same moves with a fetch between the pages (which saves what is pending): what is saved in between
        // is written, and the last page writes it back; the store ends as it was.
        try store.write { context in
            _ = try StoreDecoder().decode([MoveIssue].self, from: pageB, into: context)
            _ = try context.count(MoveIssue.self)
            _ = try StoreDecoder().decode([MoveIssue].self, from: pageA, into: context)
        }
        #expect(try RawDatabase(path).rows(rows) == stored)
    }

    @Test func aLinkMadeFromTheUnorderedSideAndUndoneWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [MoveIssue.self, MoveLabel.self], options: .init(statementObserver: log.observer))
        try store.write { context in
            _ = try StoreDecoder().decode([MoveIssue].self, from: json(#"[{"id": 1, "labels": [10, 11]}, {"id": 2}]"#), into: context)
        }
        log.reset()
        try store.write { context in
            // Label 10 takes issue 2 and gives issue 1 up, then is set back, through its unordered side.
            let labels = try StoreDecoder().decode(
                [MoveLabel].self, from: json(#"[{"id": 10, "issues": [2]}, {"id": 10, "issues": [1]}]"#), into: context)
            #expect(labels.map(\.id) == [10, 10])
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(
            try RawDatabase(path).rows(#"SELECT i.id, l.id, j.position FROM "MoveIssue_labels" j JOIN "MoveIssue" i ON i._pk = j.source JOIN "MoveLabel" l ON l._pk = j.target ORDER BY 1, 2"#)
                == [["1", "10", "0"], ["1", "11", "1"]])
    }

    @Test func unorderedMembersChangedAndBackWriteNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [MoveTeam.self, MoveMember.self], options: .init(statementObserver: log.observer))
        let pageA = json(#"[{"id": 1, "members": [1, 2]}, {"id": 2, "members": [3]}]"#)
        let pageB = json(#"[{"id": 1, "members": [2, 3]}, {"id": 2, "members": [1]}]"#)
        try store.write { context in _ = try StoreDecoder().decode([MoveTeam].self, from: pageA, into: context) }
        let rows = #"SELECT t.id, m.id FROM "MoveMember_teams" j JOIN "MoveTeam" t ON t._pk = j.target JOIN "MoveMember" m ON m._pk = j.source ORDER BY 1, 2"#
        #expect(try RawDatabase(path).rows(rows) == [["1", "1"], ["1", "2"], ["2", "3"]])

        log.reset()
        try store.write { context in
            for page in [pageB, pageA, pageB, pageA] { _ = try StoreDecoder().decode([MoveTeam].self, from: page, into: context) }
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(try RawDatabase(path).rows(rows) == [["1", "1"], ["1", "2"], ["2", "3"]])

        // A real change after changes and back is written, and only it.
        log.reset()
        try store.write { context in
            for page in [pageB, pageA] { _ = try StoreDecoder().decode([MoveTeam].self, from: page, into: context) }
            _ = try StoreDecoder().decode([MoveTeam].self, from: json(#"[{"id": 2, "members": [3, 4]}]"#), into: context)
        }
        #expect(log.writes.filter { $0.contains("MoveMember_teams") }.count == 1, "\(log.writes)")
        #expect(try RawDatabase(path).rows(rows) == [["1", "1"], ["1", "2"], ["2", "3"], ["2", "4"]])
    }

    /// Fuzz/Crashes/reimport-rewrites-nested-owners.json: items move between two owners' ordered lists while
    /// nested records are decoded, and end where they are stored.
    @Test func nestedOwnersWhoseOrderedListsChangeThroughTheirInverseWriteNothingTheSecondTime() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [NestItem.self, NestOwner.self, NestTag.self], options: .init(statementObserver: log.observer))
        let input = json(
            #"[{"id":1,"owner":{"id":2,"name":"o","items":[{"id":3,"owner":{"id":4,"name":"p","items":[{"id":5,"tags":[{"id":6,"items":[1,3]}]}]}}]}}]"#)
        try store.write { context in _ = try StoreDecoder().decode([NestItem].self, from: input, into: context) }
        let oracle = try RawDatabase(path)
        func dump() throws -> [[String]] {
            try oracle.rows(#"SELECT i.id, o.id, i.owner_order FROM "NestItem" i LEFT JOIN "NestOwner" o ON o._pk = i.owner ORDER BY 1"#)
                + oracle.rows(#"SELECT t.id, i.id FROM "NestItem_tags" j JOIN "NestTag" t ON t._pk = j.target JOIN "NestItem" i ON i._pk = j.source ORDER BY 1, 2"#)
        }
        let first = try dump()
        log.reset()
        try store.write { context in _ = try StoreDecoder().decode([NestItem].self, from: input, into: context) }
        #expect(log.writes.isEmpty, "\(log.all.joined(separator: "\n"))")
        #expect(try dump() == first)
    }
}
