import Foundation

/// Encodes entities to JSON: the mirror of ``StoreDecoder``.
///
/// ```swift
/// let encoder = StoreEncoder()
/// encoder.outputFormatting = [.sortedKeys]
/// encoder.dateEncodingStrategy = .iso8601
/// let json = try store.read { context in try encoder.encode(try context.fetch(Issue.self)) }
/// ```
///
/// Encoding shape: one JSON object per entity with the fields' coding keys (key path keys are rebuilt as
/// nested objects: `"origin.country"` becomes `{"origin": {"country": …}}`, and a parent whose values are all
/// nil is `null`, never an object of nulls); optional attributes and to-one relationships that are nil are
/// written as `null`, so decoding the output clears them, or left out (``NilEncodingStrategy``); relationships are nested objects or identities
/// (``RelationshipEncodingStrategy``), and the inverse of the relationship being followed is left out (an
/// issue's user does not list the issue again). An object met again while it is being encoded is written as
/// its identity, so cycles end. Decoding what was encoded yields the same store.
public final class StoreEncoder: @unchecked Sendable {
    // @unchecked: options are plain values set before use, like JSONEncoder's.

    /// How relationships are written.
    public enum RelationshipEncodingStrategy: Sendable {
        /// Destinations as nested objects.
        case nestedObjects
        /// Destinations as their identity: a value, or an object of the identity keys for a composite
        /// identity. Destinations without identity are nested.
        case identities
    }

    /// How dates are written.
    public enum DateEncodingStrategy: Sendable {
        /// `Date`'s own encoding: seconds since 2001-01-01.
        case deferredToDate
        /// ISO 8601 in UTC, with fractional seconds (up to microseconds) when the date has them.
        case iso8601
        case secondsSince1970
        case millisecondsSince1970
        case custom(@Sendable (Date, any Encoder) throws -> Void)
    }

    /// How nil values are written.
    public enum NilEncodingStrategy: Sendable {
        /// As `null` (the default): decoding the output into a store that has values clears them. A key-path
        /// parent whose values are all nil is `null` (`"pull_request": null`).
        case null
        /// Left out, like `JSONEncoder` leaves out nil optionals: nil attributes, nil to-one relationships and
        /// key-path parents whose values are all nil. Decoding the output leaves such fields as they are.
        case omit
    }

    public var relationshipEncodingStrategy: RelationshipEncodingStrategy = .nestedObjects
    public var nilEncodingStrategy: NilEncodingStrategy = .null
    public var dateEncodingStrategy: DateEncodingStrategy = .deferredToDate
    public var dataEncodingStrategy: JSONEncoder.DataEncodingStrategy = .base64
    public var keyEncodingStrategy: JSONEncoder.KeyEncodingStrategy = .useDefaultKeys
    public var nonConformingFloatEncodingStrategy: JSONEncoder.NonConformingFloatEncodingStrategy = .throw
    /// `.sortedKeys` for stable output, `.prettyPrinted`, `.withoutEscapingSlashes`.
    public var outputFormatting: JSONEncoder.OutputFormatting = []

    /// Whether the members of unordered to-many relationships are written sorted by identity, not in the set's
    /// order (which changes from run to run): for ``Store/stableExport(of:)``.
    var sortsUnorderedMembers = false

    public init() {}

    /// Encodes one entity.
    public func encode<T: EntityObject>(_ object: T) throws -> Data {
        try makeEncoder().encode(EntityEncodingBox(object: object, via: nil))
    }

    /// Encodes entities as a JSON array.
    public func encode<T: EntityObject>(_ objects: [T]) throws -> Data {
        try makeEncoder().encode(objects.map { EntityEncodingBox(object: $0, via: nil) })
    }

    /// Encodes any `Encodable` value; entities inside it are in ``Many`` collections.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        try makeEncoder().encode(value)
    }

    private func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = outputFormatting
        encoder.dataEncodingStrategy = dataEncodingStrategy
        encoder.keyEncodingStrategy = keyEncodingStrategy
        encoder.nonConformingFloatEncodingStrategy = nonConformingFloatEncodingStrategy
        switch dateEncodingStrategy {
        case .deferredToDate: encoder.dateEncodingStrategy = .deferredToDate
        case .secondsSince1970: encoder.dateEncodingStrategy = .secondsSince1970
        case .millisecondsSince1970: encoder.dateEncodingStrategy = .millisecondsSince1970
        case .custom(let encode): encoder.dateEncodingStrategy = .custom(encode)
        case .iso8601:
            encoder.dateEncodingStrategy = .custom { date, encoder in
                var container = encoder.singleValueContainer()
                try container.encode(ISO8601.string(secondsSince1970: date.timeIntervalSince1970))
            }
        }
        let state = EncodingState(relationships: relationshipEncodingStrategy, nils: nilEncodingStrategy)
        state.sortsUnorderedMembers = sortsUnorderedMembers
        encoder.userInfo[.codableStoreEncoding] = state
        return encoder
    }
}

extension CodingUserInfoKey {
    static let codableStoreEncoding = CodingUserInfoKey(rawValue: "CodableStore.encoding")!
}

/// Options and the stack of objects being encoded, shared by the boxes of one encode call.
final class EncodingState: @unchecked Sendable {
    // @unchecked: one encode call uses it, on one thread.
    let relationships: StoreEncoder.RelationshipEncodingStrategy
    let nils: StoreEncoder.NilEncodingStrategy
    var stack: Set<ObjectIdentifier> = []
    /// See ``StoreEncoder/sortsUnorderedMembers``.
    var sortsUnorderedMembers = false

    init(relationships: StoreEncoder.RelationshipEncodingStrategy, nils: StoreEncoder.NilEncodingStrategy = .null) {
        self.relationships = relationships
        self.nils = nils
    }
}

/// An entity as an `Encodable` value.
struct EntityEncodingBox: Encodable {
    let object: any EntityObject
    /// The relationship this object was reached through: its inverse is left out.
    let via: ResolvedRelationshipReference?

    func encode(to encoder: any Encoder) throws {
        // Opening the existential once, in a generic function, also sidesteps a SIL optimizer crash (CSE of
        // repeated `type(of:)` on the existential) in Swift 6.3.1 release builds.
        try encode(object, to: encoder)
    }

    private func encode<Object: EntityObject>(_ object: Object, to encoder: any Encoder) throws {
        let state = encoder.userInfo[.codableStoreEncoding] as? EncodingState ?? EncodingState(relationships: .nestedObjects)
        guard let context = object.entityState.context else {
            throw EncodingError.invalidValue(
                object,
                EncodingError.Context(
                    codingPath: encoder.codingPath,
                    debugDescription: "\(Object.self) is not held by a context: encode objects inside store.read or store.write"))
        }
        let mapping = try context.model.mapping(of: object)
        let identifier = ObjectIdentifier(object)
        if state.stack.contains(identifier), !mapping.identityColumns.isEmpty {
            try encodeIdentity(to: encoder, mapping)
            return
        }
        state.stack.insert(identifier)
        defer { state.stack.remove(identifier) }
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        try encodeFields(mapping.coding.encodingPlan, into: &container, mapping, context, state)
    }

    private func encodeFields(
        _ plan: [EncodingPlanNode], into container: inout KeyedEncodingContainer<AnyCodingKey>, _ mapping: EntitySchema,
        _ context: Context, _ state: EncodingState
    ) throws {
        for node in plan {
            let key = AnyCodingKey(stringValue: node.key)
            switch node.content {
            case .group(let children):
                if isNil(children, mapping, context) {
                    if state.nils == .null { try container.encodeNil(forKey: key) }
                    continue
                }
                var nested = container.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key)
                try encodeFields(children, into: &nested, mapping, context, state)
            case .field(let index):
                switch mapping.description.fields[index] {
                case .attribute(let attribute):
                    if state.nils == .omit, attribute.isOptional, attribute.value(of: object) == .null { continue }
                    try container.encode(AttributeEncodingBox(object: object, attribute: attribute), forKey: key)
                case .relationship(let description):
                    guard let relationship = mapping.relationships[index] else { continue }
                    if isWayBack(relationship) { continue }
                    let reference = ResolvedRelationshipReference(entity: mapping.index, field: index)
                    let destination = context.model.mappings[relationship.destination]
                    let asIdentity = state.relationships == .identities && !destination.identityColumns.isEmpty
                    if description.isToMany {
                        let members = relationship.description.getMany(object)
                        var loaded = object.entityState.unloadedRelationships.contains(index)
                            ? context.loadToMany(object, relationship) : members
                        if state.sortsUnorderedMembers, !description.isOrdered {
                            loaded = destination.description.identity.isEmpty
                                ? loaded.sorted { $0.entityState.rowID < $1.entityState.rowID }
                                : Context.inIdentityOrder(loaded, destination)
                        }
                        try container.encode(
                            loaded.map { RelationshipEncodingBox(object: $0, via: reference, asIdentity: asIdentity) }, forKey: key)
                    } else if let target = context.resolveToOne(object, relationship) {
                        try container.encode(RelationshipEncodingBox(object: target, via: reference, asIdentity: asIdentity), forKey: key)
                    } else if state.nils == .null {
                        try container.encodeNil(forKey: key)
                    }
                }
            }
        }
    }

    /// Whether the relationship leads back to the object this one was reached from (left out of the output).
    private func isWayBack(_ relationship: ResolvedRelationship) -> Bool {
        guard let via else { return false }
        return via.entity == relationship.destination && via.field == relationship.inverse
    }

    /// Whether every field under a key-path parent is nil (or left out as the way back): the parent is then
    /// `null` or left out, not an object of nulls. A to-many relationship is never nil (it is `[]` when empty).
    private func isNil(_ plan: [EncodingPlanNode], _ mapping: EntitySchema, _ context: Context) -> Bool {
        plan.allSatisfy { node in
            switch node.content {
            case .group(let children):
                return isNil(children, mapping, context)
            case .field(let index):
                switch mapping.description.fields[index] {
                case .attribute(let attribute):
                    return attribute.value(of: object) == .null
                case .relationship(let description):
                    guard let relationship = mapping.relationships[index] else { return true }
                    if isWayBack(relationship) { return true }
                    return !description.isToMany && context.resolveToOne(object, relationship) == nil
                }
            }
        }
    }

    func encodeIdentity(to encoder: any Encoder, _ mapping: EntitySchema) throws {
        let attributes: [AttributeDescription] = mapping.description.identity.compactMap {
            if case .attribute(let attribute) = mapping.description.fields[$0] { attribute } else { nil }
        }
        if attributes.count == 1 {
            try attributes[0].encodeValue(object, encoder)
            return
        }
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        for attribute in attributes {
            let key = mapping.description.codingKeyPaths[attribute.index]?.joined(separator: ".") ?? attribute.name
            try container.encode(AttributeEncodingBox(object: object, attribute: attribute), forKey: AnyCodingKey(stringValue: key))
        }
    }
}

struct ResolvedRelationshipReference {
    let entity: Int
    let field: Int
}

private struct AttributeEncodingBox: Encodable {
    let object: any EntityObject
    let attribute: AttributeDescription
    func encode(to encoder: any Encoder) throws { try attribute.encodeValue(object, encoder) }
}

private struct RelationshipEncodingBox: Encodable {
    let object: any EntityObject
    let via: ResolvedRelationshipReference
    let asIdentity: Bool

    func encode(to encoder: any Encoder) throws {
        let box = EntityEncodingBox(object: object, via: via)
        if asIdentity, let context = object.entityState.context {
            try box.encodeIdentity(to: encoder, try context.model.mapping(of: object))
        } else {
            try box.encode(to: encoder)
        }
    }
}

/// The keys of an entity's fields as a tree: key path keys share their leading components.
struct EncodingPlanNode: Sendable {
    enum Content: Sendable {
        case field(Int)
        case group([EncodingPlanNode])
    }
    let key: String
    var content: Content

    static func plan(for description: EntityDescription) -> [EncodingPlanNode] {
        var roots: [EncodingPlanNode] = []
        for (index, path) in description.codingKeyPaths.enumerated() {
            guard let path, !path.isEmpty else { continue }
            insert(index, path[...], into: &roots)
        }
        return roots
    }

    private static func insert(_ field: Int, _ path: ArraySlice<String>, into nodes: inout [EncodingPlanNode]) {
        let key = path.first!
        if path.count == 1 {
            nodes.append(EncodingPlanNode(key: key, content: .field(field)))
            return
        }
        if let position = nodes.firstIndex(where: { $0.key == key }), case .group(var children) = nodes[position].content {
            insert(field, path.dropFirst(), into: &children)
            nodes[position].content = .group(children)
        } else {
            var children: [EncodingPlanNode] = []
            insert(field, path.dropFirst(), into: &children)
            nodes.append(EncodingPlanNode(key: key, content: .group(children)))
        }
    }
}
