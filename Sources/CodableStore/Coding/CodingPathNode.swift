/// A coding path as a linked list, so that descending into a value costs no array copy; the `[CodingKey]`
/// array is built only when an error is thrown or `codingPath` is asked for.
indirect enum CodingPathNode: Sendable {
    case root
    case key(String, CodingPathNode)
    case index(Int, CodingPathNode)

    var path: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while true {
            switch node {
            case .root:
                return keys.reversed()
            case .key(let key, let parent):
                keys.append(CodingKeys(stringValue: key))
                node = parent
            case .index(let index, let parent):
                keys.append(IndexKey(index: index))
                node = parent
            }
        }
    }

    func appending(_ key: String) -> CodingPathNode { .key(key, self) }
    func appending(index: Int) -> CodingPathNode { .index(index, self) }

    /// The path as `[41].user.id`, for messages.
    var rendered: String {
        let text = Self.render(path)
        return text.isEmpty ? "<root>" : text
    }

    /// A coding path as `[41].user.id` (empty for the root).
    static func render(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue, key is IndexKey { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text
    }
}

/// A key of an entity field or of a JSON object member in coding paths and errors.
///
/// Named `CodingKeys` so that messages read exactly like those of synthesized `Codable` conformances:
/// `No value associated with key CodingKeys(stringValue: "id", intValue: nil) ("id").`
struct CodingKeys: CodingKey, Sendable {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// An array index in coding paths, rendered like swift-foundation's (`Index 3`).
struct IndexKey: CodingKey, Sendable {
    let index: Int
    init(index: Int) { self.index = index }
    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.index = intValue }
}
