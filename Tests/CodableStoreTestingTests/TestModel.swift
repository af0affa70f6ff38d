import CodableStore

@Entity final class Author {
    var id: Int
    var login: String?
    var posts: Set<Post> = []
    static let identity = Identity(\Author.id)
    init(id: Int, login: String?) {
        self.id = id
        self.login = login
    }
}

@Entity final class Post {
    var id: Int
    var title: String
    var author: Author?
    var tags: Set<Tag> = []
    static let identity = Identity(\Post.id)
    init(id: Int, title: String) {
        self.id = id
        self.title = title
    }
}

@Entity final class Tag {
    var name: String
    var posts: Set<Post> = []
    static let identity = Identity(\Tag.name)
    init(name: String) { self.name = name }
}

/// A search response that wraps its records.
struct SearchPage: Decodable {
    let total_count: Int
    let items: Many<Post>
}

let entities: [any EntityObject.Type] = [Author.self, Post.self, Tag.self]
