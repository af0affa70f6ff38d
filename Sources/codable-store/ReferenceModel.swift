import CodableStore
import Foundation

/// The reference model the CLI ships: GitHub-like issues, their user and their labels. It matches the dumps
/// of `codable-store generate issues`.

@Entity final class Issue {
    var id: Int
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

    static let identity = Identity(\Issue.id)

    enum CodingKeys: String, EntityCodingKey {
        case id, number, title, state, comments, score, user, labels, body
        case createdAt = "created_at"
        case updatedAt = "updated_at"
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

@Entity final class User {
    var id: Int
    var login: String?
    var issues: Set<Issue> = []
    static let identity = Identity(\User.id)
    init(id: Int) { self.id = id }
}

@Entity final class Label {
    var id: Int
    var name: String?
    var issues: Set<Issue> = []
    static let identity = Identity(\Label.id)
    init(id: Int) { self.id = id }
}

/// The models the commands accept as their first argument.
enum ModelName: String, CaseIterable {
    case issues
}

/// The decoder and encoder settings of the reference model: ISO 8601 dates.
enum ReferenceCoding {
    static func decoder() -> StoreDecoder {
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    static func encoder() -> StoreEncoder {
        let encoder = StoreEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
