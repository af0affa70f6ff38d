/// Fetching objects: by identity, by row id, with a predicate, sort, limit and offset; counting.
extension Context {
    /// Objects of an entity matching `predicate`, in `orderBy` order (then by row id, so the order is stable).
    ///
    /// ```swift
    /// let adults = try context.fetch(Person.self, where: \.age >= 18, orderBy: [.ascending(\.name)], limit: 20)
    /// ```
    /// Objects already in the context are returned as they are in memory (their unsaved changes included);
    /// pending changes are written first, so the query sees them.
    public func fetch<T: EntityObject>(
        _ type: T.Type,
        where predicate: EntityPredicate<T>? = nil,
        orderBy sort: [Sort<T>] = [],
        limit: Int? = nil,
        offset: Int? = nil
    ) throws -> [T] {
        try fetch(try model.mapping(for: T.self), where: predicate, orderBy: sort, limit: limit, offset: offset)
    }

    func fetch<T: EntityObject>(
        _ mapping: EntitySchema, where predicate: EntityPredicate<T>?, orderBy sort: [Sort<T>], limit: Int?, offset: Int?
    ) throws -> [T] {
        try flush()
        let query = try storage.select(mapping, where: predicate, orderBy: sort, limit: limit, offset: offset)
        let statement = try connection.cached(query.sql)
        defer { statement.reset() }
        try statement.bind(query.arguments)
        var result: [T] = []
        while try statement.step() {
            result.append(unsafeDowncast(try object(for: mapping, statement: statement), to: T.self))
        }
        return result
    }

    /// The first object matching `predicate` in `orderBy` order.
    public func first<T: EntityObject>(
        _ type: T.Type, where predicate: EntityPredicate<T>? = nil, orderBy sort: [Sort<T>] = []
    ) throws -> T? {
        try fetch(type, where: predicate, orderBy: sort, limit: 1).first
    }

    /// The number of objects matching `predicate`, pending changes included.
    public func count<T: EntityObject>(_ type: T.Type, where predicate: EntityPredicate<T>? = nil) throws -> Int {
        try count(try model.mapping(for: T.self), where: predicate)
    }

    func count<T: EntityObject>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> Int {
        try flush()
        let query = try storage.count(mapping, where: predicate)
        let statement = try connection.cached(query.sql)
        defer { statement.reset() }
        try statement.bind(query.arguments)
        _ = try statement.step()
        return Int(statement.int64(at: 0))
    }

    /// The object with this identity (single-attribute identity).
    ///
    /// ```swift
    /// let ada = try context.object(Person.self, identity: 1)
    /// ```
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidObject`` if the entity has no identity or a
    ///   composite one.
    public func object<T: EntityObject, V: AttributeValue>(_ type: T.Type, identity value: V) throws -> T? {
        try object(type, identityValues: [value.databaseValue])
    }

    /// The object with this composite identity, values in the order of the identity's key paths.
    ///
    /// ```swift
    /// let membership = try context.object(Membership.self, identity: ["team-a", 42])
    /// ```
    public func object<T: EntityObject>(_ type: T.Type, identity values: [any AttributeValue]) throws -> T? {
        try object(type, identityValues: values.map(\.databaseValue))
    }

    func object<T: EntityObject>(_ type: T.Type, identityValues values: [DatabaseValue]) throws -> T? {
        try object(try model.mapping(for: T.self), identityValues: values).map { unsafeDowncast($0, to: T.self) }
    }

    func object(_ mapping: EntitySchema, identityValues values: [DatabaseValue]) throws -> (any EntityObject)? {
        guard !mapping.identityColumns.isEmpty else {
            throw StoreError(.invalidObject, "\(mapping.name) has no identity; fetch it with a predicate", entity: mapping.name)
        }
        guard values.count == mapping.identityColumns.count else {
            throw StoreError(
                .invalidObject,
                "\(mapping.name)'s identity has \(mapping.identityColumns.count) attribute(s) (\(mapping.identityColumns.joined(separator: ", "))) but \(values.count) value(s) were given",
                entity: mapping.name)
        }
        try flush()
        let statement = try connection.cached(storage.selectByIdentity(mapping))
        defer { statement.reset() }
        try statement.bind(values)
        guard try statement.step() else { return nil }
        return try object(for: mapping, statement: statement)
    }

    /// The object stored in this row, if it exists.
    public func object<T: EntityObject>(_ type: T.Type, rowID: Int64) throws -> T? {
        let mapping = try model.mapping(for: T.self)
        try flush()
        return try object(entity: mapping.index, rowID: rowID).map { unsafeDowncast($0, to: T.self) }
    }
}
