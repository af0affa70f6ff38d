/// A value a batch update sets on every object it matches (``Context/updateAll(_:where:set:)``).
///
/// ```swift
/// .set(\Issue.state, to: "closed")
/// .set(\Issue.closedAt, to: Date())
/// ```
public struct Assignment<Entity: EntityObject>: Sendable {
    /// The attribute's field index, nil when the key path is not a stored attribute (the update throws).
    let field: Int?
    let keyPath: String
    let value: DatabaseValue

    /// Sets an attribute to `value`.
    public static func set<V: AttributeValue>(_ keyPath: KeyPath<Entity, V>, to value: V) -> Assignment {
        let field = Entity.entityDescription.fieldIndex(for: keyPath).flatMap { field -> Int? in
            if case .attribute = Entity.entityDescription.fields[field] { field } else { nil }
        }
        return Assignment(field: field, keyPath: "\(keyPath)", value: value.databaseValue)
    }
}

extension Context {
    /// Sets attributes of every object matching `predicate` (all of them when nil) with one statement, and returns
    /// how many objects matched.
    ///
    /// ```swift
    /// let closed = try context.updateAll(Issue.self, where: \.state == "open" && \.updatedAt < cutoff,
    ///                                    set: [.set(\.state, to: "stale")])
    /// ```
    /// Pending changes are saved first. Objects the context holds get the new values too (as stored values: they are
    /// not changes to save again), lookups by identity stay right when an identity attribute is set, and observers
    /// of the entity are told when the write commits. Setting an identity or unique attribute to a value another
    /// row has fails as a whole, changing nothing.
    /// - Throws: ``StoreError`` (`invalidQuery`) for a key path that is not a stored attribute, or an attribute set
    ///   twice; (`readOnly`) in a read context; the store's error.
    @discardableResult
    public func updateAll<T: EntityObject>(
        _ type: T.Type, where predicate: EntityPredicate<T>? = nil, set assignments: [Assignment<T>]
    ) throws -> Int {
        if isReadOnly { throw StoreError.readOnly("update") }
        let mapping = try model.mapping(for: T.self)
        var fields: [Int] = []
        for assignment in assignments {
            guard let field = assignment.field else {
                throw StoreError(.invalidQuery, "\(assignment.keyPath) is not a stored attribute of \(mapping.name)", entity: mapping.name)
            }
            guard !fields.contains(field) else {
                throw StoreError(
                    .invalidQuery, "\(assignment.keyPath) is set twice in one update of \(mapping.name)", entity: mapping.name)
            }
            fields.append(field)
        }
        guard !assignments.isEmpty else { return try count(T.self, where: predicate) }
        try flush()
        let rowIDs = try matchingRowIDs(mapping, where: predicate)
        guard !rowIDs.isEmpty else { return 0 }
        let update = try storage.updateAll(mapping, fields: fields, where: predicate)
        let statement = try connection.cached(update.sql)
        try statement.bind(assignments.map(\.value) + update.arguments)
        do {
            if storage.dialect.continuesAfterError {
                try statement.execute()
            } else {
                // The backend aborts the transaction on an error: a savepoint keeps "fails as a whole, changing
                // nothing" true for the rest of the write.
                try connection.inSavepoint(named: "codablestore_update") { try statement.execute() }
            }
        } catch let error where storage.dialect.isUniqueViolation(error) {
            let names = fields.map { mapping.description.fields[$0].name }.joined(separator: ", ")
            throw StoreError(
                .identityConflict,
                "setting \(names) on \(rowIDs.count) \(mapping.name) objects would give two rows the same identity or unique value; nothing was changed",
                entity: mapping.name, cause: error)
        }
        // The objects in memory take the stored values.
        for rowID in rowIDs {
            guard let object = registries[mapping.index][rowID] else { continue }
            for (assignment, field) in zip(assignments, fields) {
                guard case .attribute(let attribute) = mapping.description.fields[field], attribute.value(of: object) != assignment.value
                else { continue }
                try attribute.writeValue(object, assignment.value)
            }
        }
        if fields.contains(where: mapping.description.identity.contains) {
            // Keys in the identity index (and the import's filter of inserted keys) may be stale: rebuilt on demand.
            identityIndexes[mapping.index] = nil
            storedKeys[mapping.index] = nil
        }
        touchedEntities.insert(mapping.index)
        writeCounts[mapping.index, default: (0, 0)].updated += rowIDs.count
        return rowIDs.count
    }
}
