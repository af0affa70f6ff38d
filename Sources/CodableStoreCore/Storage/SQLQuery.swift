/// Queries: predicates, sorts and key paths rendered as SQL with bound values, in the store's `SQLDialect`.
/// Values are always bound, never spliced into the SQL; names are always quoted.
extension EntityPredicate {
    /// The SQL and arguments of the condition.
    func sql(for mapping: EntitySchema, model: Schema, dialect: any SQLDialect) throws -> (String, [DatabaseValue]) {
        var arguments: [DatabaseValue] = []
        let text = try Self.render(node, mapping, model, dialect, &arguments)
        return (text, arguments)
    }

    /// The destination of the to-one relationship a key path names.
    static func toOneDestination(_ keyPath: KeyPathBox, _ mapping: EntitySchema, _ model: Schema) throws(StoreError) -> EntitySchema {
        guard let field = keyPath.field(in: mapping.description), let relationship = mapping.relationships[field],
            !relationship.description.isToMany
        else {
            throw StoreError(.invalidQuery, "\(keyPath) is not a to-one relationship of \(mapping.name)", entity: mapping.name)
        }
        return model.mappings[relationship.destination]
    }

    private static func column(_ keyPath: KeyPathBox, _ mapping: EntitySchema) throws -> String {
        try mapping.column(for: keyPath)
    }

    private static func render(
        _ node: Node, _ mapping: EntitySchema, _ model: Schema, _ dialect: any SQLDialect, _ arguments: inout [DatabaseValue]
    ) throws -> String {
        switch node {
        case .comparison(let keyPath, let op, let value):
            let column = try column(keyPath, mapping)
            if value.isNull {
                switch op {
                case .equal: return "\(column) IS NULL"
                case .notEqual: return "\(column) IS NOT NULL"
                default: return dialect.falseCondition  // like SQL: an ordering comparison with NULL is never true
                }
            }
            arguments.append(value)
            if op == .notEqual { return "\(column) \(dialect.isDistinctFrom) ?" }
            return "\(column) \(op.rawValue) ?"
        case .membership(let keyPath, let values):
            let column = try column(keyPath, mapping)
            if values.isEmpty { return dialect.falseCondition }
            arguments.append(contentsOf: values)
            return "\(column) IN (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")"
        case .and(let lhs, let rhs):
            return "(\(try render(lhs, mapping, model, dialect, &arguments)) AND \(try render(rhs, mapping, model, dialect, &arguments)))"
        case .or(let lhs, let rhs):
            return "(\(try render(lhs, mapping, model, dialect, &arguments)) OR \(try render(rhs, mapping, model, dialect, &arguments)))"
        case .not(let inner):
            return "NOT (\(try render(inner, mapping, model, dialect, &arguments)))"
        case .sql(let sql, let values):
            arguments.append(contentsOf: values)
            return "(\(sql))"
        case .text(let keyPath, let match, let text, let caseInsensitive):
            var column = try column(keyPath, mapping)
            if text.isEmpty { return "\(column) IS NOT NULL" }
            var parameter = "?"
            if caseInsensitive {
                column = "\(dialect.caseFold)(\(column))"
                parameter = "\(dialect.caseFold)(\(dialect.textParameter))"
            }
            arguments.append(.text(text))
            switch match {
            case .contains: return "\(dialect.position)(\(column), \(parameter)) > 0"
            case .prefix:
                arguments.append(.text(text))
                // The text is bound twice: for `length(?)`, then for the comparison.
                return "\(dialect.part(dialect.prefix, of: column)) = \(parameter)"
            case .suffix:
                arguments.append(.text(text))
                return "\(dialect.part(dialect.suffix, of: column)) = \(parameter)"
            }
        case .through(let keyPath, _, let subquery):
            let foreignKey = try column(keyPath, mapping)
            let destination = try toOneDestination(keyPath, mapping, model)
            let (condition, values) = try subquery.render(destination, model, dialect)
            arguments.append(contentsOf: values)
            return "\(foreignKey) IN (SELECT \"_pk\" FROM \(quoteIdentifier(destination.name)) WHERE \(condition))"
        case .members(let keyPath, let destinationType, let subquery, let any):
            // The owners of matching members, as a subquery that does not refer to the outer row (so that a
            // relationship of an entity to itself needs no aliases).
            let owners = try ownersOfMembers(keyPath, destinationType, subquery, mapping, model, dialect, &arguments)
            return "\"_pk\" \(any ? "IN" : "NOT IN") (\(owners))"
        case .memberCount(let keyPath, let destinationType, let subquery, let op, let number):
            let owners = try ownersOfMembers(keyPath, destinationType, subquery, mapping, model, dialect, &arguments)
            let counted = "(SELECT count(*) FROM (\(owners)) AS \"owners\" WHERE \"owner\" = \(quoteIdentifier(mapping.name)).\"_pk\")"
            arguments.append(.integer(Int64(number)))
            return "\(counted) \(op.rawValue) ?"
        }
    }

    /// `SELECT <owner> AS "owner" FROM …`: the row id of the owner of every member of the to-many
    /// relationship that matches the condition (one row per membership; never NULL).
    private static func ownersOfMembers(
        _ keyPath: KeyPathBox, _ destinationType: any EntityObject.Type, _ subquery: SubqueryBox?, _ mapping: EntitySchema,
        _ model: Schema, _ dialect: any SQLDialect, _ arguments: inout [DatabaseValue]
    ) throws -> String {
        guard let field = keyPath.field(in: mapping.description), let relationship = mapping.relationships[field],
            relationship.description.isToMany
        else {
            throw StoreError(.invalidQuery, "\(keyPath) is not a to-many relationship of \(mapping.name)", entity: mapping.name)
        }
        let destination = model.mappings[relationship.destination]
        var members = "SELECT \"_pk\" FROM \(quoteIdentifier(destination.name))"
        if let subquery {
            let (condition, values) = try subquery.render(destination, model, dialect)
            arguments.append(contentsOf: values)
            members += " WHERE \(condition)"
        }
        switch relationship.storage {
        case .inverseForeignKey(let column, _):
            let foreignKey = quoteIdentifier(column)
            // The members themselves carry the owner; without a condition, every member with an owner.
            var sql = "SELECT \(foreignKey) AS \"owner\" FROM \(quoteIdentifier(destination.name)) WHERE \(foreignKey) IS NOT NULL"
            if subquery != nil { sql += " AND \"_pk\" IN (\(members))" }
            return sql
        case .joinTable(let index, let ownerIsSource):
            let table = quoteIdentifier(model.joinTables[index].name)
            let (owner, member) = ownerIsSource ? ("\"source\"", "\"target\"") : ("\"target\"", "\"source\"")
            var sql = "SELECT \(owner) AS \"owner\" FROM \(table)"
            if subquery != nil { sql += " WHERE \(member) IN (\(members))" }
            return sql
        case .foreignKey:
            throw StoreError(.invalidQuery, "\(keyPath) is not a to-many relationship of \(mapping.name)", entity: mapping.name)
        }
    }
}

extension Sort {
    /// The ORDER BY clause of the keys (then the row id, so that the order is stable).
    static func orderBy(_ keys: [Sort], _ mapping: EntitySchema, model: Schema, dialect: any SQLDialect) throws(StoreError) -> String {
        var terms: [String] = []
        for key in keys {
            var term = try mapping.column(for: key.keyPath)
            if let (field, _) = key.destinationKeyPath {
                // The destination's field, read by the row's foreign key (NULL where the relationship is not set:
                // first in ascending order, as SQLite sorts NULL).
                let destination = try EntityPredicate<Root>.toOneDestination(key.keyPath, mapping, model)
                let column = try destination.column(for: field)
                term = "(SELECT \(column) FROM \(quoteIdentifier(destination.name)) AS \"codablestore_sort\" "
                    + "WHERE \"codablestore_sort\".\"_pk\" = \(quoteIdentifier(mapping.name)).\(term))"
            }
            terms.append(dialect.order(term, ascending: key.ascending))
        }
        terms.append("\"_pk\"")
        return " ORDER BY " + terms.joined(separator: ", ")
    }
}

extension EntitySchema {
    /// The quoted column of the attribute or to-one relationship a key path names.
    func column(for keyPath: KeyPathBox) throws(StoreError) -> String {
        guard let field = keyPath.field(in: description), let column = columnNameOfField[field] else {
            throw StoreError(
                .invalidQuery, "\(keyPath) is not a stored attribute or to-one relationship of \(name)", entity: name)
        }
        return quoteIdentifier(column)
    }
}

extension SQLStorage {
    /// A statement over an entity's rows: its SQL and the values it binds.
    struct Query {
        var sql: String
        var arguments: [DatabaseValue]
    }

    /// `prefix`, then ` WHERE …` for `predicate` (nothing without one), then `suffix`, with the predicate's arguments.
    private func filtered<T>(
        _ prefix: String, _ predicate: EntityPredicate<T>?, _ mapping: EntitySchema, suffix: String = ""
    ) throws -> Query {
        guard let predicate else { return Query(sql: prefix + suffix, arguments: []) }
        let (condition, arguments) = try predicate.sql(for: mapping, model: model, dialect: dialect)
        return Query(sql: prefix + " WHERE " + condition + suffix, arguments: arguments)
    }

    /// The entity's rows (row id first, then the columns of ``SQLStorage/selectSQL(_:)``) matching `predicate`, in
    /// `sort` order then by row id; `LIMIT`/`OFFSET` when either is given.
    func select<T>(
        _ mapping: EntitySchema, where predicate: EntityPredicate<T>?, orderBy sort: [Sort<T>] = [], limit: Int? = nil,
        offset: Int? = nil
    ) throws -> Query {
        var query = try filtered(selectSQL(mapping), predicate, mapping, suffix: try Sort.orderBy(sort, mapping, model: model, dialect: dialect))
        if limit != nil || offset != nil {
            query.sql += " LIMIT ? OFFSET ?"
            query.arguments.append(limit.map { .integer(Int64($0)) } ?? dialect.noLimit)
            query.arguments.append(.integer(Int64(offset ?? 0)))
        }
        return query
    }

    /// 1 when a row matches `predicate`, else 0.
    func exists<T>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> Query {
        try filtered("SELECT EXISTS (SELECT 1 FROM \(quoteIdentifier(mapping.name))", predicate, mapping, suffix: ")")
    }

    /// The number of the entity's rows matching `predicate`.
    func count<T>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> Query {
        try filtered("SELECT count(*) FROM \(quoteIdentifier(mapping.name))", predicate, mapping)
    }

    /// `function` of an attribute over the rows matching `predicate`; per value of `group`, in its order, when given.
    func aggregate<T>(
        _ function: Context.Aggregate, of keyPath: AnyKeyPath, _ mapping: EntitySchema, where predicate: EntityPredicate<T>?,
        groupedBy group: AnyKeyPath? = nil
    ) throws -> Query {
        let column = try mapping.column(for: KeyPathBox(keyPath))
        let table = quoteIdentifier(mapping.name)
        var affinity: String?
        if let field = mapping.description.fieldIndex(for: keyPath), case .attribute(let attribute) = mapping.description.fields[field] {
            affinity = attribute.type.affinity
        }
        let call = dialect.aggregate(function.rawValue, column, affinity: affinity)
        guard let group else { return try filtered("SELECT \(call) FROM \(table)", predicate, mapping) }
        let groupColumn = try mapping.column(for: KeyPathBox(group))
        return try filtered(
            "SELECT \(groupColumn), \(call) FROM \(table)", predicate, mapping,
            suffix: " GROUP BY \(groupColumn) ORDER BY \(dialect.order(groupColumn, ascending: true))")
    }

    /// The row ids of the rows matching `predicate`.
    func rowIDs<T>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> Query {
        try filtered("SELECT \"_pk\" FROM \(quoteIdentifier(mapping.name))", predicate, mapping)
    }

    /// A page of the row ids matching `predicate`, in row id order: bind the row id to start after, the last row
    /// id to read, then `arguments` (the predicate's), then the page's size.
    func rowIDPage<T>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> Query {
        var sql = "SELECT \"_pk\" FROM \(quoteIdentifier(mapping.name)) WHERE \"_pk\" > ? AND \"_pk\" <= ?"
        var arguments: [DatabaseValue] = []
        if let predicate {
            let (condition, predicateArguments) = try predicate.sql(for: mapping, model: model, dialect: dialect)
            sql += " AND (\(condition))"
            arguments = predicateArguments
        }
        return Query(sql: sql + " ORDER BY \"_pk\" LIMIT ?", arguments: arguments)
    }

    /// Deletes the rows of `count` row ids (bound in order; a repeated one is deleted once).
    func deleteByRowIDs(_ mapping: EntitySchema, count: Int) -> String {
        "DELETE FROM \(quoteIdentifier(mapping.name)) WHERE \"_pk\" IN (" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }

    /// Sets the columns of `fields` (attributes) on the rows matching `predicate`, and clears their stamps: the new
    /// values are bound first, in order, then the predicate's arguments.
    func updateAll<T>(_ mapping: EntitySchema, fields: [Int], where predicate: EntityPredicate<T>?) throws -> Query {
        // A row changed outside a record's import keeps no stamp of one (see RowStamps).
        let columns = fields.map { field in quoteIdentifier(mapping.columnNameOfField[field]!) + " = ?" }
            + (storesStamps ? ["\"_digest\" = NULL"] : [])
        return try filtered("UPDATE \(quoteIdentifier(mapping.name)) SET " + columns.joined(separator: ", "), predicate, mapping)
    }

    /// Deletes the rows matching `predicate` (every row without one).
    func delete<T>(_ mapping: EntitySchema, where predicate: EntityPredicate<T>?) throws -> Query {
        try filtered("DELETE FROM \(quoteIdentifier(mapping.name))", predicate, mapping)
    }

    /// The row of one identity (its values bound in identity order).
    func selectByIdentity(_ mapping: EntitySchema) -> String {
        selectSQL(mapping) + " WHERE " + mapping.identityColumns.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
    }

    /// One row of the entity's table, if it has any.
    func anyRow(_ mapping: EntitySchema) -> String {
        "SELECT 1 FROM \(quoteIdentifier(mapping.name)) LIMIT 1"
    }

    /// The largest row id of the entity's table (0 when it is empty): new objects' row ids follow it.
    func largestRowID(_ mapping: EntitySchema) -> String {
        "SELECT coalesce(max(\"_pk\"), 0) FROM \(quoteIdentifier(mapping.name))"
    }

    /// The row with one row id.
    func selectByRowID(_ mapping: EntitySchema) -> String {
        selectSQL(mapping) + " WHERE \"_pk\" = ?"
    }

    /// The rows of `count` row ids (bound in order; a repeated one reads its row once).
    func selectByRowIDs(_ mapping: EntitySchema, count: Int) -> String {
        selectSQL(mapping) + " WHERE \"_pk\" IN (" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }
}
