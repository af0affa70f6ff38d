/// The SQL side of the storage seam: every statement the context needs, built once per store from its model in
/// the backend's ``SQLDialect`` — how each step of a ``WritePlan`` runs (`StepWriter` hands steps to the dialect's
/// gatherer where it has one), identity lookups and membership loads (here), queries (SQLQuery.swift). The context
/// decides what changes and what to read (entities, fields, row ids, values, predicates); only this type and the
/// dialect know how the database says it.
package final class SQLStorage: Sendable {
    package let model: Schema
    package let dialect: any SQLDialect
    /// ``SQLDialect/storesStamps``, read once: saves ask it for every row they write.
    package let storesStamps: Bool
    private let entities: [EntityStatements]
    private let joinTables: [JoinStatements]
    /// UPDATE statements by entity and changed fields, made on first use.
    private let updates = Locked<[UpdateKey: String]>([:])
    /// Identity lookup statements by entity and number of identities, made on first use.
    private let lookups = Locked<[LookupKey: String]>([:])
    /// ``stampClearing(of:referringTo:)`` by entity and destination, made on first use.
    private let stampClearings = Locked<[StampClearingKey: [String]]>([:])

    /// The statements of one entity's table.
    private struct EntityStatements: Sendable {
        /// What an insert writes: `_pk`, the entity's insert columns, and `_digest` where the dialect stores stamps.
        let insertColumns: [String]
        /// `SELECT "_pk", … FROM "T"`: a stored row, the row id then the insert columns.
        let select: String
        /// ``select`` with the `_digest` column last (see ``SQLDialect/storesStamps``).
        let selectWithStamp: String
        /// The column list of ``select`` qualified with the table name, for joins.
        let qualifiedColumns: String
        /// `INSERT OR FAIL INTO "T" ("_pk", …) VALUES (?, …)` for one row, and for ``EntitySchema/insertBatchRows``.
        let insert: String
        let insertBatch: String
        let delete: String
        /// What the foreign keys' `ON DELETE` actions do for deleted rows of the entity, for connections that do not
        /// enforce them (see ``clearReferences(to:rowIDs:statements:)``): each statement with one row id, and with
        /// ``referenceChunk`` of them.
        let clearReferences: [(one: String, chunk: String)]
        /// `UPDATE "T" SET "_digest" = NULL WHERE "_pk" = ?` (see ``SQLDialect/storesStamps``).
        let clearStamp: String
    }

    /// Row ids per statement when the references to many deleted rows are cleared (and when the context loads or
    /// deletes rows by row id: ``Context/membershipChunk``).
    static let referenceChunk = 256

    /// The statements of one join table.
    private struct JoinStatements: Sendable {
        /// `INSERT … (source, target[, position]) VALUES (?, ?[, ?])` for one row and for ``JoinTable/linkBatchRows``
        /// rows; a link that exists takes the new position.
        let link: String
        let linkBatch: String
        /// `(source, target, source)`: a new link goes after the source's last one, an existing link keeps its
        /// position.
        let appendLink: String
        /// `(position, source, target)`.
        let setPosition: String
        /// `(source, target)`.
        let unlink: String
    }

    private struct LookupKey: Hashable {
        let entity: Int
        let rows: Int
        let withStamp: Bool
    }

    private struct StampClearingKey: Hashable {
        let entity: Int
        let destination: Int
    }

    private struct UpdateKey: Hashable {
        let entity: Int
        let fields: [Int]
    }

    init(model: Schema, dialect: any SQLDialect = SQLiteDialect()) {
        self.model = model
        self.dialect = dialect
        let storesStamps = dialect.storesStamps
        self.storesStamps = storesStamps
        entities = model.mappings.map { mapping in
            let table = quoteIdentifier(mapping.name)
            let columns = ["_pk"] + mapping.columns[..<mapping.insertColumnCount].map(\.name)
                + (storesStamps ? ["_digest"] : [])
            // OR FAIL: a failing multi-row INSERT keeps the rows before the failure instead of undoing itself, so
            // SQLite needs no statement journal (a copy of every page each statement touches, spilled to a
            // temporary file past 64 KiB). Every flush runs in a savepoint or in a transaction that a failure rolls
            // back, so nothing partial survives.
            let prefix = dialect.insertInto + " \(table) (" + columns.map(quoteIdentifier).joined(separator: ", ") + ") VALUES "
            let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
            let selected = columns.prefix(mapping.insertColumnCount + 1)
            return EntityStatements(
                insertColumns: columns,
                select: "SELECT " + selected.map(quoteIdentifier).joined(separator: ", ") + " FROM " + table,
                selectWithStamp: "SELECT " + selected.map(quoteIdentifier).joined(separator: ", ") + ", \"_digest\" FROM " + table,
                qualifiedColumns: selected.map { table + "." + quoteIdentifier($0) }.joined(separator: ", "),
                insert: prefix + row,
                insertBatch: prefix + Array(repeating: row, count: EntitySchema.insertBatchRows).joined(separator: ", "),
                delete: "DELETE FROM \(table) WHERE \"_pk\" = ?",
                clearReferences: Self.referenceClearing(to: mapping.index, in: model),
                clearStamp: "UPDATE \(table) SET \"_digest\" = NULL WHERE \"_pk\" = ?")
        }
        joinTables = model.joinTables.map { join in
            let table = quoteIdentifier(join.name)
            let prefix: String
            let row: String
            let upsert: String
            if join.hasPosition {
                prefix = dialect.insertInto + " \(table) (\"source\", \"target\", \"position\") VALUES "
                row = "(?, ?, ?)"
                upsert = " ON CONFLICT (\"source\", \"target\") DO UPDATE SET \"position\" = excluded.\"position\""
            } else {
                // No position to keep up to date: a link that exists stays as it is.
                prefix = dialect.insertInto + " \(table) (\"source\", \"target\") VALUES "
                row = "(?, ?)"
                upsert = " ON CONFLICT (\"source\", \"target\") DO NOTHING"
            }
            return JoinStatements(
                link: prefix + row + upsert,
                linkBatch: prefix + Array(repeating: row, count: JoinTable.linkBatchRows).joined(separator: ", ") + upsert,
                appendLink: prefix + "(?, ?, (SELECT coalesce(max(\"position\") + 1, 0) FROM \(table) WHERE \"source\" = ?)) "
                    + "ON CONFLICT (\"source\", \"target\") DO NOTHING",
                setPosition: "UPDATE \(table) SET \"position\" = ? WHERE \"source\" = ? AND \"target\" = ?",
                unlink: "DELETE FROM \(table) WHERE \"source\" = ? AND \"target\" = ?")
        }
    }

    /// The statements that do for deleted rows of `entity` what the schema's foreign keys do on delete: links in
    /// join tables deleted (`ON DELETE CASCADE`), foreign keys of rows that refer to them set to NULL
    /// (`ON DELETE SET NULL`).
    private static func referenceClearing(to entity: Int, in model: Schema) -> [(one: String, chunk: String)] {
        var statements: [(prefix: String, column: String)] = []
        for join in model.joinTables {
            if join.source == entity { statements.append(("DELETE FROM \(quoteIdentifier(join.name))", "source")) }
            if join.target == entity { statements.append(("DELETE FROM \(quoteIdentifier(join.name))", "target")) }
        }
        for mapping in model.mappings {
            for column in mapping.columns {
                guard case .foreignKey(_, let destination) = column.kind, destination == entity else { continue }
                let name = quoteIdentifier(column.name)
                statements.append(("UPDATE \(quoteIdentifier(mapping.name)) SET \(name) = NULL", column.name))
            }
        }
        let chunk = Array(repeating: "?", count: referenceChunk).joined(separator: ", ")
        return statements.map { prefix, column in
            let name = quoteIdentifier(column)
            return ("\(prefix) WHERE \(name) = ?", "\(prefix) WHERE \(name) IN (\(chunk))")
        }
    }

    /// Clears what refers to rows of `entity` that are deleted, as the foreign keys' `ON DELETE` actions would: for a
    /// connection that does not enforce them (an import turns them off: see `Importer`), before or after the rows
    /// go, in the same transaction.
    func clearReferences(to entity: Int, rowIDs: [Int64], statements: (String) throws -> any DatabaseStatement) throws {
        guard !rowIDs.isEmpty else { return }
        for (one, chunk) in entities[entity].clearReferences {
            if rowIDs.count == 1 {
                let statement = try statements(one)
                try statement.bind(rowIDs[0], at: 1)
                try statement.execute()
            } else {
                try statements(chunk).run(rowIDs: rowIDs, slots: Self.referenceChunk) { _ in }
            }
        }
    }

    /// `SELECT "_pk", … FROM "T"`: every read of an entity's rows starts so (``EntitySchema/columnOfField`` maps
    /// fields to its columns).
    func selectSQL(_ mapping: EntitySchema) -> String { entities[mapping.index].select }

    /// The columns of ``selectSQL(_:)`` qualified with the table's name (`"T"."_pk", "T"."a", …`), for joins.
    package func qualifiedColumns(of entity: Int) -> String { entities[entity].qualifiedColumns }

    /// Runs one step, with statements from `statements` (cached for the connection they belong to). With
    /// `clearsReferences` (the connection does not enforce foreign keys), a delete also clears what refers to the row.
    func run(
        _ step: WritePlan.Step, clearsReferences: Bool = false, statements: (String) throws -> any DatabaseStatement
    ) throws {
        switch step {
        case .delete(let entity, let rowID):
            if clearsReferences { try clearReferences(to: entity, rowIDs: [rowID], statements: statements) }
            let statement = try statements(entities[entity].delete)
            try statement.bind(rowID, at: 1)
            try statement.execute()
        case .insert(let entity, let rows, let values):
            let statement = try statements(rows == 1 ? entities[entity].insert : entities[entity].insertBatch)
            try statement.bind(values[...], from: 1)
            do {
                try statement.execute()
            } catch let error where dialect.isUniqueViolation(error) {
                throw try insertConflict(model.mappings[entity], rows: rows, values: values, error, statements: statements)
            }
        case .update(let entity, let fields, let values):
            let statement = try statements(updateSQL(entity, fields))
            try statement.bind(values[...], from: 1)
            do {
                try statement.execute()
            } catch let error where dialect.isUniqueViolation(error) {
                throw try updateConflict(model.mappings[entity], fields: fields, values: values, error, statements: statements)
            }
        case .setOrder(let entity, let orderColumn, let rowID, let position):
            let sql = "UPDATE \(quoteIdentifier(model.mappings[entity].name)) SET \(quoteIdentifier(orderColumn)) = ? WHERE \"_pk\" = ?"
            try execute(statements(sql), position.map(DatabaseValue.integer) ?? .null, .integer(rowID))
        case .link(let table, let rows, let values):
            let statement = try statements(rows == 1 ? joinTables[table].link : joinTables[table].linkBatch)
            try statement.bind(values[...], from: 1)
            try statement.execute()
        case .appendLink(let table, let source, let target):
            try execute(statements(joinTables[table].appendLink), .integer(source), .integer(target), .integer(source))
        case .setLinkPosition(let table, let source, let target, let position):
            try execute(statements(joinTables[table].setPosition), .integer(position), .integer(source), .integer(target))
        case .unlink(let table, let source, let target):
            let statement = try statements(joinTables[table].unlink)
            try statement.bind(source, at: 1)
            try statement.bind(target, at: 2)
            try statement.execute()
        case .clearStamp(let entity, let rowID):
            let statement = try statements(entities[entity].clearStamp)
            try statement.bind(rowID, at: 1)
            try statement.execute()
        case .clearStampsReferring(let entity, let destination, let rowID):
            for sql in stampClearing(of: entity, referringTo: destination) {
                let statement = try statements(sql)
                try statement.bind(rowID, at: 1)
                try statement.execute()
            }
        }
    }

    /// The columns of an inserted row, in the order of its values (see ``insertWidth(_:)``): `_pk`, the entity's
    /// insert columns, then `_digest` where the dialect stores stamps.
    package func insertColumns(_ entity: Int) -> [String] { entities[entity].insertColumns }

    /// The values an insert step has per row: the row id, the insert columns, and the stamp where the dialect
    /// stores them.
    package func insertWidth(_ entity: Int) -> Int {
        model.mappings[entity].insertColumnCount + 1 + (storesStamps ? 1 : 0)
    }

    /// Statements that clear the stamps of `entity`'s rows that refer to a row of `destination` (bound as the one
    /// parameter), by a foreign key or a link: that row is about to be deleted, which changes them without an update
    /// of theirs (the foreign key's `ON DELETE SET NULL`, the links' cascade).
    func stampClearing(of entity: Int, referringTo destination: Int) -> [String] {
        let key = StampClearingKey(entity: entity, destination: destination)
        if let statements = stampClearings.withLock({ $0[key] }) { return statements }
        let statements = stampClearing(of: entity, referringTo: destination, rowID: "?")
        stampClearings.withLock { $0[key] = statements }
        return statements
    }

    /// ``stampClearing(of:referringTo:)`` with `rowID` (an SQL expression) as the deleted row's id: `?`, or
    /// `OLD."_pk"` in a trigger (see ``StampGuards``).
    func stampClearing(of entity: Int, referringTo destination: Int, rowID: String) -> [String] {
        let mapping = model.mappings[entity]
        let table = quoteIdentifier(mapping.name)
        var statements: [String] = []
        for column in mapping.columns {
            guard case .foreignKey(_, destination) = column.kind else { continue }
            statements.append("UPDATE \(table) SET \"_digest\" = NULL WHERE \(quoteIdentifier(column.name)) = \(rowID)")
        }
        for join in model.joinTables {
            let name = quoteIdentifier(join.name)
            if join.source == entity, join.target == destination {
                statements.append("UPDATE \(table) SET \"_digest\" = NULL WHERE \"_pk\" IN (SELECT \"source\" FROM \(name) WHERE \"target\" = \(rowID))")
            }
            if join.target == entity, join.source == destination {
                statements.append("UPDATE \(table) SET \"_digest\" = NULL WHERE \"_pk\" IN (SELECT \"target\" FROM \(name) WHERE \"source\" = \(rowID))")
            }
        }
        return statements
    }

    /// `UPDATE "T" SET "a" = ?, …[, "_digest" = ?] WHERE "_pk" = ?` for these fields.
    private func updateSQL(_ entity: Int, _ fields: [Int]) -> String {
        let key = UpdateKey(entity: entity, fields: fields)
        if let sql = updates.withLock({ $0[key] }) { return sql }
        let mapping = model.mappings[entity]
        let assignments = fields.map { "\(quoteIdentifier(mapping.columnNameOfField[$0]!)) = ?" }
            + (storesStamps ? ["\"_digest\" = ?"] : [])
        let sql = "UPDATE \(quoteIdentifier(mapping.name)) SET " + assignments.joined(separator: ", ") + " WHERE \"_pk\" = ?"
        updates.withLock { $0[key] = sql }
        return sql
    }

    /// Binds and runs a statement of the rare steps (positions).
    private func execute(_ statement: any DatabaseStatement, _ values: DatabaseValue...) throws {
        try statement.bind(values[...], from: 1)
        try statement.execute()
    }

    // MARK: - Lookups

    /// The sizes of identity lookup statements, in identities: a lookup of n identities runs the smallest that
    /// holds them (the largest, repeatedly, beyond), so that a batch is one query, few statements are prepared
    /// per entity, and few slots are filled in vain (see `Statement/run(chunksOf:slots:bind:row:)`).
    static let lookupSizes = [16, 64, 256, 1_024, 4_096]

    /// Identities per lookup statement for a lookup of `count` identities of `entity`, within SQLite's limit on
    /// parameters.
    func lookupRowsPerStatement(for count: Int, entity: Int, maximumVariableCount: Int) -> Int {
        let limit = max(1, maximumVariableCount / max(1, model.mappings[entity].identityColumns.count))
        let size = Self.lookupSizes.first { $0 >= count } ?? Self.lookupSizes.last!
        return min(size, limit)
    }

    /// The entity's `SQLStorage.selectSQL(_:)` for the rows of `rows` identities (cached: a composite lookup of 4,096 is 40 KB
    /// of SQL).
    func lookupSQL(rows: Int, entity: Int, withStamp: Bool = false) -> String {
        let key = LookupKey(entity: entity, rows: rows, withStamp: withStamp)
        if let cached = lookups.withLock({ $0[key] }) { return cached }
        let mapping = model.mappings[entity]
        let columns = mapping.identityColumns.map(quoteIdentifier)
        let condition: String
        if columns.count == 1 {
            condition = "\(columns[0]) IN (" + Array(repeating: "?", count: rows).joined(separator: ", ") + ")"
        } else {
            // A backend may not infer the type of a parameter in VALUES: the dialect may give each its column's type.
            let placeholders = mapping.identityColumns.map { name in
                mapping.columns.first(where: { $0.name == name }).map { dialect.valuesParameter(for: $0) } ?? "?"
            }
            let row = "(" + placeholders.joined(separator: ", ") + ")"
            condition = "(" + columns.joined(separator: ", ") + ") IN (VALUES "
                + Array(repeating: row, count: rows).joined(separator: ", ") + ")"
        }
        // The stamp after the usual columns: a row whose stamp matches is not read further.
        let select = withStamp ? entities[entity].selectWithStamp : selectSQL(mapping)
        let sql = select + " WHERE " + condition
        lookups.withLock { $0[key] = sql }
        return sql
    }

    /// The lookup of a list of identities bound as one parameter, where the dialect has one for the entity's identity
    /// (``SQLDialect/listCondition(for:)``).
    private func listLookupSQL(entity: Int, withStamp: Bool) -> String? {
        let mapping = model.mappings[entity]
        guard mapping.identityColumns.count == 1 else { return nil }
        // Rows 0: the key of the list form (an IN list has at least one row).
        let key = LookupKey(entity: entity, rows: 0, withStamp: withStamp)
        if let cached = lookups.withLock({ $0[key] }) { return cached }
        guard let column = mapping.columns.first(where: { $0.name == mapping.identityColumns[0] }),
            let condition = dialect.listCondition(for: column)
        else { return nil }
        let sql = (withStamp ? entities[entity].selectWithStamp : selectSQL(mapping)) + " WHERE " + condition
        lookups.withLock { $0[key] = sql }
        return sql
    }

    /// The lookup of the identities between two bound values (``IdentityRanges``).
    private func rangeLookupSQL(entity: Int, withStamp: Bool) -> String {
        // Rows -1: the key of the range form.
        let key = LookupKey(entity: entity, rows: -1, withStamp: withStamp)
        if let cached = lookups.withLock({ $0[key] }) { return cached }
        let mapping = model.mappings[entity]
        let sql = (withStamp ? entities[entity].selectWithStamp : selectSQL(mapping))
            + " WHERE \(quoteIdentifier(mapping.identityColumns[0])) BETWEEN ? AND ?"
        lookups.withLock { $0[key] = sql }
        return sql
    }

    /// Looks up the stored rows of `keys` with the statement of their size, calling `row` on each row found (the
    /// row id, then the columns of ``SQLStorage/selectSQL(_:)``, then with `withStamp` the `_digest` column).
    package func lookUp(
        _ keys: [Context.IdentityKey], entity: Int, maximumVariableCount: Int, withStamp: Bool = false,
        statements: (String) throws -> any DatabaseStatement, row: (any DatabaseStatement) throws -> Void
    ) throws {
        guard !keys.isEmpty else { return }
        var keys = keys
        if let ranges = IdentityRanges(keys) {
            // Dense runs of integer identities (an API dump's new records, in id order) by range: one descent of the
            // index instead of one per key. Rows of the range that were not asked for are passed over.
            let statement = try statements(rangeLookupSQL(entity: entity, withStamp: withStamp))
            let column = Int32(1 + model.mappings[entity].columns.firstIndex { $0.name == model.mappings[entity].identityColumns[0] }!)
            for run in ranges.runs {
                try statement.bind(.integer(run.first!), at: 1)
                try statement.bind(.integer(run.last!), at: 2)
                defer { statement.reset() }
                while try statement.step() {
                    if run.contains(sorted: statement.int64(at: column)) { try row(statement) }
                }
            }
            keys = ranges.others
            if keys.isEmpty { return }
        }
        if let sql = listLookupSQL(entity: entity, withStamp: withStamp) {
            try runWithList(try statements(sql), keys, row: row) { key, values in key.forEach { values.append($0) } }
            return
        }
        let rows = lookupRowsPerStatement(for: keys.count, entity: entity, maximumVariableCount: maximumVariableCount)
        let statement = try statements(lookupSQL(rows: rows, entity: entity, withStamp: withStamp))
        try statement.run(chunksOf: keys, slots: rows) { statement, key, parameter in
            try key.forEach { value in
                try statement.bind(value, at: parameter)
                parameter += 1
            }
        } row: { try row($0) }
    }

    /// The members of a to-many relationship for `owners` owners (bound as row ids): each row is the owner's
    /// row id followed by the destination's columns, in the relationship's order. In the dialect's words
    /// (``SQLDialect/membershipSQL(_:owners:storage:)``).
    package func membershipSQL(_ relationship: ResolvedRelationship, owners: Int) -> String {
        dialect.membershipSQL(relationship, owners: owners, storage: self)
    }

    /// Runs the membership query of `relationship` for the owners of `rowIDs` (each once), calling `row` on each row
    /// (the owner's row id, then the destination's columns): with one list parameter per statement where the dialect
    /// has one (``SQLDialect/membershipListSQL(_:storage:)``), else ``Context/membershipChunk`` owners a statement.
    package func loadMembers(
        _ relationship: ResolvedRelationship, of rowIDs: [Int64], statements: (String) throws -> any DatabaseStatement,
        row: (any DatabaseStatement) throws -> Void
    ) throws {
        guard !rowIDs.isEmpty else { return }
        guard let sql = dialect.membershipListSQL(relationship, storage: self) else {
            let statement = try statements(membershipSQL(relationship, owners: Context.membershipChunk))
            try statement.run(rowIDs: rowIDs, slots: Context.membershipChunk, row: row)
            return
        }
        try runWithList(try statements(sql), rowIDs, row: row) { rowID, values in values.append(.integer(rowID)) }
    }

    /// Runs `statement`, whose one parameter is a list (``SQLDialect/listParameter(_:)``), for the values `append`
    /// makes of `elements`, up to the largest lookup size of elements a run, calling `row` on each row.
    private func runWithList<Element>(
        _ statement: any DatabaseStatement, _ elements: [Element], row: (any DatabaseStatement) throws -> Void,
        append: (Element, inout [DatabaseValue]) -> Void
    ) throws {
        let size = Self.lookupSizes.last!
        var values: [DatabaseValue] = []
        for chunk in stride(from: 0, to: elements.count, by: size) {
            values.removeAll(keepingCapacity: true)
            for element in elements[chunk..<min(chunk + size, elements.count)] { append(element, &values) }
            try statement.bind(dialect.listParameter(values), at: 1)
            defer { statement.reset() }
            while try statement.step() { try row(statement) }
        }
    }

    /// ``membershipSQL(_:owners:)`` filtering by an `IN` list of the owners: what a dialect writes unless it knows
    /// better.
    package func membershipSQLWithOwnerList(_ relationship: ResolvedRelationship, owners: Int) -> String {
        let destination = model.mappings[relationship.destination]
        let table = quoteIdentifier(destination.name)
        let placeholders = Array(repeating: "?", count: owners).joined(separator: ", ")
        switch relationship.storage {
        case .foreignKey:
            preconditionFailure("a to-one relationship has no membership query")
        case .inverseForeignKey(let column, let orderColumn):
            let order = orderColumn.map { "\(quoteIdentifier($0)) IS NULL, \(quoteIdentifier($0)), " } ?? ""
            return "SELECT \(quoteIdentifier(column)), \(entities[destination.index].qualifiedColumns) FROM \(table) "
                + "WHERE \(quoteIdentifier(column)) IN (\(placeholders)) ORDER BY \(order)\"_pk\""
        case .joinTable(let index, let ownerIsSource):
            let join = model.joinTables[index]
            let (mine, theirs) = ownerIsSource ? ("source", "target") : ("target", "source")
            // Links of a table without positions (both sides unordered) have no order to keep: SQLite's such tables
            // have no rowid (see SQLiteMigration.joinTableDefinition), and a sort would be work for nothing.
            let order = !join.hasPosition ? ""
                : " ORDER BY " + (ownerIsSource ? "j.\"position\" IS NULL, j.\"position\", " : "") + "j.\(dialect.joinRowOrder)"
            return "SELECT j.\"\(mine)\", \(entities[destination.index].qualifiedColumns) FROM \(table) "
                + "JOIN \(quoteIdentifier(join.name)) AS j ON j.\"\(theirs)\" = \(table).\"_pk\" "
                + "WHERE j.\"\(mine)\" IN (\(placeholders))" + order
        }
    }

    // MARK: - Identity conflicts

    /// The identity conflict of a multi-row INSERT: which row's identity is taken, found row by row. INSERT OR
    /// FAIL kept the rows before the failing one: those fail again on their row id (ours, so only they can),
    /// and are skipped.
    private func insertConflict(
        _ mapping: EntitySchema, rows: Int, values: [DatabaseValue], _ error: any Error,
        statements: (String) throws -> any DatabaseStatement
    ) throws -> StoreError {
        guard dialect.continuesAfterError else { return identityConflict(mapping, error, values: dialect.conflictingValues(error)) }
        let width = insertWidth(mapping.index)
        let single = try statements(entities[mapping.index].insert)
        for row in 0..<rows {
            let rowValues = values[(row * width)..<((row + 1) * width)]
            try single.bind(rowValues, from: 1)
            do {
                try single.execute()
            } catch let error where dialect.isUniqueViolation(error) {
                return identityConflict(mapping, error) { field in rowValues[rowValues.startIndex + Int(mapping.columnOfField[field])] }
            } catch let error where dialect.isPrimaryKeyViolation(error) {
                continue
            }
        }
        return identityConflict(mapping, error) { field in values[Int(mapping.columnOfField[field])] }
    }

    /// The identity conflict of an UPDATE: the identity is the new value of each identity attribute the update
    /// changes, and the stored value of the others (the failed statement changed nothing).
    private func updateConflict(
        _ mapping: EntitySchema, fields: [Int], values: [DatabaseValue], _ error: any Error,
        statements: (String) throws -> any DatabaseStatement
    ) throws -> StoreError {
        guard dialect.continuesAfterError else { return identityConflict(mapping, error, values: dialect.conflictingValues(error)) }
        guard case .integer(let rowID) = values.last else { return identityConflict(mapping, error) { _ in .null } }
        let select = try statements(selectByRowID(mapping))
        defer { select.reset() }
        try select.bind(rowID, at: 1)
        let stored = try select.step()
        return identityConflict(mapping, error) { field in
            if let offset = fields.firstIndex(of: field) { return values[offset] }
            return stored ? select.value(at: mapping.columnOfField[field]) : .null
        }
    }

    private func identityConflict(
        _ mapping: EntitySchema, _ error: any Error, value: (Int) -> DatabaseValue
    ) -> StoreError {
        let values = mapping.description.identity.map { field -> String in
            guard case .attribute(let attribute) = mapping.description.fields[field] else { return "?" }
            return "\(attribute.name) = \(value(field))"
        }
        return identityConflict(mapping, error, values: values.joined(separator: ", "))
    }

    /// The error of an identity taken: `values` describe it (`id = 5`), nil when unknown.
    package func identityConflict(_ mapping: EntitySchema, _ error: any Error, values: String?) -> StoreError {
        StoreError(
            .identityConflict,
            "\(mapping.name) with identity \(values ?? "(unknown)") already exists; fetch it and update it instead of inserting a new object",
            entity: mapping.name, cause: error)
    }
}
