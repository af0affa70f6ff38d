import CodableStore
import CodableStoreTesting
import Foundation
import IssueTracker
import Testing

/// The inbox, on two recorded pages of GitHub's issues API (Fixtures/issue-pages/).
@Suite struct InboxTests {
    func seeded() throws -> FixtureStore {
        try FixtureStore(
            entities: IssueTracker.entities, fixtures: [.folder(Issue.self, "issue-pages")], decoder: IssueTracker.decoder())
    }

    @Test func theInboxListsOpenIssuesNewestFirstInThreeQueries() throws {
        let fixture = try seeded()
        let inbox = try fixture.statements.expectQueries(atMost: 3) { try Inbox.load(from: fixture.store) }
        #expect(
            inbox.rows == [
                Inbox.Row(number: 2, title: "Dark mode (and a light one)", author: "grace", labels: ["feature", "in progress"]),
                Inbox.Row(number: 1, title: "Crash when the list is empty", author: "ada", labels: ["bug", "in progress"]),
            ])
    }

    @Test func theInboxTableAsStored() throws {
        let fixture = try seeded()
        try fixture.store.expectRows(Issue.self, ["number", "state", "closedAt"], orderBy: [.ascending(\.number)], [
            [1, "open", nil],
            [2, "open", nil],
            [3, "closed", Date(timeIntervalSince1970: 1_792_584_000)],  // 2026-10-21T12:00:00Z
        ])
    }

    @Test func closingAnIssueLeavesTheStoreAsTheGoldenFileSays() throws {
        let fixture = try seeded()
        try Inbox.close(number: 1, at: Date(timeIntervalSince1970: 1_764_000_000), in: fixture.store)
        try fixture.expectMatchesGolden("after-closing-1.json")
    }

    @Test func theSecondPageUpdatedTheFirstWithoutDuplicates() throws {
        let fixture = try seeded()
        try fixture.expectMatchesGolden("after-loading.json")
    }
}
