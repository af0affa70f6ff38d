/// The kind of a JSON value.
enum JSONKind: Sendable {
    case null, bool, number, string, array, object

    /// How swift-foundation's JSONDecoder names the kind in `typeMismatch` messages.
    var foundationDescription: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .number: "number"
        case .string: "a string"
        case .array: "an array"
        case .object: "a dictionary"
        }
    }
}

/// Read access to one parsed JSON value (a document or one record of a dump): what the store decoder reads.
///
/// The decoder is generic over this protocol so that it reads the compact tape of the JSON layer directly on
/// the fast path, and a captured tree when it runs under a foreign decoder (Foundation's `JSONDecoder`).
protocol JSONRecordView {
    associatedtype Node
    var root: Node { get }
    func kind(_ node: Node) -> JSONKind
    func bool(_ node: Node) -> Bool
    func string(_ node: Node) -> String
    /// The number's text as written in the JSON (for exact conversions and messages).
    func numberText(_ node: Node) -> String
    /// The number as an `Int64`, if it is an integer that fits exactly.
    func int64(_ node: Node) -> Int64?
    /// The number as a `UInt64`, if it is a non-negative integer that fits exactly.
    func uint64(_ node: Node) -> UInt64?
    /// The number as a finite `Double`, if it has one.
    func double(_ node: Node) -> Double?
    /// The elements of an array, in order.
    func elements(_ node: Node) -> [Node]
    /// The member of an object with this key; the last one if the key is repeated.
    func member(_ node: Node, key: String) -> Node?
    /// The members of an object, in document order.
    func members(_ node: Node) -> [(key: String, value: Node)]
    /// Where the value starts in the source, for messages; nil when unknown.
    func byteOffset(_ node: Node) -> Int?
}

/// A JSON value captured as a tree: used when entities are decoded through a foreign decoder (which only
/// offers Codable containers), and for small documents.
enum JSONTree: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text, so that integers beyond 64 bits and exact decimals survive.
    case number(String)
    case string(String)
    case array([JSONTree])
    case object([(String, JSONTree)])

    static func == (lhs: JSONTree, rhs: JSONTree) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }
}

extension JSONTree: Decodable {
    /// Captures whatever JSON value a decoder is positioned on.
    init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [(String, JSONTree)] = []
            for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                members.append((key.stringValue, try container.decode(JSONTree.self, forKey: key)))
            }
            self = .object(members)
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONTree] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONTree.self)) }
            self = .array(elements)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .number(String(value))
        } else if let value = try? container.decode(UInt64.self) {
            self = .number(String(value))
        } else if let value = try? container.decode(Double.self) {
            self = .number(String(value))
        } else {
            self = .string(try container.decode(String.self))
        }
    }
}

/// A coding key made from a string or an index.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// A whole tree as a record view; nodes are the subtrees.
struct JSONTreeView: JSONRecordView {
    let root: JSONTree

    func kind(_ node: JSONTree) -> JSONKind {
        switch node {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }
    func bool(_ node: JSONTree) -> Bool { if case .bool(let value) = node { value } else { false } }
    func string(_ node: JSONTree) -> String { if case .string(let value) = node { value } else { "" } }
    func numberText(_ node: JSONTree) -> String { if case .number(let value) = node { value } else { "" } }
    func int64(_ node: JSONTree) -> Int64? { Int64(numberText(node)) }
    func uint64(_ node: JSONTree) -> UInt64? { UInt64(numberText(node)) }
    func double(_ node: JSONTree) -> Double? { Double(numberText(node)).flatMap { $0.isFinite ? $0 : nil } }
    func elements(_ node: JSONTree) -> [JSONTree] { if case .array(let value) = node { value } else { [] } }
    func member(_ node: JSONTree, key: String) -> JSONTree? {
        guard case .object(let members) = node else { return nil }
        return members.last { $0.0 == key }?.1
    }
    func members(_ node: JSONTree) -> [(key: String, value: JSONTree)] {
        if case .object(let members) = node { members.map { (key: $0.0, value: $0.1) } } else { [] }
    }
    func byteOffset(_ node: JSONTree) -> Int? { nil }
}
