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

/// A JSON value as a tree: what the ``EntityDecodingHooks/prepareForDecoding(_:)`` hook rewrites, and what
/// entities are captured as when they are decoded through a foreign decoder.
///
/// ```swift
/// static func prepareForDecoding(_ json: inout JSONValue) throws {
///     if case .string(let id)? = json["id"], let number = Int(id) { json["id"] = .number(String(number)) }
/// }
/// ```
/// Numbers keep their text, so integers beyond 64 bits and exact decimals survive; object members keep their
/// order.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text, so that integers beyond 64 bits and exact decimals survive.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
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

extension JSONValue {
    /// The member with this key of an object (the last one if repeated); setting appends or replaces it,
    /// setting nil removes it. Nil for non-objects.
    public subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let members) = self else { return nil }
            return members.last { $0.0 == key }?.1
        }
        set {
            guard case .object(var members) = self else { return }
            members.removeAll { $0.0 == key }
            if let newValue { members.append((key, newValue)) }
            self = .object(members)
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    /// The number's text, if this is a number.
    public var numberText: String? { if case .number(let value) = self { value } else { nil } }
    /// A number made from an integer.
    public static func integer(_ value: some BinaryInteger) -> JSONValue { .number(String(value)) }
}

extension JSONValue: Decodable {
    /// Captures whatever JSON value a decoder is positioned on.
    public init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [(String, JSONValue)] = []
            for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                members.append((key.stringValue, try container.decode(JSONValue.self, forKey: key)))
            }
            self = .object(members)
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONValue.self)) }
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
struct JSONValueView: JSONRecordView {
    let root: JSONValue

    func kind(_ node: JSONValue) -> JSONKind {
        switch node {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }
    func bool(_ node: JSONValue) -> Bool { if case .bool(let value) = node { value } else { false } }
    func string(_ node: JSONValue) -> String { if case .string(let value) = node { value } else { "" } }
    func numberText(_ node: JSONValue) -> String { if case .number(let value) = node { value } else { "" } }
    func int64(_ node: JSONValue) -> Int64? { Int64(numberText(node)) }
    func uint64(_ node: JSONValue) -> UInt64? { UInt64(numberText(node)) }
    func double(_ node: JSONValue) -> Double? { Double(numberText(node)).flatMap { $0.isFinite ? $0 : nil } }
    func elements(_ node: JSONValue) -> [JSONValue] { if case .array(let value) = node { value } else { [] } }
    func member(_ node: JSONValue, key: String) -> JSONValue? {
        guard case .object(let members) = node else { return nil }
        return members.last { $0.0 == key }?.1
    }
    func members(_ node: JSONValue) -> [(key: String, value: JSONValue)] {
        if case .object(let members) = node { members.map { (key: $0.0, value: $0.1) } } else { [] }
    }
    func byteOffset(_ node: JSONValue) -> Int? { nil }
}
