/// The entities of a store linked together: destinations resolved, inverses found, and how each field maps
/// to tables and columns.
///
/// Storage mapping:
/// - one table per entity, named like the entity, with `_pk INTEGER PRIMARY KEY` (the object's row id) and
///   one column per attribute, named like the attribute;
/// - a to-one relationship is a foreign-key column named like the relationship;
/// - a to-many relationship whose inverse is to-one is stored by that inverse's foreign key; if it is ordered,
///   the destination table has an extra `<inverse>_order` column with the position;
/// - any other to-many relationship (many-to-many, or without inverse) is stored in a join table
///   `<Entity>_<relationship>` with `source`, `target` and `position` columns. A many-to-many pair shares one
///   table, owned by the ordered side (or the first by name when both or neither are ordered); positions are
///   kept for the owning side only.
package final class Schema: Sendable {
    package let mappings: [EntitySchema]
    /// ``mappings`` without reference counting, for ``withMapping(_:_:)``.
    private let borrowedMappings: [Unmanaged<EntitySchema>]
    package let joinTables: [JoinTable]
    /// Whether some ordered to-many relationship keeps positions in a column of its destination.
    let hasOrderedForeignKeyRelationships: Bool
    /// Entity indexes with the destinations of foreign keys before the tables holding them (where cycles
    /// allow): saves insert parent rows first, so that SQLite's deferred foreign-key checks find every parent
    /// at once and never have to look for children when a parent arrives.
    let insertOrder: [Int]
    private let indexByType: [ObjectIdentifier: Int]

    /// The compiled entities and the entities described at run time the schema was made of (for a copy of it).
    private let compiledTypes: [any EntityObject.Type]
    package let runtimeEntities: [EntityDescription]
    private let indexByName: [String: Int]

    package init(entities: [any EntityObject.Type], runtime runtimeEntities: [EntityDescription] = []) throws {
        // Collect the entities and, transitively, the destinations of their relationships.
        var descriptions: [EntityDescription] = []
        var indexByType: [ObjectIdentifier: Int] = [:]
        var problems: [String] = []
        var pending = entities
        while let type = pending.first {
            pending.removeFirst()
            let key = ObjectIdentifier(type)
            if indexByType[key] != nil { continue }
            let description = type.entityDescription
            indexByType[key] = descriptions.count
            descriptions.append(description)
            pending.append(contentsOf: description.relationships.filter { $0.destinationName == nil }.map(\.destination))
        }
        for description in runtimeEntities {
            if description.isRuntime {
                descriptions.append(description)
            } else {
                problems.append("\(description.name) is the description of a class: list the class in the entities instead")
            }
        }
        var indexByName: [String: Int] = [:]
        for (index, description) in descriptions.enumerated() where indexByName[description.name] == nil {
            indexByName[description.name] = index
        }
        /// The entity a relationship leads to: its class, or the name of an entity described at run time.
        func destinationIndex(_ relationship: RelationshipDescription) -> Int? {
            if let name = relationship.destinationName { return indexByName[name] }
            return indexByType[ObjectIdentifier(relationship.destination)]
        }
        problems += descriptions.flatMap(\.problems)
        let names = descriptions.map(\.name)
        for name in Set(names) where names.filter({ $0 == name }).count > 1 {
            problems.append("two entities are named \(name)")
        }
        for name in names where name.hasPrefix("_") || name.lowercased().hasPrefix("sqlite_") {
            problems.append("entity name \(name) is reserved")
        }
        var unresolved = false
        for description in descriptions {
            for relationship in description.relationships {
                guard let destination = destinationIndex(relationship), description.isRuntime,
                    !descriptions[destination].isRuntime
                else { continue }
                problems.append(
                    "\(description.name).\(relationship.name): an entity described at run time can lead only to entities described at run time, not to the class \(descriptions[destination].name)")
            }
            for relationship in description.relationships where destinationIndex(relationship) == nil {
                let known = names.sorted().joined(separator: ", ")
                problems.append(
                    "\(description.name).\(relationship.name): its destination \(relationship.destinationName ?? "?") is not an entity of the model (\(known))")
                unresolved = true
            }
        }
        // What follows resolves every destination: a name that resolves to nothing ends the checks here.
        if unresolved {
            throw StoreError(
                .invalidModel, "the entities are not a valid model: " + problems.joined(separator: "; "), differences: problems)
        }

        // Inverses: the declared pairs (see `Inverse`) first. Then a relationship A.r → B and B.s → A left
        // undeclared are inverses when each is the only undeclared relationship of its entity pointing at the other.
        var inverse: [[Int: Int]] = Array(repeating: [:], count: descriptions.count)  // field → inverse field
        var declared: [Set<Int>] = Array(repeating: [], count: descriptions.count)
        for (entity, description) in descriptions.enumerated() {
            for declaration in description.declaredInverses {
                guard case .relationship(let relationship) = description.fields[declaration.field] else { continue }
                let name = "\(description.name).\(relationship.name)"
                let destination: Int
                let target: EntityDescription
                let field: Int
                switch declaration.inverse {
                case .keyPath(let keyPath, let declaredDestination):
                    guard ObjectIdentifier(declaredDestination) == ObjectIdentifier(relationship.destination),
                        let found = indexByType[ObjectIdentifier(declaredDestination)]
                    else {
                        problems.append(
                            "\(name): its declared inverse must be a relationship of its destination \(relationship.destination), not of \(declaredDestination)")
                        continue
                    }
                    destination = found
                    target = descriptions[destination]
                    guard let inverseField = target.fieldIndex(for: keyPath), case .relationship = target.fields[inverseField] else {
                        problems.append("\(name): its declared inverse is not a relationship of \(target.name)")
                        continue
                    }
                    field = inverseField
                case .name(let inverseName):
                    destination = destinationIndex(relationship)!
                    target = descriptions[destination]
                    guard let inverseField = target.fields.firstIndex(where: { $0.name == inverseName }),
                        case .relationship = target.fields[inverseField]
                    else {
                        problems.append("\(name): its declared inverse \(inverseName) is not a relationship of \(target.name)")
                        continue
                    }
                    field = inverseField
                }
                guard case .relationship(let other) = target.fields[field] else { continue }
                let otherName = "\(target.name).\(other.name)"
                if destinationIndex(other) != entity {
                    problems.append(
                        "\(name) and \(otherName) cannot be inverses: \(otherName) points at \(other.destinationName ?? "\(other.destination)")")
                    continue
                }
                if destination == entity, field == declaration.field {
                    problems.append("\(name) cannot be its own inverse")
                    continue
                }
                if let previous = inverse[entity][declaration.field], previous != field {
                    problems.append("\(name) is declared with two inverses: \(target.fields[previous].name) and \(other.name)")
                    continue
                }
                if let previous = inverse[destination][field], previous != declaration.field {
                    problems.append("\(otherName) is declared with two inverses: \(description.fields[previous].name) and \(relationship.name)")
                    continue
                }
                inverse[entity][declaration.field] = field
                inverse[destination][field] = declaration.field
                declared[entity].insert(declaration.field)
                declared[destination].insert(field)
            }
        }
        func relationships(of entity: Int, to destination: Int) -> [RelationshipDescription] {
            descriptions[entity].relationships.filter {
                !declared[entity].contains($0.index) && destinationIndex($0) == destination
            }
        }
        for (entity, description) in descriptions.enumerated() {
            for relationship in description.relationships where !declared[entity].contains(relationship.index) {
                let destination = destinationIndex(relationship)!
                let outgoing = relationships(of: entity, to: destination)
                var incoming = relationships(of: destination, to: entity)
                if destination == entity { incoming.removeAll { $0.index == relationship.index } }
                if outgoing.count == 1 || destination == entity, incoming.count == 1,
                    destination != entity || outgoing.count == 2
                {
                    inverse[entity][relationship.index] = incoming[0].index
                }
            }
        }

        // Decide storage.
        var joinTables: [JoinTable] = []
        var storage: [[Int: RelationshipStorage]] = Array(repeating: [:], count: descriptions.count)
        var orderColumns: [[String]] = Array(repeating: [], count: descriptions.count)
        for (entity, description) in descriptions.enumerated() {
            for relationship in description.relationships {
                let destination = destinationIndex(relationship)!
                let inverseField = inverse[entity][relationship.index]
                let inverseRelationship = inverseField.map { descriptions[destination].fields[$0] }
                if relationship.kind == .toOne {
                    storage[entity][relationship.index] = .foreignKey(column: relationship.name)
                } else if case .relationship(let other)? = inverseRelationship, other.kind == .toOne {
                    let orderColumn = relationship.isOrdered ? "\(other.name)_order" : nil
                    if let orderColumn { orderColumns[destination].append(orderColumn) }
                    storage[entity][relationship.index] = .inverseForeignKey(column: other.name, orderColumn: orderColumn)
                } else if storage[entity][relationship.index] == nil {
                    // A join table; for a many-to-many pair, decide the owner once for both sides.
                    var ownerIsSelf = true
                    if case .relationship(let other)? = inverseRelationship {
                        if relationship.isOrdered != other.isOrdered {
                            ownerIsSelf = relationship.isOrdered
                        } else {
                            ownerIsSelf = "\(description.name).\(relationship.name)"
                                <= "\(descriptions[destination].name).\(other.name)"
                        }
                    }
                    let (sourceEntity, sourceRelationship) =
                        ownerIsSelf ? (entity, relationship) : (destination, inverseRelationship!.asRelationship!)
                    let table = JoinTable(
                        index: joinTables.count,
                        name: "\(descriptions[sourceEntity].name)_\(sourceRelationship.name)",
                        source: sourceEntity,
                        target: ownerIsSelf ? destination : entity,
                        hasPosition: sourceRelationship.isOrdered)
                    joinTables.append(table)
                    storage[entity][relationship.index] = .joinTable(table.index, ownerIsSource: ownerIsSelf)
                    if let inverseField {
                        storage[destination][inverseField] = .joinTable(table.index, ownerIsSource: !ownerIsSelf)
                    }
                }
            }
        }
        var mappings: [EntitySchema] = []
        for (entity, description) in descriptions.enumerated() {
            var resolved: [ResolvedRelationship?] = Array(repeating: nil, count: description.fields.count)
            for relationship in description.relationships {
                let destination = destinationIndex(relationship)!
                resolved[relationship.index] = ResolvedRelationship(
                    description: relationship,
                    owner: entity,
                    destination: destination,
                    inverse: inverse[entity][relationship.index],
                    storage: storage[entity][relationship.index]!)
            }
            let mapping = EntitySchema(
                index: entity, description: description, relationships: resolved, orderColumns: orderColumns[entity],
                coding: EntityCodingPlan(description, problems: &problems))
            let columnNames = mapping.columns.map(\.name)
            for name in Set(columnNames) where columnNames.filter({ $0 == name }).count > 1 {
                problems.append("\(description.name): two columns are named \(name)")
            }
            mappings.append(mapping)
        }
        let tableNames = mappings.map(\.name) + joinTables.map(\.name)
        for name in Set(tableNames) where tableNames.filter({ $0 == name }).count > 1 {
            problems.append("two tables would be named \(name); rename an entity or a relationship")
        }
        if !problems.isEmpty {
            throw StoreError(
                .invalidModel, "the entities are not a valid model: " + problems.joined(separator: "; "),
                differences: problems)
        }
        for mapping in mappings {
            for case let relationship? in mapping.relationships {
                relationship.inverseRelationship = relationship.inverse.flatMap {
                    mappings[relationship.destination].relationships[$0]
                }
            }
        }
        var insertOrder: [Int] = []
        var visited = Array(repeating: false, count: mappings.count)
        func visit(_ entity: Int) {
            if visited[entity] { return }
            visited[entity] = true  // a cycle stops here: its rows rely on the deferred checks
            for case let relationship? in mappings[entity].relationships {
                if case .foreignKey = relationship.storage { visit(relationship.destination) }
            }
            insertOrder.append(entity)
        }
        for entity in mappings.indices { visit(entity) }
        self.insertOrder = insertOrder
        self.mappings = mappings
        self.borrowedMappings = mappings.map { Unmanaged.passUnretained($0) }
        self.joinTables = joinTables
        self.hasOrderedForeignKeyRelationships = mappings.contains { mapping in
            mapping.relationships.contains { relationship in
                if case .inverseForeignKey(_, _?)? = relationship?.storage { true } else { false }
            }
        }
        self.indexByType = indexByType
        self.indexByName = indexByName
        self.compiledTypes = entities
        self.runtimeEntities = runtimeEntities
    }

    /// A schema equal to this one, with objects of its own (see ``BatchIdentityCollector``).
    package func copy() throws -> Schema {
        try Schema(entities: compiledTypes, runtime: runtimeEntities)
    }

    /// The mapping of the entity named `name`.
    /// The mapping of the entity a migration step names.
    func mapping(for reference: EntityReference) throws(StoreError) -> EntitySchema {
        switch reference {
        case .type(let type): try mapping(for: type)
        case .name(let name): try mapping(named: name)
        }
    }

    package func mapping(named name: String) throws(StoreError) -> EntitySchema {
        guard let index = indexByName[name] else {
            throw StoreError(
                .unknownEntity,
                "\(name) is not an entity of this store; its entities are \(mappings.map(\.name).sorted().joined(separator: ", "))",
                entity: name)
        }
        return mappings[index]
    }

    package func mapping(for type: any EntityObject.Type) throws(StoreError) -> EntitySchema {
        guard let index = indexByType[ObjectIdentifier(type)] else {
            if type == RuntimeObject.self {
                throw StoreError(
                    .unknownEntity, "RuntimeObject is the class of every entity described at run time: name the entity instead",
                    entity: "RuntimeObject")
            }
            throw StoreError.unknownEntity(type)
        }
        return mappings[index]
    }

    /// The mapping of an object's entity. Takes an existential on purpose: a generic version, inlined where
    /// existentials are opened repeatedly, crashed the Swift 6.3.1 SIL optimizer (CSE) in release builds.
    func mapping(of object: any EntityObject) throws(StoreError) -> EntitySchema {
        let index = object.entityState.entityIndex
        if index >= 0 { return mappings[index] }
        if let runtime = object as? RuntimeObject { return try mapping(of: runtime) }
        let type: any EntityObject.Type = Swift.type(of: object)
        return try mapping(for: type)
    }

    /// The mapping of a runtime object's entity: the store's entity of that name, when it is that description.
    func mapping(of object: RuntimeObject) throws(StoreError) -> EntitySchema {
        let mapping = try mapping(named: object.entity.name)
        guard mapping.description === object.entity else {
            throw StoreError(
                .unknownEntity, "the \(object.entity.name) object was made from another description than this store's \(object.entity.name)",
                entity: object.entity.name)
        }
        return mapping
    }
}

extension FieldDescription {
    fileprivate var asRelationship: RelationshipDescription? {
        if case .relationship(let relationship) = self { relationship } else { nil }
    }
}

/// Where a relationship's membership is stored.
package enum RelationshipStorage: Equatable, Sendable {
    /// A foreign-key column of the owner's table (to-one).
    case foreignKey(column: String)
    /// The inverse to-one's foreign-key column in the destination table, plus a position column if ordered.
    case inverseForeignKey(column: String, orderColumn: String?)
    /// A join table; the owner is its `source` or its `target`.
    case joinTable(Int, ownerIsSource: Bool)
}

/// A relationship with its destination, inverse and storage resolved.
///
/// A class: the context passes relationships around on every assignment, and copying a struct of several
/// references and strings cost a retain each.
package final class ResolvedRelationship: @unchecked Sendable {
    // @unchecked: `inverseRelationship` is set once while the model is built, before it is shared.
    package let description: RelationshipDescription
    /// The owner's entity index.
    let owner: Int
    /// The destination's entity index.
    package let destination: Int
    /// The inverse's field index in the destination, if there is an inverse.
    package let inverse: Int?
    package let storage: RelationshipStorage
    /// The inverse relationship itself, when there is one. Unowned: the model owns every relationship (through
    /// its mappings) for as long as anything can reach this one. `unowned(unsafe)`: a checked `unowned` reference
    /// costs an unowned retain and a release per read (callgrind: about 12 M instructions of the 100k import's
    /// decoding thread, 0.3%, in relationship changes).
    fileprivate(set) unowned(unsafe) var inverseRelationship: ResolvedRelationship?

    init(description: RelationshipDescription, owner: Int, destination: Int, inverse: Int?, storage: RelationshipStorage) {
        self.description = description
        self.owner = owner
        self.destination = destination
        self.inverse = inverse
        self.storage = storage
    }
}

/// A join table for a to-many relationship that is not stored by a foreign key. A class: saves look it up per
/// link, and a struct with four strings cost four retains per copy.
package final class JoinTable: Sendable {
    package let index: Int
    package let name: String
    /// Entity index of the `source` column.
    package let source: Int
    /// Entity index of the `target` column.
    package let target: Int
    /// Whether the source side is ordered (a `position` column is maintained).
    package let hasPosition: Bool
    /// Rows per multi-row link INSERT.
    static let linkBatchRows = 32
    /// Values per row of a link INSERT: source and target, and the position in a table with positions. A table
    /// without writes no position (always NULL there): binding it, and the upsert that kept a link's new position,
    /// made each link INSERT about half as costly again.
    package var linkWidth: Int { hasPosition ? 3 : 2 }

    init(index: Int, name: String, source: Int, target: Int, hasPosition: Bool) {
        self.index = index
        self.name = name
        self.source = source
        self.target = target
        self.hasPosition = hasPosition
    }
}

/// One entity's table: its columns, and how fields map to them.
package final class EntitySchema: Sendable {
    package struct Column: Sendable {
        package enum Kind: Sendable {
            case attribute(AttributeDescription)
            case foreignKey(RelationshipDescription, destination: Int)
            case order
        }
        package let name: String
        package let kind: Kind
    }

    package let index: Int
    package let description: EntityDescription
    package var name: String { description.name }
    /// Columns after `_pk`: attributes and foreign keys in field order, then position columns.
    package let columns: [Column]
    /// Field index → column of a row read from the store (0 is `_pk`, then the first ``insertColumnCount``
    /// ``columns``); -1 for to-many relationships.
    package let columnOfField: [Int32]
    /// Field index → column name, for attributes and to-one relationships.
    package let columnNameOfField: [String?]
    /// For a to-one field whose inverse is an ordered to-many stored by its foreign key: that order column.
    let orderColumnOfForeignKeyField: [Int: String]
    /// Field index → resolved relationship.
    package let relationships: [ResolvedRelationship?]
    /// ``relationships`` without reference counting, for ``withRelationship(_:_:)``.
    private let borrowedRelationships: [Unmanaged<ResolvedRelationship>?]
    /// Whether the entity has any relationship.
    let hasRelationships: Bool
    /// The identity attributes' fields.
    package let identityFields: FieldSet
    /// Whether the entity has identity attributes.
    var hasIdentity: Bool { !identityFields.isEmpty }
    /// A relationship as plain values, for the identity collection of an import's reader thread.
    struct RelationshipField: Sendable {
        let index: Int
        let destination: Int
        let isToMany: Bool
    }
    /// The relationships in field order, as plain values. The importer's reader thread reads these (through a
    /// ``Schema`` of its own) rather than the descriptions: an object reference-counted by two threads at once
    /// moves its cache line between cores at every retain (measured at 1M records: 2.5-7% of the import's CPU).
    let relationshipFields: [RelationshipField]
    /// Rows per multi-row INSERT.
    static let insertBatchRows = 32
    /// Number of columns an insert writes after `_pk` (the first ``columns``; the position columns come after
    /// them and are written afterwards).
    package let insertColumnCount: Int
    /// How each inserted column after `_pk` gets its value: precomputed so that inserting a row does not switch
    /// over column kinds. The descriptions are borrowed (``columns`` keeps them alive): copying a binder that held
    /// them, or a closure of theirs, is a retain and a release a column of every inserted row.
    let insertBinders: [InsertBinder]

    enum InsertBinder: @unchecked Sendable {
        // @unchecked: `Unmanaged` does not declare Sendable; the descriptions are.
        case attribute(Unmanaged<AttributeDescription>)
        /// A to-one relationship stored as a foreign key.
        case foreignKey(Unmanaged<RelationshipDescription>)
    }
    /// Identity column names.
    package let identityColumns: [String]
    /// How the decoder and the encoder read and write the entity's JSON (made and read by Coding only).
    let coding: EntityCodingPlan
    /// Whether decoding the entity's JSON runs only the model's own rules: no custom decoding and no
    /// `prepareForDecoding` (what an object holds then depends on its JSON, the model and the options alone).
    package var decodesPlainly: Bool { !coding.hasCustomDecoding && coding.jsonPreparing == nil }
    /// The unknown-reference policies the entity declares, by field index.
    package var referencePolicies: [Int: StoreDecoder.UnknownReferencePolicy] { coding.referencePolicies }
    /// The declared indexes, with their names and columns.
    package let indexes: [SchemaSnapshot.Index]

    init(
        index: Int, description: EntityDescription, relationships: [ResolvedRelationship?], orderColumns: [String],
        coding: EntityCodingPlan
    ) {
        self.coding = coding
        self.index = index
        self.description = description
        self.relationships = relationships
        self.borrowedRelationships = relationships.map { $0.map { Unmanaged.passUnretained($0) } }
        self.hasRelationships = relationships.contains { $0 != nil }
        var identityFields = FieldSet()
        for field in description.identity { identityFields.insert(field) }
        self.identityFields = identityFields
        self.relationshipFields = relationships.compactMap { relationship in
            relationship.map {
                RelationshipField(index: $0.description.index, destination: $0.destination, isToMany: $0.description.isToMany)
            }
        }
        var columns: [Column] = []
        var columnOfField = Array(repeating: Int32(-1), count: description.fields.count)
        var columnNameOfField: [String?] = Array(repeating: nil, count: description.fields.count)
        for field in description.fields {
            switch field {
            case .attribute(let attribute):
                columnOfField[attribute.index] = Int32(columns.count + 1)
                columnNameOfField[attribute.index] = attribute.name
                columns.append(Column(name: attribute.name, kind: .attribute(attribute)))
            case .relationship(let relationship):
                guard let resolved = relationships[relationship.index],
                    case .foreignKey(let column) = resolved.storage
                else { continue }
                columnOfField[relationship.index] = Int32(columns.count + 1)
                columnNameOfField[relationship.index] = column
                columns.append(
                    Column(name: column, kind: .foreignKey(relationship, destination: resolved.destination)))
            }
        }
        let insertColumnCount = columns.count
        self.insertBinders = columns.map { column in
            switch column.kind {
            case .attribute(let attribute): return .attribute(Unmanaged.passUnretained(attribute))
            case .foreignKey(let relationship, _): return .foreignKey(Unmanaged.passUnretained(relationship))
            case .order: preconditionFailure("position columns come after the inserted ones")
            }
        }
        columns += orderColumns.map { Column(name: $0, kind: .order) }
        self.columns = columns
        self.columnOfField = columnOfField
        self.columnNameOfField = columnNameOfField
        // The inverse of a to-one stored here, when ordered, keeps its positions in "<to-one>_order".
        var orderColumnOfForeignKeyField: [Int: String] = [:]
        for (field, name) in columnNameOfField.enumerated() {
            guard let name, case .relationship = description.fields[field], orderColumns.contains(name + "_order") else { continue }
            orderColumnOfForeignKeyField[field] = name + "_order"
        }
        self.orderColumnOfForeignKeyField = orderColumnOfForeignKeyField
        self.insertColumnCount = insertColumnCount
        self.identityColumns = description.identity.map { description.fields[$0].name }
        self.indexes = description.indexes.map { index in
            let columns = index.fields.compactMap { columnNameOfField[$0] }
            return SchemaSnapshot.Index(
                name: "\(description.name)_index_" + columns.joined(separator: "_"), columns: columns, unique: index.isUnique)
        }
    }
}

extension Schema {
    /// Calls `body` with the mapping of entity `index`, borrowed: `mappings[index]` is a retain and a release, two
    /// atomic operations each time a decode follows a relationship. `body` must not keep the mapping.
    @inline(__always)
    func withMapping<Result>(_ index: Int, _ body: (EntitySchema) throws -> Result) rethrows -> Result {
        try borrowedMappings[index]._withUnsafeGuaranteedRef(body)
    }
}

extension EntitySchema {
    /// Calls `body` with each resolved relationship in field order, borrowed (see ``Schema/withMapping(_:_:)``):
    /// `for case let relationship? in relationships` is a retain and a release per relationship of every object
    /// an import registers, materializes or lets go.
    @inline(__always)
    func forEachRelationship(_ body: (ResolvedRelationship) throws -> Void) rethrows {
        for case let relationship? in borrowedRelationships { try relationship._withUnsafeGuaranteedRef(body) }
    }

    /// Calls `body` with the resolved relationship of field `field`, borrowed (see ``Schema/withMapping(_:_:)``);
    /// nil when the field is not a relationship.
    @inline(__always)
    func withRelationship<Result>(_ field: Int, _ body: (ResolvedRelationship) throws -> Result) rethrows -> Result? {
        guard let relationship = borrowedRelationships[field] else { return nil }
        return try relationship._withUnsafeGuaranteedRef(body)
    }
}
