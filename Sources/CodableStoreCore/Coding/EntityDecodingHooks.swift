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
/// is called; call ``EntityObject/defaultInitialization(from:)`` (or its `skipping:` / `with:` forms) to apply the default
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
/// `initialize` runs the same way for a new object and a stored one. A new object starts with its identity,
/// default values and nil (a non-optional attribute without a default value is read from the JSON first: give
/// one to any attribute that `initialize` converts or sets itself), and the fields that `defaultInitialization`
/// skips stay as they start.
public protocol EntityCustomDecoding: EntityObject {
    func initialize(from decoder: any Decoder) throws
}

extension EntityObject {
    /// Applies the default decoding of every field present in the JSON.
    public func defaultInitialization(from decoder: any Decoder) throws {
        try applyDefault(from: decoder) { _ in true }
    }

    /// Applies the default decoding of every field present in the JSON except `fields` (field names).
    ///
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidObject`` when a name is not a field of the entity.
    public func defaultInitialization(from decoder: any Decoder, skipping fields: Set<String>) throws {
        try checkFieldNames(fields, in: "defaultInitialization(from:skipping:)")
        try applyDefault(from: decoder) { !fields.contains($0) }
    }

    /// Applies the default decoding of the fields named in `fields` only.
    ///
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidObject`` when a name is not a field of the entity.
    public func defaultInitialization(from decoder: any Decoder, with fields: Set<String>) throws {
        try checkFieldNames(fields, in: "defaultInitialization(from:with:)")
        try applyDefault(from: decoder) { fields.contains($0) }
    }

    /// A misspelt field name would silently decode a field the hook meant to handle (or skip one it meant to
    /// keep): it is an error.
    private func checkFieldNames(_ names: Set<String>, in function: String) throws {
        let known = Set(Self.entityDescription.fields.map(\.name))
        let unknown = names.subtracting(known)
        guard !unknown.isEmpty else { return }
        throw StoreError(
            .invalidObject,
            "\(Self.self) has no field\(unknown.count == 1 ? "" : "s") \(unknown.sorted().map { "'\($0)'" }.joined(separator: ", ")) "
                + "(given to \(function)); its fields are \(Self.entityDescription.fields.map(\.name).joined(separator: ", "))",
            entity: "\(Self.self)")
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

/// An entity that chooses, per relationship, what a bare reference to an object that is not stored becomes,
/// instead of the decoder's ``StoreDecoder/unknownReferencePolicy``:
///
/// ```swift
/// extension Comment: EntityReferencePolicies {
///     // Comments arrive before the issues they belong to: link them when the issue arrives.
///     static let referencePolicies = [ReferencePolicy(\Comment.issue, .deferred)]
/// }
/// extension Issue: EntityReferencePolicies {
///     // A milestone needs a title: it cannot be a stub, but labels can.
///     static let referencePolicies = [ReferencePolicy(\Issue.milestone, .ignore)]
/// }
/// ```
/// A key path that does not name a relationship is reported when the store opens.
public protocol EntityReferencePolicies: EntityObject {
    static var referencePolicies: [ReferencePolicy<Self>] { get }
}

/// The unknown-reference policy of one relationship (see ``EntityReferencePolicies``).
public struct ReferencePolicy<Root: EntityObject>: @unchecked Sendable {
    // @unchecked: key paths are immutable once formed; `AnyKeyPath` does not declare Sendable.
    public let keyPath: PartialKeyPath<Root>
    public let policy: StoreDecoder.UnknownReferencePolicy

    public init(_ keyPath: PartialKeyPath<Root>, _ policy: StoreDecoder.UnknownReferencePolicy) {
        self.keyPath = keyPath
        self.policy = policy
    }
}

extension EntityReferencePolicies {
    /// The declared policies by field index, and the problems of declarations that name no relationship.
    static func resolvedReferencePolicies() -> (policies: [Int: StoreDecoder.UnknownReferencePolicy], problems: [String]) {
        var policies: [Int: StoreDecoder.UnknownReferencePolicy] = [:]
        var problems: [String] = []
        for declaration in referencePolicies {
            guard let field = entityDescription.fieldIndex(for: declaration.keyPath),
                case .relationship = entityDescription.fields[field]
            else {
                problems.append("\(Self.self): a reference policy is declared for a key path that does not name a relationship")
                continue
            }
            policies[field] = declaration.policy
        }
        return (policies, problems)
    }
}
