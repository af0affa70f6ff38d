import CodableStore
import Foundation

// The reference shape of the decoding tests: GitHub-like issues with a nested user and labels.

enum IssueState: String, AttributeValue, Codable {
    case open, closed
}

@Entity final class GitIssue {
    var id: Int
    var number: Int
    var title: String
    var state: IssueState = .open
    var createdAt: Date?
    var comments: Int = 0
    var score: Double?
    var body: String?
    var user: User?
    var labels: [Topic] = []

    static let identity = Identity(\GitIssue.id)

    enum CodingKeys: String, EntityCodingKey {
        case id, number, title, state, body, user, labels, comments, score
        case createdAt = "created_at"
    }

    init(id: Int, number: Int, title: String) {
        self.id = id
        self.number = number
        self.title = title
    }
}

@Entity final class User {
    var id: Int
    var login: String?
    var issues: Set<GitIssue> = []
    static let identity = Identity(\User.id)
    init(id: Int) { self.id = id }
}

@Entity final class Topic {
    var id: Int
    var name: String = ""
    var issues: Set<GitIssue> = []
    static let identity = Identity(\Topic.id)
    init(id: Int) { self.id = id }
}

/// Key path keys with a custom delimiter, and a composite identity reference.
@Entity final class Place {
    var code: String
    var country: String?
    var city: String?
    var owner: Membership?
    static let identity = Identity(\Place.code)
    enum CodingKeys: String, EntityCodingKey {
        case code
        case country = "origin/country/name"
        case city = "origin/city"
        case owner
        static var keyPathDelimiter: String { "/" }
    }
    init(code: String) { self.code = code }
}

/// A plain Decodable page wrapping entities.
struct IssuePage: Decodable {
    let results: Many<GitIssue>
    let next: URL?
}

let issueEntities: [any EntityObject.Type] = [GitIssue.self, User.self, Topic.self, Place.self, Membership.self]
