/// An entity that rewrites its JSON before it is decoded, for example to turn a string id into a number or
/// to compose an identity from two keys. It runs before the identity lookup.
///
/// ```swift
/// extension Issue: EntityJSONPreparing {
///     static func prepareForDecoding(_ json: inout JSONValue) throws {
///         if let id = json["id"]?.stringValue, let number = Int(id) { json["id"] = .integer(number) }
///     }
/// }
/// ```
/// The JSON object is materialized as a ``JSONValue`` for the hook: a slower path than plain decoding.
public protocol EntityJSONPreparing: EntityObject {
    /// Rewrites the JSON object of one entity before its identity is read.
    static func prepareForDecoding(_ json: inout JSONValue) throws
}

/// An entity that decodes itself, in place of (or around) the default field-by-field decoding.
///
/// The object has already been looked up by identity (or created from the JSON's values) when `initialize`
/// is called; call ``defaultInitialization(from:)`` (or its `skipping:` / `with:` forms) to apply the default
/// decoding to some fields, and decode the rest yourself from the decoder's containers.
///
/// ```swift
/// extension Person: EntityCustomDecoding {
///     func initialize(from decoder: any Decoder) throws {
///         try defaultInitialization(from: decoder, skipping: ["name"])
///         let container = try decoder.container(keyedBy: AnyCodingKey.self)
///         let first = try container.decode(String.self, forKey: "first_name")
///         let last = try container.decode(String.self, forKey: "last_name")
///         name = first + " " + last
///     }
/// }
/// ```
/// A new object is created before `initialize` runs, so a non-optional attribute that only `initialize`
/// sets needs a default value.
public protocol EntityCustomDecoding: EntityObject {
    func initialize(from decoder: any Decoder) throws
}

extension EntityObject {
    /// Applies the default decoding of every field present in the JSON.
    public func defaultInitialization(from decoder: any Decoder) throws {
        try applyDefault(from: decoder) { _ in true }
    }

    /// Applies the default decoding of every field present in the JSON except `fields` (field names).
    public func defaultInitialization(from decoder: any Decoder, skipping fields: Set<String>) throws {
        try applyDefault(from: decoder) { !fields.contains($0) }
    }

    /// Applies the default decoding of the fields named in `fields` only.
    public func defaultInitialization(from decoder: any Decoder, with fields: Set<String>) throws {
        try applyDefault(from: decoder) { fields.contains($0) }
    }

    private func applyDefault(from decoder: any Decoder, _ include: (String) -> Bool) throws {
        guard let handle = decoder as? any EntityDecodingHandle else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "defaultInitialization(from:) needs the decoder StoreDecoder passes to initialize(from:)"))
        }
        try handle.applyFields(to: self, include)
    }
}

/// A coding key made from any string, for reading extra keys in ``EntityCustomDecoding/initialize(from:)``.
public struct AnyCodingKey: CodingKey, ExpressibleByStringLiteral, Sendable {
    public var stringValue: String
    public var intValue: Int?
    public init(stringValue: String) { self.stringValue = stringValue }
    public init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
    public init(stringLiteral value: String) { self.stringValue = value }
}
