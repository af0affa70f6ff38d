/// One step of a path into a JSON value: a key or an array index.
public enum JSONPathComponent: Hashable, Sendable, CustomStringConvertible {
    case key(String)
    case index(Int)

    public var description: String {
        switch self {
        case .key(let key): return key
        case .index(let index): return "[\(index)]"
        }
    }
}

extension JSONTape {
    /// The keys and indices from the root to the value at `index` (empty for the root). O(size of the tape): for
    /// error messages.
    public func path(to index: Index) -> [JSONPathComponent] {
        var components: [JSONPathComponent] = []
        var container = 0
        let target = index.position
        while container != target {
            let node = nodes[container]
            var position = container + 1
            var found = false
            switch node.kind {
            case .array:
                var element = 0
                while position < Int(node.a) {
                    let end = subtreeEnd(position)
                    if target >= position && target < end {
                        components.append(.index(element))
                        container = position
                        found = true
                        break
                    }
                    position = end
                    element += 1
                }
            case .object:
                while position < Int(node.a) {
                    let end = subtreeEnd(position + 1)
                    if target >= position && target < end {
                        components.append(.key(string(at: Index(position)) ?? ""))
                        // A key itself: the path of its member.
                        container = target == position ? target : position + 1
                        found = true
                        break
                    }
                    position = end
                }
            default:
                break
            }
            if !found { break }
        }
        return components
    }

    /// The path to the value at `index` as text, `user.labels[2].name` (empty for the root).
    public func pathDescription(to index: Index) -> String {
        var text = ""
        for component in path(to: index) {
            if case .key = component, !text.isEmpty { text += "." }
            text += component.description
        }
        return text
    }
}
