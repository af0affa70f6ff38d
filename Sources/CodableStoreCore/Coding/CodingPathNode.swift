/// A coding path: the last components of the forms `[i]`, `[i].key` and `[i].key[k]` (a record, its relationships and
/// their elements) inline, the ones before them in a linked list, so that descending into a value costs no array copy,
/// and the few levels of a record no allocation either; the `[CodingKey]` array is built only when an error is
/// thrown or `codingPath` is asked for.
///
/// When each level was a node of its own (an `indirect enum`), the paths of a record's relationships and of their
/// elements cost 3.5 allocations a reference record (callgrind, 100k: 347k of the decoding thread's 1.3M), each freed
/// again with its reference counting, for paths that only an error reads. The inline slots have fixed kinds (an index,
/// a key, an index), so that copying a path is two reference counts, not an enum's outlined copy.
package struct CodingPathNode: Sendable {
    /// The path before the inline components, once the path no longer fits them (nil: the root).
    private final class Prefix: Sendable {
        let path: CodingPathNode
        init(_ path: CodingPathNode) { self.path = path }
    }

    private static let noIndex = Int.min

    private var prefix: Prefix?
    private var leadingIndex = noIndex
    private var key: String?
    private var trailingIndex = noIndex

    static let root = CodingPathNode()

    private init() {}

    var path: [any CodingKey] {
        var keys = prefix?.path.path ?? []
        if leadingIndex != Self.noIndex { keys.append(IndexKey(index: leadingIndex)) }
        if let key { keys.append(CodingKeys(stringValue: key)) }
        if trailingIndex != Self.noIndex { keys.append(IndexKey(index: trailingIndex)) }
        return keys
    }

    func appending(_ key: String) -> CodingPathNode {
        // After `[k]` or another key, the key starts a new inline part.
        var next = self.key == nil && trailingIndex == Self.noIndex ? self : extended()
        next.key = key
        return next
    }

    func appending(index: Int) -> CodingPathNode {
        var next = self
        if leadingIndex == Self.noIndex, key == nil, trailingIndex == Self.noIndex {
            next.leadingIndex = index
        } else if trailingIndex == Self.noIndex, key != nil {
            next.trailingIndex = index
        } else {
            next = extended()
            next.leadingIndex = index
        }
        return next
    }

    /// A path with this one as its prefix and no inline component yet.
    private func extended() -> CodingPathNode {
        var next = CodingPathNode()
        next.prefix = Prefix(self)
        return next
    }

    /// The path as `[41].user.id`, for messages.
    var rendered: String {
        let text = Self.render(path)
        return text.isEmpty ? "<root>" : text
    }

    /// A coding path as `[41].user.id` (empty for the root).
    package static func render(_ path: [any CodingKey]) -> String {
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
package struct CodingKeys: CodingKey, Sendable {
    package var stringValue: String
    package var intValue: Int? { nil }
    package init(stringValue: String) { self.stringValue = stringValue }
    package init?(intValue: Int) { nil }
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
