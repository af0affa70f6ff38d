/// Existence, aggregates and batch deletes: the everyday queries beyond fetching objects.
extension Context {
    /// Whether any object matches `predicate`.
    public func exists<T: EntityObject>(_ type: T.Type, where predicate: EntityPredicate<T>? = nil) throws -> Bool {
        let mapping = try prepare(T.self)
        return try scalar(storage.exists(mapping, where: predicate)) == .integer(1)
    }

    /// An aggregate function over an attribute.
    public enum Aggregate: String, Sendable {
        case count, sum, average = "avg", minimum = "min", maximum = "max"
    }

    /// An aggregate of an attribute over the objects matching `predicate`, as SQLite computes it: `count`
    /// counts non-null values; `sum` and `average` of no values are `NULL`.
    ///
    /// ```swift
    /// let total = try context.aggregate(.sum, of: \Issue.comments, where: \.state == "open")   // .integer(…)
    /// ```
    public func aggregate<T: EntityObject, V: AttributeValue>(
        _ function: Aggregate, of keyPath: KeyPath<T, V>, where predicate: EntityPredicate<T>? = nil
    ) throws -> DatabaseValue {
        let mapping = try prepare(T.self)
        return try scalar(storage.aggregate(function, of: keyPath, mapping, where: predicate)) ?? .null
    }

    // MARK: Typed aggregates

    /// The smallest value of the attribute among the objects matching `predicate`; nil when there is none.
    ///
    /// ```swift
    /// let first: Date? = try context.minimum(of: \Issue.createdAt)
    /// ```
    public func minimum<T: EntityObject, V: AttributeValue>(of keyPath: KeyPath<T, V>, where predicate: EntityPredicate<T>? = nil) throws -> V? {
        try typedAggregate(.minimum, of: keyPath, where: predicate, as: V.self)
    }

    /// The smallest non-nil value of an optional attribute; nil when there is none.
    public func minimum<T: EntityObject, V: AttributeValue>(of keyPath: KeyPath<T, V?>, where predicate: EntityPredicate<T>? = nil) throws -> V? {
        try typedAggregate(.minimum, of: keyPath, where: predicate, as: V.self)
    }

    /// The largest value of the attribute among the objects matching `predicate`; nil when there is none.
    public func maximum<T: EntityObject, V: AttributeValue>(of keyPath: KeyPath<T, V>, where predicate: EntityPredicate<T>? = nil) throws -> V? {
        try typedAggregate(.maximum, of: keyPath, where: predicate, as: V.self)
    }

    /// The largest non-nil value of an optional attribute; nil when there is none.
    public func maximum<T: EntityObject, V: AttributeValue>(of keyPath: KeyPath<T, V?>, where predicate: EntityPredicate<T>? = nil) throws -> V? {
        try typedAggregate(.maximum, of: keyPath, where: predicate, as: V.self)
    }

    /// The sum of a numeric attribute (its non-nil values) over the objects matching `predicate`; zero when there
    /// is none. An integer sum that overflows `Int64` is an error, as in SQLite.
    public func sum<T: EntityObject, V: AttributeValue & AdditiveArithmetic>(
        of keyPath: KeyPath<T, V>, where predicate: EntityPredicate<T>? = nil
    ) throws -> V {
        try typedAggregate(.sum, of: keyPath, where: predicate, as: V.self) ?? .zero
    }

    public func sum<T: EntityObject, V: AttributeValue & AdditiveArithmetic>(
        of keyPath: KeyPath<T, V?>, where predicate: EntityPredicate<T>? = nil
    ) throws -> V {
        try typedAggregate(.sum, of: keyPath, where: predicate, as: V.self) ?? .zero
    }

    /// The mean of a numeric attribute's non-nil values; nil when there is none.
    public func average<T: EntityObject, V: AttributeValue & Numeric>(
        of keyPath: KeyPath<T, V>, where predicate: EntityPredicate<T>? = nil
    ) throws -> Double? {
        try typedAggregate(.average, of: keyPath, where: predicate, as: Double.self)
    }

    public func average<T: EntityObject, V: AttributeValue & Numeric>(
        of keyPath: KeyPath<T, V?>, where predicate: EntityPredicate<T>? = nil
    ) throws -> Double? {
        try typedAggregate(.average, of: keyPath, where: predicate, as: Double.self)
    }

    /// The number of objects matching `predicate` whose optional attribute is not nil.
    public func count<T: EntityObject, V: AttributeValue>(of keyPath: KeyPath<T, V?>, where predicate: EntityPredicate<T>? = nil) throws -> Int {
        try typedAggregate(.count, of: keyPath, where: predicate, as: Int.self) ?? 0
    }

    /// An aggregate read as `Result` (nil for SQL's NULL): a value that does not fit is a ``StoreError`` naming
    /// the attribute.
    private func typedAggregate<T: EntityObject, V: AttributeValue, Result: AttributeValue>(
        _ function: Aggregate, of keyPath: KeyPath<T, V>, where predicate: EntityPredicate<T>?, as _: Result.Type
    ) throws -> Result? {
        let value = try aggregate(function, of: keyPath, where: predicate)
        if value.isNull { return nil }
        do {
            // SQLite's avg of integers and sum of reals are reals; min and max keep the column's storage.
            if Result.self == Double.self, case .integer(let integer) = value { return try Result(databaseValue: .real(Double(integer))) }
            return try Result(databaseValue: value)
        } catch {
            throw StoreError.valueMismatch(entity: "\(T.self)", field: "\(keyPath)", error)
        }
    }

    /// An aggregate of an attribute per value of another (`GROUP BY`), in the grouping value's order.
    ///
    /// ```swift
    /// let perState = try context.aggregate(.count, of: \Issue.id, groupedBy: \Issue.state)   // [("closed", 3), ("open", 7)]
    /// ```
    public func aggregate<T: EntityObject, V: AttributeValue, G: AttributeValue>(
        _ function: Aggregate, of keyPath: KeyPath<T, V>, groupedBy group: KeyPath<T, G>, where predicate: EntityPredicate<T>? = nil
    ) throws -> [(group: G, value: DatabaseValue)] {
        let mapping = try prepare(T.self)
        let query = try storage.aggregate(function, of: keyPath, mapping, where: predicate, groupedBy: group)
        let statement = try connection.cached(query.sql)
        defer { statement.reset() }
        try statement.bind(query.arguments)
        var result: [(group: G, value: DatabaseValue)] = []
        while try statement.step() {
            do {
                result.append((try G(databaseValue: statement.value(at: 0)), statement.value(at: 1)))
            } catch {
                throw StoreError.valueMismatch(entity: mapping.name, field: "\(group)", error)
            }
        }
        return result
    }

    /// Deletes every object matching `predicate` (all of them when nil) and returns how many objects of the entity
    /// were deleted (with delete rules, those their cascades reached included).
    ///
    /// Objects in memory are deleted as ``delete(_:)`` does, so relationships to them are cleared on both
    /// sides; the other rows are deleted with one statement, and the store's foreign keys clear what points
    /// to them (`SET NULL`, join rows `CASCADE`). The related objects themselves are kept. When the entity declares
    /// ``DeleteRule``s, every matching object is read and deleted as ``delete(_:)`` deletes it, rules applied.
    @discardableResult
    public func deleteAll<T: EntityObject>(_ type: T.Type, where predicate: EntityPredicate<T>? = nil) throws -> Int {
        if isReadOnly { throw StoreError.readOnly("delete") }
        let mapping = try prepare(T.self)
        if mapping.description.deleteRules.values.contains(where: { $0 != .nullify }) {
            // Rules to apply: every matching object is deleted as delete(_:) deletes it.
            let query = try storage.select(mapping, where: predicate)
            let select = try connection.cached(query.sql)
            try select.bind(query.arguments)
            var objects: [any EntityObject] = []
            while try select.step() { objects.append(try object(for: mapping, statement: select)) }
            select.reset()
            let deleted = try deleteApplyingRules(objects)
            try flush()
            return deleted[mapping.index] ?? 0  // the matches, and the objects of the entity their cascades reached
        }
        // Objects in memory first, so that their relationships are cleaned up in memory too.
        let rowIDs = try matchingRowIDs(mapping, where: predicate)
        let count = rowIDs.count
        for rowID in rowIDs {
            if let object = registries[mapping.index][rowID] { try deleteObject(object) }
        }
        try flush()
        try clearStampsReferring(to: mapping.index, rowIDs: rowIDs)
        if !enforcesForeignKeys {
            try storage.clearReferences(to: mapping.index, rowIDs: rowIDs) { try connection.cached($0) }
        }
        let delete = try storage.delete(mapping, where: predicate)
        let statement = try connection.cached(delete.sql)
        try statement.bind(delete.arguments)
        try statement.execute()
        if count > 0 { noteRowsDeletedBySQL(mapping) }
        return count
    }

    /// The row ids of the rows matching `predicate` (every row without one).
    func matchingRowIDs<T>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> [Int64] {
        let query = try storage.rowIDs(mapping, where: predicate)
        let select = try connection.cached(query.sql)
        defer { select.reset() }
        try select.bind(query.arguments)
        var rowIDs: [Int64] = []
        while try select.step() { rowIDs.append(select.int64(at: 0)) }
        return rowIDs
    }

    /// Rows of `mapping`'s entity were deleted by a statement rather than object by object: its observers hear of
    /// it, and so do those of the entities whose foreign keys were set to NULL or whose join rows went.
    func noteRowsDeletedBySQL(_ mapping: EntitySchema) {
        touchedEntities.insert(mapping.index)
        for case let relationship? in mapping.relationships { touchedEntities.insert(relationship.destination) }
    }

    /// Writes pending changes (the query must see them) and returns the entity's schema.
    private func prepare<T: EntityObject>(_ type: T.Type) throws -> EntitySchema {
        try flush()
        return try model.mapping(for: T.self)
    }

    private func scalar(_ query: SQLStorage.Query) throws -> DatabaseValue? {
        let statement = try connection.cached(query.sql)
        defer { statement.reset() }
        try statement.bind(query.arguments)
        guard try statement.step() else { return nil }
        return statement.value(at: 0)
    }
}

extension Context {
    /// The objects matching `predicate`, in `sort` order, as Sendable ``Snapshot`` values (no objects are
    /// made): what a `read` returns to other tasks.
    public func snapshots<T: EntityObject>(
        _ type: T.Type, where predicate: EntityPredicate<T>? = nil, orderBy sort: [Sort<T>] = [], limit: Int? = nil
    ) throws -> [Snapshot<T>] {
        try snapshots(try model.mapping(for: T.self), where: predicate, orderBy: sort, limit: limit)
    }

    /// Snapshots of the objects of the entity named `entity`, described at run time, read by field name
    /// (`snapshot[field: "title"]`).
    public func snapshots(
        entity: String, where predicate: EntityPredicate<RuntimeObject>? = nil, orderBy sort: [Sort<RuntimeObject>] = [],
        limit: Int? = nil
    ) throws -> [Snapshot<RuntimeObject>] {
        try snapshots(try model.mapping(named: entity), where: predicate, orderBy: sort, limit: limit)
    }

    func snapshots<T: EntityObject>(
        _ mapping: EntitySchema, where predicate: EntityPredicate<T>?, orderBy sort: [Sort<T>], limit: Int?
    ) throws -> [Snapshot<T>] {
        try flush()
        let query = try storage.select(mapping, where: predicate, orderBy: sort, limit: limit)
        let statement = try connection.cached(query.sql)
        defer { statement.reset() }
        try statement.bind(query.arguments)
        let names = mapping.description.isRuntime ? mapping.description.fields.map(\.name) : nil
        var rows: [Snapshot<T>] = []
        while try statement.step() {
            let values: [DatabaseValue?] = mapping.columnOfField.map { column in column > 0 ? statement.value(at: column) : nil }
            rows.append(Snapshot(rowID: statement.int64(at: 0), values: values, fieldNames: names))
        }
        return rows
    }

    /// The snapshot of an object (its stored values, with the context's pending changes saved first).
    public func snapshot<T: EntityObject>(of object: T) throws -> Snapshot<T>? {
        try flush()
        let rowID = object.entityState.rowID
        guard rowID != 0 else { return nil }
        return try snapshots(T.self, where: .sql("\"_pk\" = ?", [.integer(rowID)])).first
    }
}
