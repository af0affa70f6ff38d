/// Prefetching: loading a relationship of many objects with one query, instead of one query per object when each
/// is first read (the N+1 of a list that shows each row's author).
extension Context {
    /// Objects of an entity, as ``fetch(_:where:orderBy:limit:offset:)`` returns them, with `relationships` loaded:
    /// one query for the objects, then one per relationship (per 256 objects).
    ///
    /// ```swift
    /// let issues = try context.fetch(Issue.self, where: \.state == "open", prefetching: [\.user, \.labels])
    /// issues.map { "\($0.title) by \($0.user?.login ?? "?"): \($0.labels.map(\.name))" }   // no more queries
    /// ```
    /// - Throws: ``StoreError`` (`invalidQuery`) for a key path that is not a relationship of the entity.
    public func fetch<T: EntityObject>(
        _ type: T.Type,
        where predicate: EntityPredicate<T>? = nil,
        orderBy sort: [Sort<T>] = [],
        limit: Int? = nil,
        offset: Int? = nil,
        prefetching relationships: [PartialKeyPath<T>]
    ) throws -> [T] {
        let relationships = try Self.relationshipFields(relationships)
        let objects = try fetch(type, where: predicate, orderBy: sort, limit: limit, offset: offset)
        try prefetch(relationships, of: objects)
        return objects
    }

    /// Loads `relationships` of `objects` that are not loaded yet, with one query per relationship (per 256
    /// objects): to-one destinations by their row ids, to-many members by their owners. Relationships already
    /// loaded (or changed in memory) are left as they are, and destinations already in the context are not read
    /// again.
    /// - Throws: ``StoreError`` (`invalidQuery`) for a key path that is not a relationship of the entity,
    ///   (`wrongContext`) for an object this context does not hold, or the store's error.
    public func prefetch<T: EntityObject>(_ relationships: [PartialKeyPath<T>], of objects: [T]) throws {
        try prefetch(try Self.relationshipFields(relationships), of: objects)
    }

    private static func relationshipFields<T: EntityObject>(_ keyPaths: [PartialKeyPath<T>]) throws -> [Int] {
        try keyPaths.map { keyPath in
            guard let field = T.entityDescription.fieldIndex(for: keyPath),
                case .relationship = T.entityDescription.fields[field]
            else {
                throw StoreError(
                    .invalidQuery, "prefetching \(keyPath), which is not a relationship of \(T.entityDescription.name)",
                    entity: T.entityDescription.name)
            }
            return field
        }
    }

    private func prefetch<T: EntityObject>(_ fields: [Int], of objects: [T]) throws {
        guard !objects.isEmpty, !fields.isEmpty else { return }
        let mapping = try model.mapping(for: T.self)
        for object in objects where object.entityState.context !== self {
            throw StoreError(
                .wrongContext, "cannot prefetch relationships of a \(mapping.name) object that this context does not hold",
                entity: mapping.name)
        }
        try flush()
        let owners: [any EntityObject] = objects
        for field in fields {
            guard let relationship = mapping.relationships[field] else { continue }
            if relationship.description.isToMany {
                try loadToManyBatch(owners, relationship)
            } else {
                try loadToOneBatch(owners, relationship)
            }
        }
    }

    /// Reads the destinations of an unloaded to-one relationship of `owners` that the context does not hold, with
    /// one query per 256 of them, then resolves the relationship of each owner from memory.
    private func loadToOneBatch(_ owners: [any EntityObject], _ relationship: ResolvedRelationship) throws {
        let field = relationship.description.index
        let destination = model.mappings[relationship.destination]
        var seen = Set<Int64>()
        var missing: [Int64] = []
        for owner in owners where owner.entityState.unloadedRelationships.contains(field) {
            guard let rowID = owner.entityState.foreignKeys[field], registries[destination.index][rowID] == nil,
                seen.insert(rowID).inserted
            else { continue }
            missing.append(rowID)
        }
        if !missing.isEmpty {
            try forEachStoredRow(of: destination, rowIDs: missing) { statement in _ = try object(for: destination, statement: statement) }
        }
        for owner in owners where owner.entityState.unloadedRelationships.contains(field) {
            _ = resolveToOne(owner, relationship)
        }
        try throwDeferredError()
    }
}
