import CodableStore
import Foundation

// The reference workload's model (issue + user + labels), as entities and as plain Decodable structs for
// the JSONDecoder baselines. It matches the dumps of IssueDumpGenerator.

@Entity public final class Issue {
    public var id: Int
    var number: Int
    var title: String
    var state: String
    var createdAt: Date
    var updatedAt: Date
    var comments: Int
    var score: Double
    var body: String?
    var user: User?
    var labels: Set<Label> = []
    public static let identity = Identity(\Issue.id)
    enum CodingKeys: String, EntityCodingKey {
        case id, number, title, state, comments, score, body, user, labels
        case createdAt = "created_at", updatedAt = "updated_at"
    }
    init(id: Int, number: Int, title: String, state: String, createdAt: Date, updatedAt: Date, comments: Int, score: Double) {
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
    var id: Int
    var login: String?
    var issues: Set<Issue> = []
    public static let identity = Identity(\User.id)
    init(id: Int) { self.id = id }
}

@Entity public final class Label {
    var id: Int
    var name: String?
    var issues: Set<Issue> = []
    public static let identity = Identity(\Label.id)
    init(id: Int) { self.id = id }
}

public let referenceEntities: [any EntityObject.Type] = [Issue.self, User.self, Label.self]

public struct PlainIssue: Decodable {
    public let id: Int
    public let number: Int
    public let title: String
    public let state: String
    public let created_at: Date
    public let updated_at: Date
    public let comments: Int
    public let score: Double
    public let body: String?
    public let user: PlainUser
    public let labels: [PlainLabel]
}

public struct PlainUser: Decodable {
    public let id: Int
    public let login: String
}

public struct PlainLabel: Decodable {
    public let id: Int
    public let name: String
}

/// The decoder settings of the reference workload.
public func referenceDecoder() -> StoreDecoder {
    let decoder = StoreDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}
