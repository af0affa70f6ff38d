#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A reference kept by the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy whose object has not arrived:
/// which object refers (its entity and identity), through which relationship, to which missing identity.
///
/// ```swift
/// try store.write { context in
///     _ = try decoder.decode([Comment].self, from: page, into: context)
///     for reference in try context.listUnresolvedReferences() {
///         print(reference)   // Comment id = 7: issue → Issue id = 99 never arrived
///     }
/// }
/// ```
///
/// Identity values are the values as the store keeps them (see ``AttributeValue``'s storage shape): an `Int` is
/// an integer, a `String` or `UUID` text, a `Date` a real number of seconds since 1970.
///
/// Encoding shape (in an `ImportReport`, `codable-store import --json`): an object with the properties below;
/// each identity is `{"names": ["id"], "values": [99]}`, where an integer is a JSON number, text a string and
/// null `null`, and a real and a blob are `{"real": 1.5}` and `{"blob": "<base64>"}`, so that decoding gives
/// every value back as it was.
public struct UnresolvedReference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// An entity's identity: the names of its identity attributes and their stored values, in identity order.
    ///
    /// ```swift
    /// reference.missingIdentity.description   // repository = "apple/swift", number = 12
    /// ```
    public struct Identity: Sendable, Hashable, CustomStringConvertible {
        /// The identity attributes' names, in the order of the entity's ``Identity``.
        public var names: [String]
        /// Their values as stored, in the same order.
        public var values: [DatabaseValue]

        /// An identity of attributes `names` with stored values `values` (of the same count).
        public init(names: [String], values: [DatabaseValue]) {
            self.names = names
            self.values = values
        }

        /// `id = 7`; `repository = "apple/swift", number = 12` for a composite identity. Text is quoted as in JSON.
        public var description: String {
            zip(names, values).map { "\($0) = \(Self.render($1))" }.joined(separator: ", ")
        }

        /// A value as it would appear in the JSON that names it: text quoted and escaped, numbers as they are.
        static func render(_ value: DatabaseValue) -> String {
            switch value {
            case .null: return "null"
            case .integer(let value): return String(value)
            case .real(let value): return String(value)
            case .blob: return value.description
            case .text(let text):
                var quoted: [UInt8] = []
                JSONValue.writeString(text, into: &quoted)
                return String(decoding: quoted, as: UTF8.self)
            }
        }
    }

    /// The entity of the object that refers (`Comment`).
    public var ownerEntity: String
    /// The referring object's identity; nil when its entity has none (then ``ownerRowID`` tells it).
    public var ownerIdentity: Identity?
    /// The referring object's row id (``EntityState/rowID``).
    public var ownerRowID: Int64
    /// The relationship of the owner that holds the reference (`issue`).
    public var relationship: String
    /// The entity the reference is to (`Issue`).
    public var destinationEntity: String
    /// The identity no object of ``destinationEntity`` has (yet).
    public var missingIdentity: Identity

    /// A reference from `ownerEntity`'s object (`ownerIdentity`, `ownerRowID`) through `relationship` to the object
    /// of `destinationEntity` with identity `missingIdentity`.
    public init(
        ownerEntity: String, ownerIdentity: Identity?, ownerRowID: Int64, relationship: String, destinationEntity: String,
        missingIdentity: Identity
    ) {
        self.ownerEntity = ownerEntity
        self.ownerIdentity = ownerIdentity
        self.ownerRowID = ownerRowID
        self.relationship = relationship
        self.destinationEntity = destinationEntity
        self.missingIdentity = missingIdentity
    }

    /// The owner, for messages: `Comment id = 7`, or `Comment row 12` for an entity without identity.
    var owner: String {
        ownerEntity + " " + (ownerIdentity.map(\.description) ?? "row \(ownerRowID)")
    }

    /// `Comment id = 7: issue → Issue id = 99 never arrived`.
    public var description: String {
        "\(owner): \(relationship) → \(destinationEntity) \(missingIdentity) never arrived"
    }
}

extension UnresolvedReference.Identity: Codable {
    private enum CodingKeys: String, CodingKey { case names, values }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        names = try container.decode([String].self, forKey: .names)
        values = try container.decode([StoredValue].self, forKey: .values).map(\.value)
        guard names.count == values.count else {
            throw DecodingError.dataCorruptedError(
                forKey: .values, in: container, debugDescription: "\(values.count) values for \(names.count) names")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(names, forKey: .names)
        try container.encode(values.map(StoredValue.init), forKey: .values)
    }

    /// A stored value in JSON: integers, text and null as themselves; a real or a blob in an object that says which
    /// (a real such as 7.0 would otherwise come back as the integer 7, and a blob as text).
    private struct StoredValue: Codable {
        let value: DatabaseValue

        init(_ value: DatabaseValue) { self.value = value }

        private enum Tag: String, CodingKey { case real, blob }

        init(from decoder: any Decoder) throws {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                value = .null
            } else if let integer = try? single.decode(Int64.self) {
                value = .integer(integer)
            } else if let text = try? single.decode(String.self) {
                value = .text(text)
            } else {
                let tagged = try decoder.container(keyedBy: Tag.self)
                if let real = try tagged.decodeIfPresent(Double.self, forKey: .real) {
                    value = .real(real)
                } else if let blob = try tagged.decodeIfPresent(Data.self, forKey: .blob) {
                    value = .blob(blob)
                } else {
                    throw DecodingError.dataCorrupted(
                        .init(
                            codingPath: decoder.codingPath,
                            debugDescription: "Expected an identity value: a number, a string, null, {\"real\": …} or {\"blob\": …}."))
                }
            }
        }

        func encode(to encoder: any Encoder) throws {
            switch value {
            case .null:
                var single = encoder.singleValueContainer()
                try single.encodeNil()
            case .integer(let integer):
                var single = encoder.singleValueContainer()
                try single.encode(integer)
            case .text(let text):
                var single = encoder.singleValueContainer()
                try single.encode(text)
            case .real(let real):
                var tagged = encoder.container(keyedBy: Tag.self)
                try tagged.encode(real, forKey: .real)
            case .blob(let blob):
                var tagged = encoder.container(keyedBy: Tag.self)
                try tagged.encode(blob, forKey: .blob)
            }
        }
    }
}
