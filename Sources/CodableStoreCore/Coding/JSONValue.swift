#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension JSONTape.Kind {
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

/// A JSON value as a tree: what the ``EntityJSONPreparing/prepareForDecoding(_:)`` hook rewrites, and what
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

extension JSONValue {
    /// The value at `index` of a parsed tape: numbers as written, members in document order.
    init(tape: JSONTape, at index: JSONTape.Index) {
        switch tape.kind(of: index) {
        case .null: self = .null
        case .bool: self = .bool(tape.bool(at: index) ?? false)
        case .number: self = .number(tape.number(at: index)?.description ?? "")
        case .string: self = .string(tape.string(at: index) ?? "")
        case .array: self = .array(tape.elements(of: index).map { JSONValue(tape: tape, at: $0) })
        case .object:
            self = .object(tape.members(of: index).map { (tape.string(at: $0.key) ?? "", JSONValue(tape: tape, at: $0.value)) })
        }
    }

    /// The value with every object's members sorted by key (by their UTF-8 bytes, as ``writeSorted(into:)`` writes).
    func sortingKeys() -> JSONValue {
        switch self {
        case .array(let elements): .array(elements.map { $0.sortingKeys() })
        case .object(let members):
            .object(members.map { ($0.0, $0.1.sortingKeys()) }.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) })
        default: self
        }
    }

    /// Parses JSON text, keeping numbers as written.
    public init(parsing text: String) throws {
        let tape = try JSONTape.parse(text)
        self.init(tape: tape, at: tape.root)
    }
}

extension JSONValue: Decodable {
    /// Captures whatever JSON value a decoder is positioned on. From a ``StoreDecoder``, numbers keep their text
    /// (`1.50`, integers beyond 64 bits) and members their order; another decoder gives its numbers back as integers
    /// or `Double`s, and its members sorted by key.
    public init(from decoder: any Decoder) throws {
        if let decoder = decoder as? StoreDecoderImpl {
            self = decoder.materialize(decoder.node)
            return
        }
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

extension JSONValue: Encodable {
    /// Encodes the value as it is; a number goes through `Decimal` when its text is not an integer (an encoder has no
    /// way to write a number's text as it is).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let text):
            var container = encoder.singleValueContainer()
            if let integer = Int64(text) {
                try container.encode(integer)
            } else if let unsigned = UInt64(text) {
                try container.encode(unsigned)
            } else if let decimal = Decimal(string: text) {
                try container.encode(decimal)
            } else {
                try container.encode(Double(text) ?? .nan)
            }
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let members):
            var container = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in members { try container.encode(value, forKey: AnyKey(stringValue: key)) }
        }
    }
}

/// A `json` attribute of any shape: `var payload: JSONValue?` stores the value as its JSON text, object keys
/// sorted and numbers as written (as a model file's `json` attribute does).
extension JSONValue: AttributeValue {
    public static var attributeType: AttributeType { .json }

    public var databaseValue: DatabaseValue {
        var bytes: [UInt8] = []
        writeSorted(into: &bytes)
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .text(let text) = databaseValue else { throw AttributeValueError(expected: "JSON", found: databaseValue) }
        do {
            self = try JSONValue(parsing: text)
        } catch {
            throw AttributeValueError(expected: "JSON", found: databaseValue, reason: "invalid JSON: \(error)")
        }
    }

    /// Objects' members sorted by key, as the stored text has them: a value decoded again equals the stored one
    /// whatever the order the API wrote its members in, so that an import of the same record changes nothing.
    public static func decodeAttribute(from decoder: any Decoder) throws -> JSONValue { try JSONValue(from: decoder).sortingKeys() }

    public func encodeAttribute(to encoder: any Encoder) throws { try encode(to: encoder) }
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

extension JSONValue {
    /// The value as compact JSON text (UTF-8), to be parsed into a tape.
    func jsonBytes() -> [UInt8] {
        var output: [UInt8] = []
        write(into: &output)
        return output
    }

    /// The value as compact JSON text with every object's keys sorted (by their UTF-8 bytes), numbers as written:
    /// one text for equal values whatever the order of their members (a JSON attribute described at run time).
    func writeSorted(into output: inout [UInt8]) {
        write(into: &output, sortingKeys: true)
    }

    private func write(into output: inout [UInt8], sortingKeys: Bool = false) {
        switch self {
        case .null: output += "null".utf8
        case .bool(let value): output += (value ? "true" : "false").utf8
        case .number(let text): output += text.utf8
        case .string(let text): Self.writeString(text, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                element.write(into: &output, sortingKeys: sortingKeys)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let ordered = sortingKeys ? members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) } : members
            for (offset, (key, value)) in ordered.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                value.write(into: &output, sortingKeys: sortingKeys)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped (`\n`, `\r`, `\t` in short).
    static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += "\\\"".utf8
            case UInt8(ascii: "\\"): output += "\\\\".utf8
            case 0x0A: output += "\\n".utf8
            case 0x0D: output += "\\r".utf8
            case 0x09: output += "\\t".utf8
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output += "\\u00".utf8
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0xF)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
