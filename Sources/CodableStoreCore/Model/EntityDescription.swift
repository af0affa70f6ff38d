#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The schema of one entity: its fields (attributes and relationships) and its identity.
///
/// Built once per entity type, by the code ``Entity()`` generates or by hand with ``EntityDescriptionBuilder``.
/// Field indexes follow the declaration order and are the indexes the tracking accessors pass around.
/// A description never touches the description of another entity, so that two entities that refer to each
/// other can be described independently; the ``Store`` links them when it opens.
public final class EntityDescription: Sendable {
    /// The entity name: the Swift class name (or the name given at run time), and the table name.
    public let name: String
    /// The Swift class; ``RuntimeObject`` for an entity described at run time (``RuntimeEntityBuilder``).
    public let type: any EntityObject.Type
    /// Whether the entity was described at run time: its objects are ``RuntimeObject``s, and the store finds it by
    /// name rather than by class.
    public var isRuntime: Bool { runtime != nil }
    /// What only an entity described at run time has (nil for a compiled one).
    let runtime: RuntimeParts?
    /// Makes an object from a stored row (the class's `init(row:)`, or a ``RuntimeObject`` of this entity). The row
    /// is consumed, as an initializer takes it: borrowed, it was copied (a retain and a release of each of its
    /// references) for every object made (callgrind, 100k import: 10 M instructions).
    let makeObject: @Sendable (consuming EntityRow) throws -> any EntityObject
    /// All fields, by index.
    public let fields: [FieldDescription]
    /// The attributes, in field order.
    public let attributes: [AttributeDescription]
    /// The relationships, in field order.
    public let relationships: [RelationshipDescription]
    /// The field indexes of the identity attributes; empty when the entity has no identity.
    public let identity: [Int]
    /// ``identity`` as a set.
    let identitySet: FieldSet
    /// ``attributes`` and ``relationships`` without reference counting, for ``forEachAttribute(_:)`` and
    /// ``forEachRelationship(_:)``; the arrays above keep them alive.
    private let borrowedAttributes: [Unmanaged<AttributeDescription>]
    private let borrowedRelationships: [Unmanaged<RelationshipDescription>]
    /// Problems found while building (an identity key path that is not an attribute, too many fields);
    /// reported as a ``StoreError`` when a store opens with this entity.
    public let problems: [String]
    /// A declared index: field indexes, and whether it is UNIQUE.
    public struct IndexDescription: Sendable, Equatable {
        public let fields: [Int]
        public let isUnique: Bool
    }

    /// The declared indexes (the identity's UNIQUE index is not among them).
    public let indexes: [IndexDescription]
    /// Each field's key in JSON, as path components (`["origin", "country"]`); nil for fields that are not
    /// coded (left out of a declared `CodingKeys`).
    public let codingKeyPaths: [[String]?]
    private let fieldIndexByKeyPath: KeyPathTable
    /// Declared inverses: a relationship's field index, and the key path of its inverse in the destination
    /// (resolved when a store links the entities).
    let declaredInverses: [DeclaredInverse]
    /// The delete rule of each relationship that declares one (``DeleteRule``), by field index; the others nullify.
    public let deleteRules: [Int: RelationshipDeleteRule]

    struct DeclaredInverse: @unchecked Sendable {
        // @unchecked: key paths are immutable once formed; `AnyKeyPath` does not declare Sendable.
        let field: Int
        /// The inverse in the destination: a key path of a compiled entity, or a field name (run time).
        let inverse: Inverse
        enum Inverse {
            case keyPath(AnyKeyPath, destination: any EntityObject.Type)
            case name(String)
        }
    }

    /// The parts of an entity described at run time that a compiled one keeps in its class.
    struct RuntimeParts: Sendable {
        /// Unknown-reference policies by relationship field (a compiled entity declares them with
        /// ``EntityReferencePolicies``).
        let referencePolicies: [Int: StoreDecoder.UnknownReferencePolicy]
        /// Per relationship slot of a ``RuntimeObject`` of the entity (relationships in field order): whether it is
        /// to-many.
        let linkIsToMany: [Bool]
    }

    init(
        name: String,
        type: any EntityObject.Type,
        fields: [FieldDescription],
        identity: [Int],
        keyPaths: [AnyKeyPath: Int],
        codingKeyPaths: [[String]?],
        indexes: [IndexDescription] = [],
        declaredInverses: [DeclaredInverse] = [],
        deleteRules: [Int: RelationshipDeleteRule] = [:],
        problems: [String],
        runtime: RuntimeParts? = nil,
        makeObject: @escaping @Sendable (consuming EntityRow) throws -> any EntityObject
    ) {
        self.runtime = runtime
        self.makeObject = makeObject
        self.indexes = indexes
        self.deleteRules = deleteRules
        self.declaredInverses = declaredInverses
        self.codingKeyPaths = codingKeyPaths
        self.name = name
        self.type = type
        self.fields = fields
        self.attributes = fields.compactMap { if case .attribute(let a) = $0 { a } else { nil } }
        self.relationships = fields.compactMap { if case .relationship(let r) = $0 { r } else { nil } }
        self.borrowedAttributes = attributes.map { Unmanaged.passUnretained($0) }
        self.borrowedRelationships = relationships.map { Unmanaged.passUnretained($0) }
        self.identity = identity
        var identitySet = FieldSet()
        for field in identity where field < FieldSet.capacity { identitySet.insert(field) }
        self.identitySet = identitySet
        self.problems = problems
        self.fieldIndexByKeyPath = KeyPathTable(table: keyPaths)
    }

    /// Calls `body` with each attribute in field order, borrowed: a `for` loop over ``attributes`` retains and
    /// releases each element, two atomic operations an attribute of every object a decode reads or writes (an
    /// index loop, or one over `withUnsafeBufferPointer`, retains just the same). With the model's other borrowed
    /// loops (``Schema``'s `withMapping`, `forEachRelationship`, `withRelationship`, the insert binders), about
    /// 110 M instructions of the 100k import's decoding thread (3%, callgrind). `body` must not keep the attribute
    /// beyond the call.
    @inline(__always)
    func forEachAttribute(_ body: (AttributeDescription) throws -> Void) rethrows {
        for attribute in borrowedAttributes { try attribute._withUnsafeGuaranteedRef(body) }
    }

    /// ``forEachAttribute(_:)`` for ``relationships``.
    @inline(__always)
    func forEachRelationship(_ body: (RelationshipDescription) throws -> Void) rethrows {
        for relationship in borrowedRelationships { try relationship._withUnsafeGuaranteedRef(body) }
    }

    /// The field a key path of the entity names (`\Person.name`), if it names one.
    public func fieldIndex(for keyPath: AnyKeyPath) -> Int? {
        fieldIndexByKeyPath.table[keyPath]
    }

    /// The field with this name.
    public func field(named name: String) -> FieldDescription? {
        fields.first { $0.name == name }
    }

    /// The names of the identity attributes.
    public var identityNames: [String] { identity.map { fields[$0].name } }
}

// Key paths are immutable values once formed; `AnyKeyPath` just does not declare Sendable.
private struct KeyPathTable: @unchecked Sendable {
    let table: [AnyKeyPath: Int]
}

/// One field of an entity.
public enum FieldDescription: Sendable {
    case attribute(AttributeDescription)
    case relationship(RelationshipDescription)

    public var name: String {
        switch self {
        case .attribute(let attribute): attribute.name
        case .relationship(let relationship): relationship.name
        }
    }

    public var index: Int {
        switch self {
        case .attribute(let attribute): attribute.index
        case .relationship(let relationship): relationship.index
        }
    }
}

/// An attribute: a value stored in one column.
public final class AttributeDescription: Sendable {
    public let name: String
    /// The field index.
    public let index: Int
    public let type: AttributeType
    public let isOptional: Bool
    /// The declared default value, as stored. It becomes the column's DEFAULT.
    public let defaultValue: DatabaseValue?
    let valueType: any AttributeValue.Type
    let readValue: @Sendable (AnyObject) -> DatabaseValue
    let writeValue: @Sendable (AnyObject, DatabaseValue) throws(AttributeValueError) -> Void
    /// Decodes the attribute from a decoder positioned on its JSON value, as stored.
    let decodeDatabaseValue: @Sendable (any Decoder) throws -> DatabaseValue
    /// Decodes the attribute from a decoder positioned on its JSON value and assigns it to the object,
    /// marking the field changed only if the value differs.
    let decodeAndAssign: @Sendable (AnyObject, any Decoder) throws -> Void
    /// Encodes the object's value of the attribute into an encoder's single value.
    let encodeValue: @Sendable (AnyObject, any Encoder) throws -> Void
    /// The common types the decoder reads straight from the JSON, without going through `Decoder`.
    let fastKind: FastKind
    /// A string attribute that takes a JSON number as its text (`42` is `"42"`): an entity described at run time
    /// whose ids are numbers in some records and strings in others.
    let readsNumbersAsText: Bool

    @usableFromInline enum FastKind: UInt8, Sendable {
        case int, double, string, bool, date, other
        /// Dates in one format whatever the decoder's strategy (attributes described at run time). After `other`:
        /// one comparison tells the kinds the common switch does not read (``isOtherOrFixedFormatDate``).
        case iso8601Date, secondsDate, millisecondsDate

        @inline(__always) var isOtherOrFixedFormatDate: Bool { rawValue >= FastKind.other.rawValue }
    }

    private static func fastKind(of type: any AttributeValue.Type) -> FastKind {
        switch type {
        case is Int.Type, is Int?.Type: .int
        case is Double.Type, is Double?.Type: .double
        case is String.Type, is String?.Type: .string
        case is Bool.Type, is Bool?.Type: .bool
        case is Date.Type, is Date?.Type: .date
        default: .other
        }
    }

    @usableFromInline
    init(
        name: String,
        index: Int,
        valueType: any AttributeValue.Type,
        defaultValue: DatabaseValue?,
        readValue: @escaping @Sendable (AnyObject) -> DatabaseValue,
        writeValue: @escaping @Sendable (AnyObject, DatabaseValue) throws(AttributeValueError) -> Void,
        decodeDatabaseValue: @escaping @Sendable (any Decoder) throws -> DatabaseValue,
        decodeAndAssign: @escaping @Sendable (AnyObject, any Decoder) throws -> Void,
        encodeValue: @escaping @Sendable (AnyObject, any Encoder) throws -> Void,
        fastKind: FastKind? = nil,
        readsNumbersAsText: Bool = false
    ) {
        self.readsNumbersAsText = readsNumbersAsText
        self.name = name
        self.index = index
        self.type = valueType.attributeType
        self.isOptional = valueType.isOptional
        self.defaultValue = defaultValue
        self.valueType = valueType
        self.fastKind = fastKind ?? Self.fastKind(of: valueType)
        self.readValue = readValue
        self.writeValue = writeValue
        self.decodeDatabaseValue = decodeDatabaseValue
        self.decodeAndAssign = decodeAndAssign
        self.encodeValue = encodeValue
    }

    /// The same attribute, taking a JSON number as its text (a `String` identity declared with `numbersAsText`).
    func readingNumbersAsText() -> AttributeDescription {
        AttributeDescription(
            name: name, index: index, valueType: valueType, defaultValue: defaultValue, readValue: readValue,
            writeValue: writeValue, decodeDatabaseValue: decodeDatabaseValue, decodeAndAssign: decodeAndAssign,
            encodeValue: encodeValue, fastKind: fastKind, readsNumbersAsText: true)
    }

    /// The typed accessors become type-erased closures here. Inlinable, so that the closures are compiled
    /// (specialized) in the module that declares the entity: generic closures run an order of magnitude
    /// slower, instantiating metadata and calling through witness tables on every use.
    @inlinable
    convenience init<Root: EntityObject, V: AttributeValue>(
        name: String,
        index: Int,
        _: V.Type,
        defaultValue: V?,
        get: @escaping @Sendable (Root) -> V,
        set: @escaping @Sendable (Root, V) -> Void
    ) {
        self.init(
            name: name,
            index: index,
            valueType: V.self,
            defaultValue: defaultValue?.databaseValue,
            readValue: { object in get(unsafeDowncast(object, to: Root.self)).databaseValue },
            writeValue: { object, value throws(AttributeValueError) in
                set(unsafeDowncast(object, to: Root.self), try V(databaseValue: value))
            },
            decodeDatabaseValue: { decoder in try V.decodeAttribute(from: decoder).databaseValue },
            decodeAndAssign: { object, decoder in
                let root = unsafeDowncast(object, to: Root.self)
                let value = try V.decodeAttribute(from: decoder)
                let old = get(root)
                if old != value {
                    set(root, value)
                    root.entityState.didChange(root, index, from: old.databaseValue)
                }
            },
            encodeValue: { object, encoder in try get(unsafeDowncast(object, to: Root.self)).encodeAttribute(to: encoder) })
    }

    /// How the decoder reads the attribute beyond its type, for fingerprints of what decoding means (an import's
    /// record digests): a date's fixed format, numbers taken as text. Empty for an attribute of a class.
    package var decodingVariant: String {
        var variant = ""
        switch fastKind {
        case .iso8601Date: variant = "iso8601"
        case .secondsDate: variant = "seconds"
        case .millisecondsDate: variant = "milliseconds"
        default: break
        }
        if readsNumbersAsText { variant += " numbers-as-text" }
        return variant
    }

    /// The current value of this attribute of `object`, as stored.
    public func value(of object: AnyObject) -> DatabaseValue { readValue(object) }
}

/// A relationship to another entity: to-one (`Country?`), ordered to-many (`[Tag]`) or unordered to-many
/// (`Set<Tag>`).
public final class RelationshipDescription: Sendable {
    public enum Kind: String, Sendable, Codable {
        case toOne
        case toManyOrdered
        case toManyUnordered
    }

    public let name: String
    /// The field index.
    public let index: Int
    public let kind: Kind
    /// The destination entity class (``RuntimeObject`` for a relationship of an entity described at run time).
    public let destination: any EntityObject.Type
    /// The destination entity's name when it was described at run time (nil: ``destination`` says which).
    public let destinationName: String?

    public var isToMany: Bool { kind != .toOne }
    public var isOrdered: Bool { kind == .toManyOrdered }

    // Raw storage access: no tracking, no inverse maintenance.
    let getOne: @Sendable (AnyObject) -> (any EntityObject)?
    let setOne: @Sendable (AnyObject, AnyObject?) -> Void
    let getMany: @Sendable (AnyObject) -> [any EntityObject]
    let setMany: @Sendable (AnyObject, [any EntityObject]) -> Void
    /// Adds a member unless it is there already; returns whether it was added.
    let insertMember: @Sendable (AnyObject, AnyObject) -> Bool
    let removeMember: @Sendable (AnyObject, AnyObject) -> Void
    let containsMember: @Sendable (AnyObject, AnyObject) -> Bool
    /// Whether the relationship holds nothing (nil, or no members).
    let isEmpty: @Sendable (AnyObject) -> Bool

    @usableFromInline
    init(
        name: String,
        index: Int,
        kind: Kind,
        destination: any EntityObject.Type,
        destinationName: String? = nil,
        getOne: @escaping @Sendable (AnyObject) -> (any EntityObject)?,
        setOne: @escaping @Sendable (AnyObject, AnyObject?) -> Void,
        getMany: @escaping @Sendable (AnyObject) -> [any EntityObject],
        setMany: @escaping @Sendable (AnyObject, [any EntityObject]) -> Void,
        insertMember: @escaping @Sendable (AnyObject, AnyObject) -> Bool,
        removeMember: @escaping @Sendable (AnyObject, AnyObject) -> Void,
        containsMember: @escaping @Sendable (AnyObject, AnyObject) -> Bool,
        isEmpty: @escaping @Sendable (AnyObject) -> Bool
    ) {
        self.name = name
        self.index = index
        self.kind = kind
        self.destination = destination
        self.destinationName = destinationName
        self.getOne = getOne
        self.setOne = setOne
        self.getMany = getMany
        self.setMany = setMany
        self.insertMember = insertMember
        self.removeMember = removeMember
        self.containsMember = containsMember
        self.isEmpty = isEmpty
    }

    // The typed accessors become type-erased closures in these inlinable initializers, compiled in the module
    // that declares the entity (see AttributeDescription's).

    @inlinable
    convenience init<Root: EntityObject, D: EntityObject>(
        toOne name: String,
        index: Int,
        _: D.Type,
        get: @escaping @Sendable (Root) -> D?,
        set: @escaping @Sendable (Root, D?) -> Void
    ) {
        self.init(
            name: name, index: index, kind: .toOne, destination: D.self,
            getOne: { get(unsafeDowncast($0, to: Root.self)) },
            setOne: { set(unsafeDowncast($0, to: Root.self), $1.map { unsafeDowncast($0, to: D.self) }) },
            getMany: { object in get(unsafeDowncast(object, to: Root.self)).map { [$0] } ?? [] },
            setMany: { set(unsafeDowncast($0, to: Root.self), $1.first.map { unsafeDowncast($0, to: D.self) }) },
            insertMember: { owner, member in
                let root = unsafeDowncast(owner, to: Root.self)
                if get(root) === member { return false }
                set(root, unsafeDowncast(member, to: D.self))
                return true
            },
            removeMember: { owner, member in
                let root = unsafeDowncast(owner, to: Root.self)
                if get(root) === member { set(root, nil) }
            },
            containsMember: { get(unsafeDowncast($0, to: Root.self)) === $1 },
            isEmpty: { get(unsafeDowncast($0, to: Root.self)) == nil })
    }

    @inlinable
    convenience init<Root: EntityObject, D: EntityObject>(
        ordered name: String,
        index: Int,
        _: D.Type,
        get: @escaping @Sendable (Root) -> [D],
        set: @escaping @Sendable (Root, [D]) -> Void
    ) {
        self.init(
            name: name, index: index, kind: .toManyOrdered, destination: D.self,
            getOne: { get(unsafeDowncast($0, to: Root.self)).first },
            setOne: { set(unsafeDowncast($0, to: Root.self), $1.map { [unsafeDowncast($0, to: D.self)] } ?? []) },
            getMany: { get(unsafeDowncast($0, to: Root.self)).map { $0 } },
            setMany: { set(unsafeDowncast($0, to: Root.self), $1.map { unsafeDowncast($0, to: D.self) }) },
            insertMember: { owner, member in
                let root = unsafeDowncast(owner, to: Root.self)
                // Take the array out of the object first so that appending does not copy it.
                var members = get(root)
                if members.contains(where: { $0 === member }) { return false }
                set(root, [])
                members.append(unsafeDowncast(member, to: D.self))
                set(root, members)
                return true
            },
            removeMember: { owner, member in
                let root = unsafeDowncast(owner, to: Root.self)
                var members = get(root)
                guard let position = members.firstIndex(where: { $0 === member }) else { return }
                set(root, [])
                members.remove(at: position)
                set(root, members)
            },
            containsMember: { owner, member in
                get(unsafeDowncast(owner, to: Root.self)).contains { $0 === member }
            },
            isEmpty: { get(unsafeDowncast($0, to: Root.self)).isEmpty })
    }

    @inlinable
    convenience init<Root: EntityObject, D: EntityObject>(
        unordered name: String,
        index: Int,
        _: D.Type,
        get: @escaping @Sendable (Root) -> Set<D>,
        set: @escaping @Sendable (Root, Set<D>) -> Void
    ) {
        self.init(
            name: name, index: index, kind: .toManyUnordered, destination: D.self,
            getOne: { get(unsafeDowncast($0, to: Root.self)).first },
            setOne: { set(unsafeDowncast($0, to: Root.self), $1.map { [unsafeDowncast($0, to: D.self)] } ?? []) },
            getMany: { get(unsafeDowncast($0, to: Root.self)).map { $0 } },
            setMany: { owner, members in
                var typed = Set<D>(minimumCapacity: members.count)
                for member in members { typed.insert(unsafeDowncast(member, to: D.self)) }
                set(unsafeDowncast(owner, to: Root.self), typed)
            },
            insertMember: { owner, member in
                let root = unsafeDowncast(owner, to: Root.self)
                var members = get(root)
                set(root, [])
                let inserted = members.insert(unsafeDowncast(member, to: D.self)).inserted
                set(root, members)
                return inserted
            },
            removeMember: { owner, member in
                let root = unsafeDowncast(owner, to: Root.self)
                var members = get(root)
                guard members.contains(unsafeDowncast(member, to: D.self)) else { return }
                set(root, [])
                members.remove(unsafeDowncast(member, to: D.self))
                set(root, members)
            },
            containsMember: { owner, member in
                get(unsafeDowncast(owner, to: Root.self)).contains(unsafeDowncast(member, to: D.self))
            },
            isEmpty: { get(unsafeDowncast($0, to: Root.self)).isEmpty })
    }
}

/// Builds an ``EntityDescription`` field by field, in declaration order.
///
/// The overloads of `field` pick the kind of field from its type: an ``AttributeValue`` is an attribute,
/// an optional entity a to-one relationship, an array of entities an ordered to-many relationship and a set
/// of entities an unordered one. `get` and `set` access raw storage, without tracking.
public struct EntityDescriptionBuilder<Root: EntityObject> {
    private let name: String
    private var fields: [FieldDescription] = []
    private var keyPaths: [AnyKeyPath: Int] = [:]
    private var problems: [String] = []
    private var codingKeyPaths: [String: [String]]?

    public init(name: String) {
        self.name = name
    }

    @usableFromInline
    mutating func add(_ field: FieldDescription, keyPath: AnyKeyPath) {
        if fields.contains(where: { $0.name == field.name }) {
            problems.append("\(name).\(field.name) is declared twice")
        }
        if field.name.hasPrefix("_") {
            problems.append("\(name).\(field.name): field names starting with '_' are reserved for the store")
        }
        keyPaths[keyPath] = fields.count
        fields.append(field)
    }

    @usableFromInline
    var nextFieldIndex: Int { fields.count }

    /// Adds an attribute.
    @inlinable
    public mutating func field<V: AttributeValue>(
        _ name: String,
        _ keyPath: KeyPath<Root, V>,
        as type: V.Type,
        default defaultValue: (@Sendable () -> V)? = nil,
        get: @escaping @Sendable (Root) -> V,
        set: @escaping @Sendable (Root, V) -> Void
    ) {
        let attribute = AttributeDescription(
            name: name, index: nextFieldIndex, V.self, defaultValue: defaultValue?(), get: get, set: set)
        add(.attribute(attribute), keyPath: keyPath)
    }

    /// Adds a to-one relationship.
    @inlinable
    public mutating func field<D: EntityObject>(
        _ name: String,
        _ keyPath: KeyPath<Root, D?>,
        as type: D?.Type,
        default defaultValue: (@Sendable () -> D?)? = nil,
        get: @escaping @Sendable (Root) -> D?,
        set: @escaping @Sendable (Root, D?) -> Void
    ) {
        let relationship = RelationshipDescription(toOne: name, index: nextFieldIndex, D.self, get: get, set: set)
        add(.relationship(relationship), keyPath: keyPath)
    }

    /// Adds an ordered to-many relationship.
    @inlinable
    public mutating func field<D: EntityObject>(
        _ name: String,
        _ keyPath: KeyPath<Root, [D]>,
        as type: [D].Type,
        default defaultValue: (@Sendable () -> [D])? = nil,
        get: @escaping @Sendable (Root) -> [D],
        set: @escaping @Sendable (Root, [D]) -> Void
    ) {
        let relationship = RelationshipDescription(ordered: name, index: nextFieldIndex, D.self, get: get, set: set)
        add(.relationship(relationship), keyPath: keyPath)
    }

    /// Adds an unordered to-many relationship.
    @inlinable
    public mutating func field<D: EntityObject>(
        _ name: String,
        _ keyPath: KeyPath<Root, Set<D>>,
        as type: Set<D>.Type,
        default defaultValue: (@Sendable () -> Set<D>)? = nil,
        get: @escaping @Sendable (Root) -> Set<D>,
        set: @escaping @Sendable (Root, Set<D>) -> Void
    ) {
        let relationship = RelationshipDescription(unordered: name, index: nextFieldIndex, D.self, get: get, set: set)
        add(.relationship(relationship), keyPath: keyPath)
    }

    /// Adds an optional ordered to-many relationship (`[Tag]?`): `nil` reads as no members, and a loaded or assigned
    /// relationship is an array (the store has no `nil` list to keep).
    @inlinable
    public mutating func field<D: EntityObject>(
        _ name: String,
        _ keyPath: KeyPath<Root, [D]?>,
        as type: [D]?.Type,
        default defaultValue: (@Sendable () -> [D]?)? = nil,
        get: @escaping @Sendable (Root) -> [D]?,
        set: @escaping @Sendable (Root, [D]?) -> Void
    ) {
        let relationship = RelationshipDescription(
            ordered: name, index: nextFieldIndex, D.self, get: { get($0) ?? [] }, set: { set($0, $1) })
        add(.relationship(relationship), keyPath: keyPath)
    }

    /// Adds an optional unordered to-many relationship (`Set<Tag>?`): `nil` reads as no members, and a loaded or
    /// assigned relationship is a set (the store has no `nil` set to keep).
    @inlinable
    public mutating func field<D: EntityObject>(
        _ name: String,
        _ keyPath: KeyPath<Root, Set<D>?>,
        as type: Set<D>?.Type,
        default defaultValue: (@Sendable () -> Set<D>?)? = nil,
        get: @escaping @Sendable (Root) -> Set<D>?,
        set: @escaping @Sendable (Root, Set<D>?) -> Void
    ) {
        let relationship = RelationshipDescription(
            unordered: name, index: nextFieldIndex, D.self, get: { get($0) ?? [] }, set: { set($0, $1) })
        add(.relationship(relationship), keyPath: keyPath)
    }

    mutating func setCodingKeyPaths(_ paths: [String: [String]]) {
        codingKeyPaths = paths
    }

    /// The description, with `identity` resolved to attribute fields.
    public func build(
        identity: Identity<Root>?, indexes: [EntityIndex<Root>] = [], inverses: [Inverse<Root>] = [],
        deleteRules: [DeleteRule<Root>] = []
    ) -> EntityDescription {
        var problems = self.problems
        var rules: [Int: RelationshipDeleteRule] = [:]
        for rule in deleteRules {
            guard let field = keyPaths[rule.keyPath], case .relationship(let relationship) = fields[field] else {
                problems.append("\(name): a delete rule is declared for a key path that does not name a relationship")
                continue
            }
            if rules[field] != nil { problems.append("\(name).\(relationship.name): two delete rules are declared") }
            rules[field] = rule.rule
        }
        var declaredInverses: [EntityDescription.DeclaredInverse] = []
        for inverse in inverses {
            guard let field = keyPaths[inverse.keyPath], case .relationship = fields[field] else {
                problems.append("\(name): an inverse is declared for a key path that does not name a relationship")
                continue
            }
            declaredInverses.append(.init(field: field, inverse: .keyPath(inverse.inverse, destination: inverse.destination)))
        }
        var indexDescriptions: [EntityDescription.IndexDescription] = []
        for index in indexes {
            var named: [Int] = []
            for keyPath in index.keyPaths {
                guard let field = keyPaths[keyPath] else {
                    problems.append("\(name): an index key path does not name a stored field")
                    continue
                }
                named.append(field)
            }
            let fields = EntityDescription.indexableFields(named, of: self.fields, entity: name, problems: &problems)
            if !fields.isEmpty { indexDescriptions.append(.init(fields: fields, isUnique: index.isUnique)) }
        }
        var named: [Int] = []
        for keyPath in identity?.keyPaths ?? [] {
            guard let index = keyPaths[keyPath] else {
                problems.append("\(name): an identity key path does not name a stored field")
                continue
            }
            named.append(index)
        }
        let identityFields = EntityDescription.identityFields(named, of: self.fields, entity: name, problems: &problems)
        var fields = self.fields
        if identity?.readsNumbersAsText == true {
            var textual = false
            for index in identityFields {
                guard case .attribute(let attribute) = fields[index], attribute.fastKind == .string else { continue }
                fields[index] = .attribute(attribute.readingNumbersAsText())
                textual = true
            }
            if !textual { problems.append("\(name): the identity reads numbers as text, but none of its attributes is a String") }
        }
        var keyPathsOfFields: [[String]?] = fields.map { [$0.name] }
        if let codingKeyPaths {
            let names = Set(fields.map(\.name))
            for name in codingKeyPaths.keys where !names.contains(name) {
                problems.append("\(self.name).CodingKeys.\(name) does not name a stored field")
            }
            keyPathsOfFields = fields.map { codingKeyPaths[$0.name] }
        }
        EntityDescription.checkFieldCount(fields, entity: name, problems: &problems)
        return EntityDescription(
            name: name, type: Root.self, fields: fields, identity: identityFields, keyPaths: keyPaths,
            codingKeyPaths: keyPathsOfFields, indexes: indexDescriptions,
            declaredInverses: declaredInverses, deleteRules: rules, problems: problems,
            makeObject: { row in try Root(row: row) })
    }
}

// The checks both builders make (``EntityDescriptionBuilder`` by key paths, ``RuntimeEntityBuilder`` by names) once
// each names field indexes: one wording of each problem, whichever way the entity was described.
extension EntityDescription {
    /// The identity's fields among `named`: the attributes; a relationship, or an optional attribute, is a problem.
    static func identityFields(_ named: [Int], of fields: [FieldDescription], entity: String, problems: inout [String]) -> [Int] {
        var identity: [Int] = []
        for index in named {
            guard case .attribute(let attribute) = fields[index] else {
                problems.append("\(entity).\(fields[index].name): a relationship cannot be part of the identity")
                continue
            }
            if attribute.isOptional { problems.append("\(entity).\(attribute.name): an identity attribute cannot be optional") }
            identity.append(index)
        }
        return identity
    }

    /// The fields of an index among `named`: a to-many relationship is a problem.
    static func indexableFields(_ named: [Int], of fields: [FieldDescription], entity: String, problems: inout [String]) -> [Int] {
        named.filter { index in
            guard case .relationship(let relationship) = fields[index], relationship.isToMany else { return true }
            problems.append("\(entity).\(relationship.name): a to-many relationship cannot be indexed")
            return false
        }
    }

    /// More fields than a ``FieldSet`` holds is a problem.
    static func checkFieldCount(_ fields: [FieldDescription], entity: String, problems: inout [String]) {
        if fields.count > FieldSet.capacity {
            problems.append("\(entity) has \(fields.count) fields; at most \(FieldSet.capacity) are supported")
        }
    }
}
