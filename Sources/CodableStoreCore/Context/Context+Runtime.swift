#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Entities described at run time (``RuntimeEntityBuilder``), by name: the typed APIs' counterparts, through the same
/// code.
extension Store {
    /// The description of the entity named `name` (compiled or described at run time), for making
    /// ``RuntimeObject``s: `RuntimeObject(entity: try store.entity(named: "Issue"))`.
    ///
    /// - Throws: ``StoreError/Code/unknownEntity`` listing the store's entities.
    public func entity(named name: String) throws -> EntityDescription {
        try model.mapping(named: name).description
    }

    /// The descriptions of every entity of the store, in the order the store keeps them.
    public var entityDescriptions: [EntityDescription] { model.mappings.map(\.description) }
}

extension Context {
    /// The objects of the entity named `entity` (described at run time) matching `predicate`, in `orderBy` order (then
    /// by row id).
    ///
    /// ```swift
    /// let open = try context.fetch(entity: "Issue", where: .field("state") == "open" && .field("comments") >= 10,
    ///                              orderBy: [.descending("createdAt")], limit: 20)
    /// ```
    /// - Throws: ``StoreError`` for an unknown entity (``StoreError/Code/unknownEntity``), a name that is not a field
    ///   (``StoreError/Code/invalidQuery``), or the store's failure.
    public func fetch(
        entity: String, where predicate: EntityPredicate<RuntimeObject>? = nil, orderBy sort: [Sort<RuntimeObject>] = [],
        limit: Int? = nil, offset: Int? = nil
    ) throws -> [RuntimeObject] {
        try fetch(try runtimeMapping(entity), where: predicate, orderBy: sort, limit: limit, offset: offset)
    }

    /// The number of objects of the entity named `entity` matching `predicate`, pending changes included.
    public func count(entity: String, where predicate: EntityPredicate<RuntimeObject>? = nil) throws -> Int {
        try count(try runtimeMapping(entity), where: predicate)
    }

    /// The object of the entity named `entity` with this identity (values in the order of the identity's attributes).
    public func object(entity: String, identity values: [DatabaseValue]) throws -> RuntimeObject? {
        try object(try runtimeMapping(entity), identityValues: values).map(RuntimeObject.of)
    }

    /// The object of the entity named `entity` with this single-attribute identity.
    public func object<V: AttributeValue>(entity: String, identity value: V) throws -> RuntimeObject? {
        try object(entity: entity, identity: [value.databaseValue])
    }

    private func runtimeMapping(_ name: String) throws(StoreError) -> EntitySchema {
        let mapping = try model.mapping(named: name)
        guard mapping.description.isRuntime else {
            throw StoreError(
                .invalidQuery, "\(name) is a compiled entity: fetch it by its class (\(mapping.description.type).self)",
                entity: name)
        }
        return mapping
    }
}

extension StoreDecoder {
    /// Decodes a JSON array of records of the entity named `entity` (described at run time) into the context, with
    /// upsert, as `decode([Issue].self, …)` does for a class: one identity lookup per batch.
    ///
    /// - Throws: What ``decode(_:from:into:)-(_,Data,_)`` throws; ``StoreError/Code/unknownEntity`` for a name the
    ///   store does not know.
    public func decodeObjects(entity: String, from data: Data, into context: Context) throws -> [RuntimeObject] {
        let mapping = try context.model.mapping(named: entity)
        return try JSONTape.withDocumentTape(data) { tape in
            try checkingReferences(in: context, savingAtEnd: false) {
                let session = DecodingSession(context: context, options: options)
                let impl = StoreDecoderImpl(tape: tape, node: tape.root, path: .root, session: session)
                return try impl.decodeEntityArray(mapping, tape.root, .root).map(RuntimeObject.of)
            }
        }
    }

    /// Decodes one JSON object of the entity named `entity` (described at run time) into the context, with upsert.
    public func decodeObject(entity: String, from data: Data, into context: Context) throws -> RuntimeObject {
        let mapping = try context.model.mapping(named: entity)
        return try JSONTape.withDocumentTape(data) { tape in
            try checkingReferences(in: context, savingAtEnd: false) {
                let session = DecodingSession(context: context, options: options)
                let impl = StoreDecoderImpl(tape: tape, node: tape.root, path: .root, session: session)
                return RuntimeObject.of(try impl.decodeEntity(mapping, tape.root, .root).object)
            }
        }
    }
}

/// A field of an entity described at run time, named in a predicate: `.field("state") == "open"`.
public struct RuntimeField: Sendable {
    let name: String
    var box: KeyPathBox { KeyPathBox(name: name) }

    /// A field by name: what `.field("state")` is on the left of a comparison.
    public static func field(_ name: String) -> RuntimeField { RuntimeField(name: name) }

    /// Rows whose field is null (`== nil` for a key path).
    public var isNull: EntityPredicate<RuntimeObject> { EntityPredicate(.comparison(box, .equal, .null)) }
    /// Rows whose field is not null.
    public var isNotNull: EntityPredicate<RuntimeObject> { EntityPredicate(.comparison(box, .notEqual, .null)) }

    /// Rows whose field is one of `values`.
    public func isIn<V: AttributeValue>(_ values: some Sequence<V>) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.membership(box, values.map(\.databaseValue)))
    }

    /// Rows whose text field contains `text`.
    public func contains(_ text: String, caseInsensitive: Bool = false) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.text(box, .contains, text, caseInsensitive: caseInsensitive))
    }

    /// Rows whose text field begins with `text`.
    public func begins(with text: String, caseInsensitive: Bool = false) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.text(box, .prefix, text, caseInsensitive: caseInsensitive))
    }

    /// Rows whose text field ends with `text`.
    public func ends(with text: String, caseInsensitive: Bool = false) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.text(box, .suffix, text, caseInsensitive: caseInsensitive))
    }

    /// Rows whose to-one relationship leads to an object matching `condition`.
    public func matches(_ condition: EntityPredicate<RuntimeObject>) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.through(box, destination: RuntimeObject.self, SubqueryBox(condition)))
    }

    /// Rows with a member of this to-many relationship matching `condition` (any member when nil).
    public func any(_ condition: EntityPredicate<RuntimeObject>? = nil) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.members(box, destination: RuntimeObject.self, condition.map(SubqueryBox.init), any: true))
    }

    /// Rows with no member of this to-many relationship matching `condition` (no member at all when nil).
    public func none(_ condition: EntityPredicate<RuntimeObject>? = nil) -> EntityPredicate<RuntimeObject> {
        EntityPredicate(.members(box, destination: RuntimeObject.self, condition.map(SubqueryBox.init), any: false))
    }
}

extension EntityPredicate where Root == RuntimeObject {
    /// A field by name, to compare: `.field("state") == "open"`, `.field("user").matches(.field("login") == "ada")`.
    public static func field(_ name: String) -> RuntimeField { RuntimeField(name: name) }
}

public func == <V: AttributeValue>(lhs: RuntimeField, rhs: V) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .equal, rhs.databaseValue))
}

public func != <V: AttributeValue>(lhs: RuntimeField, rhs: V) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .notEqual, rhs.databaseValue))
}

public func < <V: AttributeValue>(lhs: RuntimeField, rhs: V) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .less, rhs.databaseValue))
}

public func <= <V: AttributeValue>(lhs: RuntimeField, rhs: V) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .lessOrEqual, rhs.databaseValue))
}

public func > <V: AttributeValue>(lhs: RuntimeField, rhs: V) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .greater, rhs.databaseValue))
}

public func >= <V: AttributeValue>(lhs: RuntimeField, rhs: V) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .greaterOrEqual, rhs.databaseValue))
}

/// Objects whose to-one relationship is `object` (`nil`: is not set).
public func == (lhs: RuntimeField, rhs: RuntimeObject?) -> EntityPredicate<RuntimeObject> {
    EntityPredicate(.comparison(lhs.box, .equal, rhs.map { .integer($0.entityState.rowID) } ?? .null))
}

extension Sort where Root == RuntimeObject {
    /// Sorts by a field, by name.
    public static func ascending(_ name: String) -> Sort { Sort(keyPath: KeyPathBox(name: name), ascending: true) }
    public static func descending(_ name: String) -> Sort { Sort(keyPath: KeyPathBox(name: name), ascending: false) }
    /// Sorts by a field of a to-one relationship's destination: `.ascending("user", "login")`.
    public static func ascending(_ relationship: String, _ field: String) -> Sort {
        Sort(keyPath: KeyPathBox(name: relationship), ascending: true, destinationKeyPath: (KeyPathBox(name: field), RuntimeObject.self))
    }
    public static func descending(_ relationship: String, _ field: String) -> Sort {
        Sort(keyPath: KeyPathBox(name: relationship), ascending: false, destinationKeyPath: (KeyPathBox(name: field), RuntimeObject.self))
    }
}
