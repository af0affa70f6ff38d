/// The SQL of one save, with every value it binds: what ``Context/flush(usingSavepoint:)`` writes.
///
/// The context turns its pending changes into steps, reading its objects on its own thread
/// (`Context.writeSteps(_:)`). A plain save runs each step as soon as it is made, so a large save never holds
/// all its values at once. An import under the stop policy collects a batch's steps into a plan and hands it
/// to a writer thread (a ``DeferredWriter``), so that SQLite writes one batch while the next one is decoded. A step
/// holds only values (row ids, column values, SQL), never the context's objects, so it can cross threads.
struct WritePlan: Sendable {
    enum Step: Sendable {
        /// Deletes a row.
        case delete(entity: Int, rowID: Int64)
        /// Inserts `rows` rows (1 or ``EntityMapping/insertBatchRows``): per row, the row id and then the
        /// insert columns (``EntityMapping/insertColumnCount`` values).
        case insert(entity: Int, rows: Int, values: [SQLiteValue])
        /// Updates the changed columns of one stored row: `values` are the new values of `fields`, in order,
        /// then the row id.
        case update(entity: Int, sql: String, fields: [Int], values: [SQLiteValue])
        /// Links `rows` pairs (1 or ``JoinTable/linkBatchRows``): source, target and position per row.
        case link(table: Int, rows: Int, values: [SQLiteValue])
        /// Removes one pair from a join table.
        case unlink(table: Int, source: Int64, target: Int64)
        /// Any other statement (positions of ordered relationships).
        case statement(sql: String, values: [SQLiteValue])
    }

    var steps: [Step] = []

    /// Runs one step, with statements from `statements` (cached for the connection they belong to).
    static func run(_ step: Step, model: StoreModel, statements: (String) throws -> Statement) throws {
        switch step {
        case .delete(let entity, let rowID):
            let statement = try statements("DELETE FROM \(quoteIdentifier(model.mappings[entity].name)) WHERE \"_pk\" = ?")
            try statement.bind(rowID, at: 1)
            try statement.execute()
        case .insert(let entity, let rows, let values):
            let mapping = model.mappings[entity]
            let statement = try statements(mapping.insertSQL(rows: rows))
            try bind(values[...], to: statement)
            do {
                try statement.execute()
            } catch let error as SQLiteError where ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= error.resultCode {
                throw try insertConflict(mapping, rows: rows, values: values, error, statements: statements)
            }
        case .update(let entity, let sql, let fields, let values):
            let statement = try statements(sql)
            try bind(values[...], to: statement)
            do {
                try statement.execute()
            } catch let error as SQLiteError where ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= error.resultCode {
                throw try updateConflict(model.mappings[entity], fields: fields, values: values, error, statements: statements)
            }
        case .link(let table, let rows, let values):
            let join = model.joinTables[table]
            let statement = try statements(rows == 1 ? join.linkSQL : join.linkBatchSQL)
            try bind(values[...], to: statement)
            try statement.execute()
        case .unlink(let table, let source, let target):
            let statement = try statements(model.joinTables[table].unlinkSQL)
            try statement.bind(source, at: 1)
            try statement.bind(target, at: 2)
            try statement.execute()
        case .statement(let sql, let values):
            let statement = try statements(sql)
            try bind(values[...], to: statement)
            try statement.execute()
        }
    }

    private static func bind(_ values: ArraySlice<SQLiteValue>, to statement: Statement) throws {
        var parameter: Int32 = 1
        for value in values {
            try statement.bind(value, at: parameter)
            parameter += 1
        }
    }

    /// The identity conflict of a multi-row INSERT: which row's identity is taken, found row by row. INSERT OR
    /// FAIL kept the rows before the failing one: those fail again on their row id (ours, so only they can),
    /// and are skipped.
    private static func insertConflict(
        _ mapping: EntityMapping, rows: Int, values: [SQLiteValue], _ error: SQLiteError,
        statements: (String) throws -> Statement
    ) throws -> StoreError {
        let width = mapping.insertColumnCount + 1
        let single = try statements(mapping.insertSQL(rows: 1))
        for row in 0..<rows {
            let rowValues = values[(row * width)..<((row + 1) * width)]
            try bind(rowValues, to: single)
            do {
                try single.execute()
            } catch let error as SQLiteError where ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= error.resultCode {
                return identityConflict(mapping, error) { field in rowValues[rowValues.startIndex + Int(mapping.columnOfField[field])] }
            } catch let error as SQLiteError where ResultCode.SQLITE_CONSTRAINT_PRIMARYKEY ~= error.resultCode {
                continue
            }
        }
        return identityConflict(mapping, error) { field in values[Int(mapping.columnOfField[field])] }
    }

    /// The identity conflict of an UPDATE: the identity is the new value of each identity attribute the update
    /// changes, and the stored value of the others (the failed statement changed nothing).
    private static func updateConflict(
        _ mapping: EntityMapping, fields: [Int], values: [SQLiteValue], _ error: SQLiteError,
        statements: (String) throws -> Statement
    ) throws -> StoreError {
        guard case .integer(let rowID) = values.last else { return identityConflict(mapping, error) { _ in .null } }
        let select = try statements(mapping.selectSQL + " WHERE \"_pk\" = ?")
        defer { select.reset() }
        try select.bind(rowID, at: 1)
        let stored = try select.step()
        return identityConflict(mapping, error) { field in
            if let offset = fields.firstIndex(of: field) { return values[offset] }
            return stored ? select.value(at: mapping.columnOfField[field]) : .null
        }
    }

    private static func identityConflict(
        _ mapping: EntityMapping, _ error: SQLiteError, value: (Int) -> SQLiteValue
    ) -> StoreError {
        let values = mapping.description.identity.map { field -> String in
            guard case .attribute(let attribute) = mapping.description.fields[field] else { return "?" }
            return "\(attribute.name) = \(value(field))"
        }
        return StoreError(
            .identityConflict,
            "\(mapping.name) with identity \(values.joined(separator: ", ")) already exists; fetch it and update it instead of inserting a new object",
            entity: mapping.name, cause: error)
    }
}

/// Writes a context's plans later, on a thread of its own, while the context goes on: an import's writer
/// thread. While a context has one (``Context/deferredWriter``), a save hands its plan over instead of
/// writing it, and the context keeps every object a waiting plan writes (`Context.retireObjects()`), so that a key
/// of such an object is answered from memory, never from a row the writer has not written yet.
protocol DeferredWriter: AnyObject {
    /// Hands a plan over. Throws the error of a plan that failed before.
    func enqueue(_ plan: WritePlan) throws
    /// Waits until every plan handed over is written, without throwing (the next ``enqueue(_:)`` throws).
    func waitUntilIdle()
    /// Runs `body` with the connection while the writer is between statements: for lookups and loads of rows
    /// no waiting plan writes.
    func withConnection<T>(_ body: () throws -> T) rethrows -> T
    /// Waits until the writer ran `lookup` (handed over with its plans); throws the error of a plan that failed.
    func waitForLookup(_ lookup: Lookahead) throws
}

/// Rows of a query, in one array (one allocation per query rather than per row: they are made on the writer
/// thread and let go on the context's, and many small blocks freed across threads fragment the heap).
struct StoredRows: Sendable {
    var values: [SQLiteValue] = []
    let width: Int
    var count: Int { width == 0 ? 0 : values.count / width }
    subscript(row: Int) -> ArraySlice<SQLiteValue> { values[(row * width)..<((row + 1) * width)] }
}

/// Identity lookups run for a context ahead of time, by its ``DeferredWriter`` between two plans: per entity, the
/// keys, and once ``isDone``, the stored rows found (the row id then the columns of ``EntityMapping/selectSQL``).
/// ``Context/adoptLookup(_:)`` takes them.
final class Lookahead: @unchecked Sendable {
    // @unchecked: `rows`, `membershipRows` and `isDone` are written by the writer thread under its monitor, and
    // read by the context only after it saw `isDone` under that monitor (``DeferredWriter/waitForLookup(_:)``).
    let keys: [(entity: Int, keys: [Context.IdentityKey])]
    /// Memberships to load for the rows found for `keys[0]` (the batch's own entity): per to-many relationship
    /// stored in a join table, its field and its ``Context/membershipSQL(_:owners:)`` for
    /// ``Context/membershipChunk`` owners.
    let memberships: [(field: Int, sql: String)]
    var rows: [StoredRows] = []
    /// Per entry of `memberships`: rows of the owner's row id, then the member's row id and columns.
    var membershipRows: [StoredRows] = []
    var isDone = false

    init(keys: [(entity: Int, keys: [Context.IdentityKey])], memberships: [(field: Int, sql: String)]) {
        self.keys = keys
        self.memberships = memberships
    }
}
