import CodableStore
import Foundation

/// The app's inbox: the open issues, newest first, with their authors.
public struct Inbox: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        public let number: Int
        public let title: String
        public let author: String

        public init(number: Int, title: String, author: String) {
            self.number = number
            self.title = title
            self.author = author
        }
    }

    public let rows: [Row]

    /// Reads the inbox in two queries: the open issues, then their authors all at once. (Reading `issue.user` for
    /// each issue without the second query would load the users one by one: a query per issue.)
    public static func load(from store: Store) throws -> Inbox {
        try store.read { context in
            let issues = try context.fetch(Issue.self, where: \.state == "open", orderBy: [.descending(\.createdAt)])
            _ = try context.fetch(User.self)  // now in the context: each issue's user resolves without a query
            return Inbox(rows: issues.map { issue in
                Row(number: issue.number, title: issue.title, author: issue.user?.login ?? "ghost")
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
