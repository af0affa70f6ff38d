import CodableStore
import Foundation

/// A GitHub user, as issues mention it.
@Entity public final class User {
    public var id: Int
    public var login: String
    public var issues: Set<Issue> = []
    public static let identity = Identity(\User.id)
    public init(id: Int, login: String) {
        self.id = id
        self.login = login
    }
}

/// A label of the repository.
@Entity public final class Label {
    public var id: Int
    public var name: String
    public var issues: Set<Issue> = []
    public static let identity = Identity(\Label.id)
    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

/// An issue, from GitHub's issues API (`GET /repos/{owner}/{repo}/issues`).
@Entity public final class Issue {
    public var id: Int
    public var number: Int
    public var title: String
    public var state: String
    public var createdAt: Date
    public var closedAt: Date?
    public var user: User?
    public var labels: [Label] = []
    public static let identity = Identity(\Issue.id)
    public enum CodingKeys: String, EntityCodingKey {
        case id, number, title, state, user, labels
        case createdAt = "created_at"
        case closedAt = "closed_at"
    }
    public init(id: Int, number: Int, title: String, state: String, createdAt: Date) {
        self.id = id
        self.number = number
        self.title = title
        self.state = state
        self.createdAt = createdAt
    }
}

public enum IssueTracker {
    /// The entities of the app's store.
    public static let entities: [any EntityObject.Type] = [Issue.self, User.self, Label.self]

    /// How the app decodes GitHub's responses.
    public static func decoder() -> StoreDecoder {
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
