import CodableStore
import Foundation

/// The app's inbox: the open issues, newest first, with their authors and labels.
public struct Inbox: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        public let number: Int
        public let title: String
        public let author: String
        public let labels: [String]

        public init(number: Int, title: String, author: String, labels: [String]) {
            self.number = number
            self.title = title
            self.author = author
            self.labels = labels
        }
    }

    public let rows: [Row]

    /// Reads the inbox in three queries: the open issues, then their authors and their labels, each for all of them
    /// at once. (Reading `issue.user` and `issue.labels` for each issue without prefetching would load them one
    /// issue at a time: two queries per issue.)
    public static func load(from store: Store) throws -> Inbox {
        try store.read { context in
            let issues = try context.fetch(
                Issue.self, where: \.state == "open", orderBy: [.descending(\.createdAt)], prefetching: [\.user, \.labels])
            return Inbox(rows: issues.map { issue in
                Row(number: issue.number, title: issue.title, author: issue.user?.login ?? "ghost", labels: issue.labels.map(\.name))
            })
        }
    }

    /// Closes an issue as the app does when the user closes it: the state, the close date, and the "done" label
    /// instead of "in progress".
    public static func close(number: Int, at date: Date, in store: Store) throws {
        try store.write { context in
            guard let issue = try context.first(Issue.self, where: \.number == number) else { return }
            issue.state = "closed"
            issue.closedAt = date
            issue.labels.removeAll { $0.name == "in progress" }
            if let done = try context.first(Label.self, where: \.name == "done") { issue.labels.append(done) }
        }
    }
}
