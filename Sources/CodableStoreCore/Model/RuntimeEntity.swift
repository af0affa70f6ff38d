#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The type of an attribute described at run time (``RuntimeEntityBuilder``).
public enum RuntimeAttributeType: Sendable, Equatable, Hashable {
    case integer
    case double
    case bool
    case string
    /// A date, in JSON in one format whatever the decoder's `dateDecodingStrategy`; stored as seconds since 1970.
    case date(RuntimeDateFormat)
    /// An exact decimal number, stored as text.
    case decimal
    case uuid
    case url
    /// Bytes (Base64 in JSON, or as the decoder's `dataDecodingStrategy` says).
    case data
    /// Any JSON value, stored as its JSON text (object keys sorted, numbers as written).
    case json
}

/// How a date attribute described at run time is written in JSON.
public enum RuntimeDateFormat: String, Sendable, Equatable, Hashable, CaseIterable {
    /// `2015-06-05T09:52:26Z`, with or without fractional seconds and with any offset.
    case iso8601
    /// Seconds since 1970, a number.
    case seconds
    /// Milliseconds since 1970, a number.
    case milliseconds
}

/// Describes an entity at run time, field by field: the same ``EntityDescription`` that ``Entity()`` makes for a
/// class, so the context, the decoder, the encoder, the importer and every backend run it through the same code. Its
/// objects are ``RuntimeObject``s, read and written by field name.
///
/// ```swift
/// var user = RuntimeEntityBuilder(name: "User")
/// user.attribute("id", .integer)
/// user.attribute("login", .string)
/// var issue = RuntimeEntityBuilder(name: "Issue")
/// issue.attribute("id", .integer)
/// issue.attribute("title", .string)
/// issue.attribute("createdAt", .date(.iso8601), key: ["created_at"])
/// issue.relationship("user", to: "User")
/// issue.relationship("assignees", to: "User", kind: .toManyOrdered, inverse: nil)
/// let store = try Store(path: path, entities: [], runtimeEntities: [user.build(identity: ["id"]), issue.build(identity: ["id"])])
/// ```
/// Relationships name their destination entity; the store resolves the names when it opens, and reports a name it
/// does not know, with the rest of what is wrong with the model, as ``StoreError/Code/invalidModel``.
public struct RuntimeEntityBuilder: Sendable {
    public let name: String
    private var fields: [FieldDescription] = []
    private var keys: [[String]?] = []
    private var problems: [String] = []
    private var inverses: [(field: Int, name: String)] = []
    private var rules: [Int: RelationshipDeleteRule] = [:]
    private var policies: [Int: StoreDecoder.UnknownReferencePolicy] = [:]
    private var indexes: [(names: [String], unique: Bool)] = []
    private var linkIsToMany: [Bool] = []

    public init(name: String) {
        self.name = name
    }

    private mutating func add(_ field: FieldDescription, key: [String]?) {
        if fields.contains(where: { $0.name == field.name }) {
            problems.append("\(name).\(field.name) is declared twice")
        }
        if field.name.hasPrefix("_") {
            problems.append("\(name).\(field.name): field names starting with '_' are reserved for the store")
        }
        if let key, key.isEmpty || key.contains(where: \.isEmpty) {
            problems.append("\(name).\(field.name): its JSON key has an empty component")
        }
        fields.append(field)
        keys.append(key ?? [field.name])
    }

    /// Adds an attribute. `key` is where the value is in a record, as path components (`["origin", "country"]`;
    /// the field's name by default). `defaultValue` is what a record that lacks the attribute gets (and the
    /// column's DEFAULT). With `numbersAsText`, a string attribute takes a JSON number as its digits (ids that are
    /// numbers in some records and strings in others).
    public mutating func attribute(
        _ name: String, _ type: RuntimeAttributeType, optional: Bool = false, key: [String]? = nil,
        default defaultValue: DatabaseValue? = nil, numbersAsText: Bool = false
    ) {
        let attribute = RuntimeAttributes.make(
            name: name, index: fields.count, type: type, optional: optional, defaultValue: defaultValue,
            numbersAsText: numbersAsText && type == .string)
        if let defaultValue, defaultValue != .null {
            do throws(AttributeValueError) {
                try attribute.valueType.checkStored(defaultValue)
            } catch {
                problems.append("\(self.name).\(name): its default value does not fit: \(error)")
            }
        }
        add(.attribute(attribute), key: key)
    }

    /// Adds a relationship to the entity named `destination`: to-one, or to-many (`.toManyOrdered` keeps the JSON
    /// array's order). `inverse` names the destination's relationship that is this one's inverse (nil: the store
    /// pairs two relationships when each is the only one between the two entities). `unknownReferences` is what a
    /// bare id of an object that is not stored becomes (nil: the decoder's policy).
    public mutating func relationship(
        _ name: String, to destination: String, kind: RelationshipDescription.Kind = .toOne, key: [String]? = nil,
        inverse: String? = nil, deleteRule: RelationshipDeleteRule = .nullify,
        unknownReferences: StoreDecoder.UnknownReferencePolicy? = nil
    ) {
        let index = fields.count
        let relationship: RelationshipDescription
        let slot = linkIsToMany.count
        if kind == .toOne {
            relationship = RuntimeRelationships.toOne(name: name, index: index, destination: destination, slot: slot)
        } else {
            relationship = RuntimeRelationships.toMany(
                name: name, index: index, destination: destination, ordered: kind == .toManyOrdered, slot: slot)
        }
        linkIsToMany.append(kind != .toOne)
        if let inverse { inverses.append((index, inverse)) }
        if deleteRule != .nullify { rules[index] = deleteRule }
        if let unknownReferences { policies[index] = unknownReferences }
        add(.relationship(relationship), key: key)
    }

    /// Adds an index over attributes or to-one relationships, by name.
    public mutating func index(_ fields: [String], unique: Bool = false) {
        indexes.append((fields, unique))
    }

    /// The description, identified by the attributes named in `identity` (none: every record inserts an object).
    public func build(identity: [String] = []) -> EntityDescription {
        var problems = self.problems
        var named: [Int] = []
        for name in identity {
            guard let field = fields.firstIndex(where: { $0.name == name }) else {
                problems.append("\(self.name): the identity names \(name), which is not one of its attributes")
                continue
            }
            named.append(field)
        }
        let identityFields = EntityDescription.identityFields(named, of: fields, entity: name, problems: &problems)
        var indexDescriptions: [EntityDescription.IndexDescription] = []
        for index in indexes {
            var named: [Int] = []
            for name in index.names {
                guard let field = fields.firstIndex(where: { $0.name == name }) else {
                    problems.append("\(self.name): an index names \(name), which is not one of its fields")
                    continue
                }
                named.append(field)
            }
            let indexFields = EntityDescription.indexableFields(named, of: fields, entity: name, problems: &problems)
            if !indexFields.isEmpty { indexDescriptions.append(.init(fields: indexFields, isUnique: index.unique)) }
        }
        EntityDescription.checkFieldCount(fields, entity: name, problems: &problems)
        return EntityDescription(
            name: name, type: RuntimeObject.self, fields: fields, identity: identityFields, keyPaths: [:],
            codingKeyPaths: keys, indexes: indexDescriptions,
            declaredInverses: inverses.map { .init(field: $0.field, inverse: .name($0.name)) }, deleteRules: rules,
            problems: problems,
            runtime: .init(referencePolicies: policies, linkIsToMany: linkIsToMany),
            makeObject: { row in try RuntimeObject(row: row) })
    }
}

/// An object of an entity described at run time (``RuntimeEntityBuilder``): tracked by its context like any entity,
/// its fields read and written by name.
///
/// ```swift
/// let issue = try context.fetch(entity: "Issue", where: .field("state") == "open").first!
/// issue["title"]                                   // .text("Crash on launch")
/// let number = try issue.value("number", as: Int.self)
/// issue["title"] = .text("Crash on launch (iOS 18)")   // tracked: saved by the next save()
/// try issue.object("user")?["login"]               // a to-one relationship, loaded on first access
/// try issue.objects("labels").count                // a to-many relationship
/// let snapshot = issue.snapshot()                  // Sendable values, for another thread
/// ```
/// Assigning a value of the wrong type, or to a name that is not a field, stops the program (as a wrong type does
/// in Swift); ``setValue(_:for:)-(DatabaseValue,_)`` throws instead.
public final class RuntimeObject: EntityObject, CustomStringConvertible {
    public let entityState = EntityState()
    /// The object's entity.
    public let entity: EntityDescription
    // The two stored properties opt out of run-time exclusivity checks, as `EntityState`'s do: the decoder writes
    // every value through them, on the holding context's thread only. With the checks, an import through a model
    // file spent 190 M instructions of its decoding thread on them (100k reference records, callgrind: +5% of the
    // compiled model's whole decoding thread).

    /// Attribute values by field index (relationship positions hold `.null`).
    @exclusivity(unchecked) var values: [DatabaseValue]
    /// The relationships, one slot per relationship in field order; empty (no allocation) until one is set: most
    /// objects an import keeps (users, labels) never hold a member in memory.
    @exclusivity(unchecked) var links: [RuntimeLink] = []

    /// A new object of `entity`: attributes at their default values (or null), relationships empty. Insert it into a
    /// context to store it.
    public init(entity: EntityDescription) {
        precondition(entity.runtime != nil, "RuntimeObject(entity:) needs an entity described at run time (\(entity.name) is a class)")
        self.entity = entity
        values = Array(repeating: .null, count: entity.fields.count)
        for attribute in entity.attributes { values[attribute.index] = attribute.defaultValue ?? .null }
    }

    public init(row: EntityRow) throws {
        let entity = row.mapping.description
        self.entity = entity
        if row.valuesAreDecoded {
            // Values the decoder made for this object, by field index, already converted to the attributes' types
            // (the decoder gives an entity described at run time an array of its own: see `createEntity`).
            values = row.values
            return
        }
        values = Array(repeating: .null, count: entity.fields.count)
        for attribute in entity.attributes {
            let value: DatabaseValue
            if let statement = row.statement {
                value = statement.value(at: row.column(of: attribute.index))
            } else if let stored = row.row {
                value = stored[stored.startIndex + Int(row.column(of: attribute.index))]
            } else {
                value = row.values[attribute.index]
            }
            do throws(AttributeValueError) {
                try attribute.writeValue(self, value)
            } catch {
                throw row.mismatch(attribute.index, error)
            }
        }
    }

    /// The relationship slot `slot`, made with every other slot on first use.
    @inline(__always)
    func link(_ slot: Int) -> RuntimeLink? { links.isEmpty ? nil : links[slot] }

    @inline(__always)
    func setLink(_ slot: Int, _ link: RuntimeLink) {
        if links.isEmpty { links = entity.runtime!.linkIsToMany.map { $0 ? .many(RuntimeMembers()) : .one(nil) } }
        links[slot] = link
    }

    /// The to-one destination in `slot`.
    @inline(__always)
    func toOne(_ slot: Int) -> (any EntityObject)? {
        if case .one(let object)? = link(slot) { return object }
        return nil
    }

    /// The to-many members in `slot`.
    @inline(__always)
    func toMany(_ slot: Int) -> RuntimeMembers {
        if case .many(let members)? = link(slot) { return members }
        return RuntimeMembers()
    }

    /// Changes the to-many members in `slot` in place (no copy of the members).
    @inline(__always)
    func modifyMembers<R>(_ slot: Int, _ body: (inout RuntimeMembers) -> R) -> R {
        if links.isEmpty { setLink(slot, .many(RuntimeMembers())) }
        guard case .many(var members) = links[slot] else { preconditionFailure("relationship slot \(slot) is not to-many") }
        links[slot] = .one(nil)  // the array's slot no longer holds the members: `members` is unique
        defer { links[slot] = .many(members) }
        return body(&members)
    }

    /// Not an entity: entities described at run time each have their own ``EntityDescription``, which the store is
    /// given (`Store(path:entities:runtimeEntities:options:)`). A store given this class refuses it.
    public static let entityDescription: EntityDescription = EntityDescription(
        name: "RuntimeObject", type: RuntimeObject.self, fields: [], identity: [], keyPaths: [:], codingKeyPaths: [],
        problems: [
            "RuntimeObject is the class of every entity described at run time: give the store their descriptions (runtimeEntities:), not this class"
        ],
        makeObject: { row in try RuntimeObject(row: row) })

    @inline(__always)
    static func of(_ object: AnyObject) -> RuntimeObject { unsafeDowncast(object, to: RuntimeObject.self) }

    // MARK: Fields by name

    private func field(_ name: String) throws(StoreError) -> FieldDescription {
        guard let field = entity.field(named: name) else {
            throw StoreError(
                .invalidQuery,
                "\(entity.name) has no field named \(name); its fields are \(entity.fields.map(\.name).joined(separator: ", "))",
                entity: entity.name, field: name)
        }
        return field
    }

    private func attribute(_ name: String) throws(StoreError) -> AttributeDescription {
        guard case .attribute(let attribute) = try field(name) else {
            throw StoreError(.invalidQuery, "\(entity.name).\(name) is a relationship, not an attribute", entity: entity.name, field: name)
        }
        return attribute
    }

    private func relationship(_ name: String, toMany: Bool) throws(StoreError) -> RelationshipDescription {
        guard case .relationship(let relationship) = try field(name) else {
            throw StoreError(.invalidQuery, "\(entity.name).\(name) is an attribute, not a relationship", entity: entity.name, field: name)
        }
        if relationship.isToMany != toMany {
            throw StoreError(
                .invalidQuery, "\(entity.name).\(name) is a \(relationship.isToMany ? "to-many" : "to-one") relationship",
                entity: entity.name, field: name)
        }
        return relationship
    }

    /// An attribute's value as stored, by name: nil when the entity has no attribute of that name. Assigning stops
    /// the program on an unknown name or a value of the wrong type (``setValue(_:for:)-(DatabaseValue,_)`` throws instead).
    public subscript(_ name: String) -> DatabaseValue? {
        get {
            guard let field = entity.field(named: name), case .attribute = field else { return nil }
            return values[field.index]
        }
        set {
            do {
                try setValue(newValue ?? .null, for: name)
            } catch {
                preconditionFailure("\(error)")
            }
        }
    }

    /// An attribute's value as a Swift type (`Int`, `String`, `Date`, `String?`…).
    ///
    /// - Throws: ``StoreError`` when the name is not an attribute, or its value does not fit `type`.
    public func value<V: AttributeValue>(_ name: String, as type: V.Type = V.self) throws -> V {
        let attribute = try attribute(name)
        do throws(AttributeValueError) {
            return try V(databaseValue: values[attribute.index])
        } catch {
            throw StoreError.valueMismatch(entity: entity.name, field: name, error)
        }
    }

    /// Assigns an attribute, tracked as an assignment to a compiled entity's property is: an equal value changes
    /// nothing.
    ///
    /// - Throws: ``StoreError`` when the name is not an attribute or the value does not fit its type (`.text` for
    ///   an integer, `.null` for a non-optional attribute).
    public func setValue(_ value: DatabaseValue, for name: String) throws {
        let attribute = try attribute(name)
        let old = values[attribute.index]
        do throws(AttributeValueError) {
            try attribute.writeValue(self, value)
        } catch {
            throw StoreError.valueMismatch(entity: entity.name, field: name, error)
        }
        if values[attribute.index] != old { entityState.didChange(self, attribute.index, from: old) }
    }

    /// Assigns an attribute from a Swift value (`object.setValue(42, for: "number")`).
    public func setValue<V: AttributeValue>(_ value: V, for name: String) throws {
        try setValue(value.databaseValue, for: name)
    }

    /// A to-one relationship's destination, loaded from the store on first access.
    ///
    /// - Throws: ``StoreError`` when the name is not a to-one relationship.
    public func object(_ name: String) throws -> RuntimeObject? {
        let relationship = try relationship(name, toMany: false)
        let state = entityState
        if state.unloadedRelationships.contains(relationship.index), let context = state.context {
            return context.resolveToOne(self, context.relationship(self, relationship.index)).map(Self.of)
        }
        return relationship.getOne(self).map(Self.of)
    }

    /// A to-many relationship's members (in their order for an ordered one), loaded from the store on first access.
    ///
    /// - Throws: ``StoreError`` when the name is not a to-many relationship.
    public func objects(_ name: String) throws -> [RuntimeObject] {
        let relationship = try relationship(name, toMany: true)
        let state = entityState
        if state.unloadedRelationships.contains(relationship.index), let context = state.context {
            return context.loadToMany(self, context.relationship(self, relationship.index)).map(Self.of)
        }
        return relationship.getMany(self).map(Self.of)
    }

    /// Sets a to-one relationship; the inverse follows, as for a compiled entity.
    public func setObject(_ object: RuntimeObject?, for name: String) throws {
        let relationship = try relationship(name, toMany: false)
        try checkDestination(object.map { [$0] } ?? [], relationship)
        let state = entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            relationship.setOne(self, object)
            return
        }
        context.setToOne(self, state, context.relationship(self, relationship.index), object, object?.entityState)
    }

    /// Sets a to-many relationship's members (duplicates dropped); the inverses follow.
    public func setObjects(_ objects: [RuntimeObject], for name: String) throws {
        let relationship = try relationship(name, toMany: true)
        try checkDestination(objects, relationship)
        let state = entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            var unique = RuntimeMembers()
            for object in objects { _ = unique.insert(object) }
            relationship.setMany(self, unique.list)
            return
        }
        context.setToMany(self, state, context.relationship(self, relationship.index), objects)
    }

    private func checkDestination(_ objects: [RuntimeObject], _ relationship: RelationshipDescription) throws(StoreError) {
        for object in objects where object.entity.name != relationship.destinationName {
            throw StoreError(
                .invalidObject,
                "\(entity.name).\(relationship.name) holds \(relationship.destinationName ?? "?") objects, not \(object.entity.name)",
                entity: entity.name, field: relationship.name)
        }
    }

    /// The object's attribute values and row id as `Sendable` values, for another thread or a later comparison.
    public func snapshot() -> RuntimeSnapshot {
        var attributes: [String: DatabaseValue] = [:]
        for attribute in entity.attributes { attributes[attribute.name] = values[attribute.index] }
        return RuntimeSnapshot(entity: entity.name, rowID: entityState.rowID, attributes: attributes)
    }

    public var description: String {
        let fields = entity.attributes.map { "\($0.name): \(values[$0.index])" }.joined(separator: ", ")
        return "\(entity.name)(\(fields))"
    }
}

/// The values of a ``RuntimeObject`` at one moment: its entity, row id (0 before it is inserted) and attributes.
public struct RuntimeSnapshot: Sendable, Equatable, CustomStringConvertible {
    public let entity: String
    public let rowID: Int64
    public let attributes: [String: DatabaseValue]

    public subscript(_ name: String) -> DatabaseValue? { attributes[name] }

    public var description: String {
        "\(entity)#\(rowID)(" + attributes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }
}

/// A to-many relationship's members in a ``RuntimeObject``: in order, each once; past a few members, an index by
/// object finds one without a scan (a user with thousands of issues gains one per decoded issue).
struct RuntimeMembers {
    private(set) var list: [any EntityObject] = []
    private var positions: [ObjectIdentifier: Int]?
    private static let indexedFrom = 16

    init() {}

    init(_ members: [any EntityObject]) {
        for member in members { _ = insert(member) }
    }

    func contains(_ object: AnyObject) -> Bool {
        if let positions { return positions[ObjectIdentifier(object)] != nil }
        return list.contains { $0 === object }
    }

    /// Appends `object` unless it is a member; returns whether it was added.
    mutating func insert(_ object: any EntityObject) -> Bool {
        if contains(object) { return false }
        positions?[ObjectIdentifier(object)] = list.count
        list.append(object)
        if positions == nil, list.count >= Self.indexedFrom { reindex() }
        return true
    }

    /// Removes `object`, keeping the order of the others when `ordered`.
    mutating func remove(_ object: AnyObject, ordered: Bool) {
        let position: Int
        if let positions {
            guard let found = positions[ObjectIdentifier(object)] else { return }
            position = found
        } else {
            guard let found = list.firstIndex(where: { $0 === object }) else { return }
            position = found
        }
        if ordered || positions == nil {
            list.remove(at: position)
            if positions != nil { reindex() }
        } else {
            positions![ObjectIdentifier(object)] = nil
            let last = list.count - 1
            if position != last {
                list.swapAt(position, last)
                positions![ObjectIdentifier(list[position])] = position
            }
            list.removeLast()
        }
    }

    private mutating func reindex() {
        var positions: [ObjectIdentifier: Int] = [:]
        positions.reserveCapacity(list.count)
        for (position, member) in list.enumerated() { positions[ObjectIdentifier(member)] = position }
        self.positions = list.count >= Self.indexedFrom ? positions : nil
    }
}

/// The attribute descriptions of entities described at run time: the closures a compiled entity's are, over a
/// ``RuntimeObject``'s values by field index.
enum RuntimeAttributes {
    static func make(
        name: String, index: Int, type: RuntimeAttributeType, optional: Bool, defaultValue: DatabaseValue?,
        numbersAsText: Bool
    ) -> AttributeDescription {
        switch type {
        case .integer: return make(Int.self, name, index, optional, defaultValue)
        case .double: return make(Double.self, name, index, optional, defaultValue)
        case .bool: return make(Bool.self, name, index, optional, defaultValue)
        case .string: return make(String.self, name, index, optional, defaultValue, numbersAsText: numbersAsText)
        case .decimal: return make(Decimal.self, name, index, optional, defaultValue)
        case .uuid: return make(UUID.self, name, index, optional, defaultValue)
        case .url: return make(URL.self, name, index, optional, defaultValue)
        case .data: return make(Data.self, name, index, optional, defaultValue)
        case .json: return make(RuntimeJSON.self, name, index, optional, defaultValue)
        case .date(let format): return make(Date.self, name, index, optional, defaultValue, dateFormat: format)
        }
    }

    private static func make<V: AttributeValue>(
        _ type: V.Type, _ name: String, _ index: Int, _ optional: Bool, _ defaultValue: DatabaseValue?,
        numbersAsText: Bool = false, dateFormat: RuntimeDateFormat? = nil
    ) -> AttributeDescription {
        if optional {
            return make(V?.self, name, index, defaultValue, numbersAsText: numbersAsText, dateFormat: dateFormat)
        }
        return make(V.self, name, index, defaultValue, numbersAsText: numbersAsText, dateFormat: dateFormat)
    }

    private static func make<V: AttributeValue>(
        _ type: V.Type, _ name: String, _ index: Int, _ defaultValue: DatabaseValue?, numbersAsText: Bool,
        dateFormat: RuntimeDateFormat?
    ) -> AttributeDescription {
        let decode: @Sendable (any Decoder) throws -> DatabaseValue
        let encode: @Sendable (DatabaseValue, any Encoder) throws -> Void
        if let dateFormat {
            decode = { decoder in try decodeDate(from: decoder, dateFormat, optional: V.isOptional) }
            encode = { value, encoder in try encodeDate(value, to: encoder, dateFormat) }
        } else {
            decode = { decoder in try V.decodeAttribute(from: decoder).databaseValue }
            encode = { value, encoder in try V(databaseValue: value).encodeAttribute(to: encoder) }
        }
        let fastKind: AttributeDescription.FastKind? =
            switch dateFormat {
            case .iso8601: .iso8601Date
            case .seconds: .secondsDate
            case .milliseconds: .millisecondsDate
            case nil: nil
            }
        return AttributeDescription(
            name: name, index: index, valueType: V.self, defaultValue: defaultValue,
            readValue: reader(index),
            writeValue: writer(index, stored(V.self), normalize: { value throws(AttributeValueError) in try V(databaseValue: value).databaseValue }),
            decodeDatabaseValue: decode,
            decodeAndAssign: { object, decoder in
                let runtime = RuntimeObject.of(object)
                let new = try decode(decoder)
                let old = runtime.values[index]
                if old != new {
                    runtime.values[index] = new
                    runtime.entityState.didChange(runtime, index, from: old)
                }
            },
            encodeValue: { object, encoder in try encode(RuntimeObject.of(object).values[index], encoder) },
            fastKind: fastKind, readsNumbersAsText: numbersAsText)
    }

    /// What a column of type `V` stores when no conversion is needed: its case, and whether NULL is allowed.
    private static func stored<V: AttributeValue>(_ type: V.Type) -> (kind: DatabaseValue.Kind?, optional: Bool) {
        let kind: DatabaseValue.Kind? =
            switch V.attributeType {
            case .integer: .integer
            case .double, .date: .real
            case .string: .text
            default: nil  // bools (0 or 1), decimals, UUIDs, URLs, data and JSON are checked by their type
            }
        return (kind, V.isOptional)
    }

    // Not generic, unlike the closures of `make`: the decoder calls them for every value, and a closure made in a
    // generic function looks up its type's metadata on each call (about 90 M instructions at 100k records).
    private static func reader(_ index: Int) -> @Sendable (AnyObject) -> DatabaseValue {
        { object in RuntimeObject.of(object).values[index] }
    }

    private static func writer(
        _ index: Int, _ stored: (kind: DatabaseValue.Kind?, optional: Bool),
        normalize: @escaping @Sendable (DatabaseValue) throws(AttributeValueError) -> DatabaseValue
    ) -> @Sendable (AnyObject, DatabaseValue) throws(AttributeValueError) -> Void {
        { object, value throws(AttributeValueError) in
            // A value already of the column's kind needs no conversion.
            if let kind = stored.kind, value.kind == kind {
                RuntimeObject.of(object).values[index] = value
                return
            }
            if value == .null, stored.optional {
                RuntimeObject.of(object).values[index] = .null
                return
            }
            RuntimeObject.of(object).values[index] = try normalize(value)
        }
    }

    private static func decodeDate(from decoder: any Decoder, _ format: RuntimeDateFormat, optional: Bool) throws -> DatabaseValue {
        let container = try decoder.singleValueContainer()
        if optional, container.decodeNil() { return .null }
        switch format {
        case .iso8601:
            var text = try container.decode(String.self)
            guard let seconds = text.withUTF8({ ISO8601.parse($0) }) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "Expected date string to be ISO8601-formatted.")
            }
            return .real(seconds)
        case .seconds: return .real(try container.decode(Double.self))
        case .milliseconds: return .real(try container.decode(Double.self) / 1000)
        }
    }

    private static func encodeDate(_ value: DatabaseValue, to encoder: any Encoder, _ format: RuntimeDateFormat) throws {
        var container = encoder.singleValueContainer()
        let seconds: Double
        switch value {
        case .real(let real): seconds = real
        case .integer(let integer): seconds = Double(integer)
        default: return try container.encodeNil()
        }
        switch format {
        case .iso8601: try container.encode(ISO8601.string(secondsSince1970: seconds))
        case .seconds: try container.encode(seconds)
        case .milliseconds: try container.encode(seconds * 1000)
        }
    }
}

/// One relationship slot of a ``RuntimeObject``.
enum RuntimeLink {
    case one((any EntityObject)?)
    case many(RuntimeMembers)
}

/// The relationship descriptions of entities described at run time, over a ``RuntimeObject``'s slots.
enum RuntimeRelationships {
    static func toOne(name: String, index: Int, destination: String, slot: Int) -> RelationshipDescription {
        RelationshipDescription(
            name: name, index: index, kind: .toOne, destination: RuntimeObject.self, destinationName: destination,
            getOne: { RuntimeObject.of($0).toOne(slot) },
            setOne: { owner, member in RuntimeObject.of(owner).setLink(slot, .one(member.map(RuntimeObject.of))) },
            getMany: { owner in RuntimeObject.of(owner).toOne(slot).map { [$0] } ?? [] },
            setMany: { owner, members in RuntimeObject.of(owner).setLink(slot, .one(members.first)) },
            insertMember: { owner, member in
                let runtime = RuntimeObject.of(owner)
                if runtime.toOne(slot) === member { return false }
                runtime.setLink(slot, .one(RuntimeObject.of(member)))
                return true
            },
            removeMember: { owner, member in
                let runtime = RuntimeObject.of(owner)
                if runtime.toOne(slot) === member { runtime.setLink(slot, .one(nil)) }
            },
            containsMember: { RuntimeObject.of($0).toOne(slot) === $1 },
            isEmpty: { RuntimeObject.of($0).toOne(slot) == nil })
    }

    static func toMany(name: String, index: Int, destination: String, ordered: Bool, slot: Int) -> RelationshipDescription {
        RelationshipDescription(
            name: name, index: index, kind: ordered ? .toManyOrdered : .toManyUnordered, destination: RuntimeObject.self,
            destinationName: destination,
            getOne: { RuntimeObject.of($0).toMany(slot).list.first },
            setOne: { owner, member in
                RuntimeObject.of(owner).setLink(slot, .many(RuntimeMembers(member.map { [RuntimeObject.of($0)] } ?? [])))
            },
            getMany: { RuntimeObject.of($0).toMany(slot).list },
            setMany: { owner, members in RuntimeObject.of(owner).setLink(slot, .many(RuntimeMembers(members))) },
            insertMember: { owner, member in
                RuntimeObject.of(owner).modifyMembers(slot) { $0.insert(RuntimeObject.of(member)) }
            },
            removeMember: { owner, member in
                let runtime = RuntimeObject.of(owner)
                guard runtime.toMany(slot).contains(member) else { return }
                runtime.modifyMembers(slot) { $0.remove(member, ordered: ordered) }
            },
            containsMember: { RuntimeObject.of($0).toMany(slot).contains($1) },
            isEmpty: { RuntimeObject.of($0).toMany(slot).list.isEmpty })
    }
}

/// A JSON attribute described at run time: any JSON value, stored as its text with object keys sorted and numbers
/// as written.
struct RuntimeJSON: AttributeValue {
    let text: String

    static var attributeType: AttributeType { .json }
    var databaseValue: DatabaseValue { .text(text) }

    init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .text(let text) = databaseValue else { throw AttributeValueError(expected: "JSON", found: databaseValue) }
        self.text = text
    }

    static func decodeAttribute(from decoder: any Decoder) throws -> RuntimeJSON {
        var bytes: [UInt8] = []
        try JSONValue(from: decoder).writeSorted(into: &bytes)
        return RuntimeJSON(text: String(decoding: bytes, as: UTF8.self))
    }

    private init(text: String) { self.text = text }

    func encodeAttribute(to encoder: any Encoder) throws {
        try JSONValue(parsing: text).encode(to: encoder)
    }
}

extension AttributeValue {
    /// Throws when `value` is not one this type stores.
    static func checkStored(_ value: DatabaseValue) throws(AttributeValueError) {
        _ = try Self(databaseValue: value)
    }
}
