import CodableStore
import Foundation

// The reference model: GitHub-like issues, their user and their labels, as `codable-store` ships it and as the
// benchmarks measure it. It matches the dumps of IssueDumpGenerator (`codable-store generate issues`):
//
//     {"id":1,"number":1,"title":"…","state":"open","created_at":"2015-06-05T09:52:26Z","updated_at":"…",
//      "comments":23,"score":21.86,"user":{"id":7,"login":"a"},"labels":[{"id":1009,"name":"performance"}],"body":"…"}

@Entity public final class Issue {
    public var id: Int
    public var number: Int
    public var title: String
    public var state: String
    public var createdAt: Date
    public var updatedAt: Date
    public var comments: Int
    public var score: Double
    public var body: String?
    public var user: User?
    public var labels: Set<Label> = []

    public static let identity = Identity(\Issue.id)

    public enum CodingKeys: String, EntityCodingKey {
        case id, number, title, state, comments, score, user, labels, body
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public init(id: Int, number: Int, title: String, state: String, createdAt: Date, updatedAt: Date, comments: Int, score: Double) {
        self.id = id
        self.number = number
        self.title = title
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.comments = comments
        self.score = score
    }
}

@Entity public final class User {
    public var id: Int
    public var login: String?
    public var issues: Set<Issue> = []
    public static let identity = Identity(\User.id)
    public init(id: Int) { self.id = id }
}

@Entity public final class Label {
    public var id: Int
    public var name: String?
    public var issues: Set<Issue> = []
    public static let identity = Identity(\Label.id)
    public init(id: Int) { self.id = id }
}

/// The reference model's entities and coding settings.
public enum ReferenceModel {
    /// The entities to open a store with.
    public static let entities: [any EntityObject.Type] = [Issue.self, User.self, Label.self]

    /// The decoder of the dumps: ISO 8601 dates.
    public static func decoder() -> StoreDecoder {
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// The encoder of `codable-store export`: ISO 8601 dates, sorted keys.
    public static func encoder() -> StoreEncoder {
        let encoder = StoreEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
