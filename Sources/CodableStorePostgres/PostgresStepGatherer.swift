import CodableStore
import Foundation

/// Writes the steps of write plans in few statements. On a server every statement is a round trip, so consecutive
/// steps of one kind on one table (the inserts of an entity, the links of a join table, the updates of the same
/// fields…) are gathered, a few thousand rows at a time: new rows are sent with one COPY, the others with one
/// statement over arrays of values (`unnest`), the equivalent of a COPY into a staging table and one merge.
///
/// Measured (psql, 100k reference records' rows, same server): 91k issues by COPY (text) 0.87 s against 1.50 s by `unnest`
/// (binary, where every column has a binary form: the whole import 0.93x the wall time and 0.94x the client CPU of text);
/// 200k links 0.61-0.77 s by COPY straight into the table, 0.80 s by `unnest` with `ON CONFLICT DO NOTHING`, 1.46 s by
/// COPY into a TEMP staging table then the same upsert (emptying the staging table, `TRUNCATE`, costs more than the
/// COPY saves): links go by COPY straight into the join table where they cannot exist yet (a side is a row the plan
/// inserts), and otherwise by `unnest`, whose `ON CONFLICT` keeps a link that another writer inserted meanwhile.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/functions-array.html>,
/// <https://www.postgresql.org/docs/current/arrays.html#ARRAYS-INPUT>
final class PostgresStepGatherer: StepGatherer {
    private let storage: SQLStorage
    /// Where new rows are sent with COPY; nil for a connection of another kind (statements only).
    private let connection: PostgresDatabaseConnection?
    private let statements: (String) throws -> any DatabaseStatement
    private var key: Key?
    /// The gathered rows, each the values of one row in the statement's column order.
    private var rows: [ArraySlice<DatabaseValue>] = []
    /// Consecutive updates, by entity and fields: objects change different fields, and each row is updated once per
    /// plan, so updates of other fields in between need not split a group.
    private var updates: [Key: [ArraySlice<DatabaseValue>]] = [:]
    private var updateOrder: [Key] = []
    private var updateRows = 0
    /// Per entity, the row ids this plan inserts: no link to or from them can exist before this plan.
    private var insertedRowIDs: [Int: Set<Int64>] = [:]
    /// Per join table, the links this plan sent by COPY: one given again (a new position) goes through the upsert.
    private var copiedLinks: [Int: Set<Link>] = [:]
    /// Rows gathered before they are written, whatever comes next.
    static let rowsPerStatement = 2_000

    private struct Link: Hashable {
        let source: Int64
        let target: Int64
    }

    /// A link's two values as a key, without an array allocated per link.
    private struct Pair: Hashable {
        let first: DatabaseValue
        let second: DatabaseValue
    }

    private enum Key: Hashable {
        case insert(entity: Int)
        case update(entity: Int, fields: [Int])
        case link(table: Int)
        case unlink(table: Int)
        case delete(entity: Int)
    }

    init(storage: SQLStorage, connection: PostgresDatabaseConnection?, statements: @escaping (String) throws -> any DatabaseStatement) {
        self.storage = storage
        self.connection = connection
        self.statements = statements
    }

    func gather(_ step: WritePlan.Step) throws -> Bool {
        guard let (stepKey, stepRows) = keyAndRows(of: step) else { return false }
        if case .update = stepKey {
            try finishRows()
            if updates[stepKey] == nil { updateOrder.append(stepKey) }
            updates[stepKey, default: []] += stepRows
            updateRows += stepRows.count
            if updateRows >= Self.rowsPerStatement { try finishUpdates() }
            return true
        }
        try finishUpdates()
        if connection != nil, case .insert(let entity) = stepKey {
            insertedRowIDs[entity, default: []].formUnion(stepRows.lazy.compactMap { row in
                if case .integer(let rowID) = row[row.startIndex] { rowID } else { nil }
            })
        }
        if stepKey != key {
            try finish()
            key = stepKey
        }
        rows += stepRows
        if rows.count >= Self.rowsPerStatement { try finishRows() }
        return true
    }

    func finish() throws {
        try finishUpdates()
        try finishRows()
    }

    private func finishUpdates() throws {
        guard updateRows > 0 else { return }
        defer {
            updates.removeAll(keepingCapacity: true)
            updateOrder.removeAll(keepingCapacity: true)
            updateRows = 0
        }
        for key in updateOrder {
            rows = updates[key]!
            defer { rows.removeAll(keepingCapacity: true) }
            try write(key)
        }
    }

    private func finishRows() throws {
        guard let key, !rows.isEmpty else {
            self.key = nil
            return
        }
        defer {
            rows.removeAll(keepingCapacity: true)
            self.key = nil
        }
        try write(key)
    }

    /// The key and rows of a step that can be gathered, nil for one that runs alone.
    private func keyAndRows(of step: WritePlan.Step) -> (Key, [ArraySlice<DatabaseValue>])? {
        switch step {
        case .insert(let entity, let count, let values):
            let width = storage.insertWidth(entity)
            return (.insert(entity: entity), (0..<count).map { values[($0 * width)..<(($0 + 1) * width)] })
        case .update(let entity, let fields, let values):
            // An update of identity values, or of a unique index's, runs alone: its order against the others may
            // matter to the index, which PostgreSQL checks row by row.
            let mapping = storage.model.mappings[entity]
            if fields.contains(where: { mapping.identityFields.contains($0) }) { return nil }
            let uniqueColumns = mapping.indexes.filter(\.unique).flatMap(\.columns)
            if !uniqueColumns.isEmpty, fields.contains(where: { uniqueColumns.contains(mapping.columnNameOfField[$0] ?? "") }) {
                return nil
            }
            return (.update(entity: entity, fields: fields), [values[...]])
        case .link(let table, let count, let values):
            let width = storage.model.joinTables[table].linkWidth
            return (.link(table: table), (0..<count).map { values[($0 * width)..<(($0 + 1) * width)] })
        case .unlink(let table, let source, let target):
            return (.unlink(table: table), [[.integer(source), .integer(target)]])
        case .delete(let entity, let rowID):
            return (.delete(entity: entity), [[.integer(rowID)]])
        case .setOrder, .appendLink, .setLinkPosition, .clearStamp, .clearStampsReferring:
            return nil
        }
    }

    private func write(_ key: Key) throws {
        let model = storage.model
        switch key {
        case .insert(let entity):
            let mapping = model.mappings[entity]
            let columns = storage.insertColumns(entity)
            let types = ["bigint"] + mapping.columns[..<mapping.insertColumnCount].map(PostgresSchema.arrayElementType)
                + (storage.storesStamps ? ["bigint"] : [])
            let sql = "INSERT INTO \(quoteIdentifier(mapping.name)) (" + columns.map(quoteIdentifier).joined(separator: ", ")
                + ") SELECT * FROM " + unnest(types)
            // In identity order: writers that insert the same identities at once wait for each other in one order.
            let identity = mapping.identityColumns.compactMap { name in mapping.columns.firstIndex { $0.name == name }.map { $0 + 1 } }
            let ordered = identity.isEmpty ? rows : Self.sorted(rows, by: identity)
            do {
                // New rows go by COPY (see PostgresDatabaseConnection.copy): no ON CONFLICT needed, since the
                // context looked their identities up first; a unique violation fails the COPY as it fails an INSERT.
                if let connection {
                    try connection.copy(into: mapping.name, columns: columns, rows: ordered, binaryTypes: copyTypes(mapping))
                } else {
                    try execute(sql, ordered, types.count)
                }
            } catch let error where storage.dialect.isUniqueViolation(error) {
                throw storage.identityConflict(mapping, error, values: storage.dialect.conflictingValues(error))
            }
        case .update(let entity, let fields):
            let mapping = model.mappings[entity]
            // Values: the fields', the stamp where the store keeps them, the row id (see WritePlan.Step.update).
            // The last update of a row wins, as it would have run last; rows in row id order.
            var columns = fields.map { mapping.columnNameOfField[$0]! }
            var types = fields.map { PostgresSchema.arrayElementType(mapping.columns[Int(mapping.columnOfField[$0]) - 1]) }
            if storage.storesStamps {
                columns.append("_digest")
                types.append("bigint")
            }
            types.append("bigint")  // the row id, not set: matched
            let latest = Self.sorted(lastOfEach(rows) { $0.last! }, by: [columns.count])
            let names = (0..<columns.count).map { "v\($0)" }
            let sql = "UPDATE \(quoteIdentifier(mapping.name)) SET "
                + zip(columns, names).map { "\(quoteIdentifier($0)) = v.\(quoteIdentifier($1))" }.joined(separator: ", ")
                + " FROM " + unnest(types) + " AS v (" + (names + ["pk"]).map(quoteIdentifier).joined(separator: ", ")
                + ") WHERE \(quoteIdentifier(mapping.name)).\"_pk\" = v.\"pk\""
            do {
                try execute(sql, latest, types.count)
            } catch let error where storage.dialect.isUniqueViolation(error) {
                throw storage.identityConflict(mapping, error, values: storage.dialect.conflictingValues(error))
            }
        case .link(let table):
            // One row per link (a second position for the same link in one statement is refused): the last wins.
            let join = model.joinTables[table]
            var latest = Self.sorted(lastOfEach(rows) { Pair(first: $0[$0.startIndex], second: $0[$0.startIndex + 1]) }, by: [0, 1])
            if let connection {
                // The links of a row this plan inserted are new: COPY, without the upsert's probe of the unique index
                // for each (1.34M links of 1M reference records, psql: 2.8 s by COPY, 4.9 s by INSERT … ON CONFLICT).
                // The others, and a link this plan already sent, take the upsert: they may exist.
                var fresh: [ArraySlice<DatabaseValue>] = []
                latest.removeAll { row in
                    guard case .integer(let source) = row[row.startIndex], case .integer(let target) = row[row.startIndex + 1],
                        insertedRowIDs[join.source]?.contains(source) == true || insertedRowIDs[join.target]?.contains(target) == true,
                        copiedLinks[table, default: []].insert(Link(source: source, target: target)).inserted
                    else { return false }
                    fresh.append(row)
                    return true
                }
                if !fresh.isEmpty {
                    try connection.copy(
                        into: join.name, columns: join.hasPosition ? ["source", "target", "position"] : ["source", "target"],
                        rows: fresh, binaryTypes: join.hasPosition ? [.int8, .int8, .int8] : [.int8, .int8])
                }
                guard !latest.isEmpty else { return }
            }
            if join.hasPosition {
                let types = ["bigint", "bigint", "bigint"]
                try execute(
                    "INSERT INTO \(quoteIdentifier(join.name)) (\"source\", \"target\", \"position\") "
                        + "SELECT * FROM \(unnest(types)) "
                        + "ON CONFLICT (\"source\", \"target\") DO UPDATE SET \"position\" = excluded.\"position\"",
                    latest, types.count)
            } else {
                let types = ["bigint", "bigint"]
                try execute(
                    "INSERT INTO \(quoteIdentifier(join.name)) (\"source\", \"target\") SELECT * FROM \(unnest(types)) "
                        + "ON CONFLICT (\"source\", \"target\") DO NOTHING",
                    latest, types.count)
            }
        case .unlink(let table):
            try execute(
                "DELETE FROM \(quoteIdentifier(model.joinTables[table].name)) WHERE (\"source\", \"target\") IN "
                    + "(SELECT * FROM \(unnest(["bigint", "bigint"])))",
                Self.sorted(rows, by: [0, 1]), 2)
        case .delete(let entity):
            try execute(
                "DELETE FROM \(quoteIdentifier(model.mappings[entity].name)) WHERE \"_pk\" = ANY (?::bigint[])",
                Self.sorted(rows, by: [0]), 1)
        }
    }

    /// The columns' types in COPY's binary format (the row id first), nil when one has no binary form here (`numeric`).
    private func copyTypes(_ mapping: EntitySchema) -> [PostgresDatabaseConnection.CopyType]? {
        var types: [PostgresDatabaseConnection.CopyType] = [.int8]
        for column in mapping.columns[..<mapping.insertColumnCount] {
            switch PostgresSchema.arrayElementType(column) {
            case "bigint": types.append(.int8)
            case "double precision": types.append(.float8)
            case "text": types.append(.text)
            case "bytea": types.append(.bytea)
            default: return nil
            }
        }
        if storage.storesStamps { types.append(.int8) }
        return types
    }

    /// The rows ordered by the values at `positions` (in each row): every writer locks rows, and the entries of unique
    /// indexes, in the same order, so that two writers of the same rows wait for each other instead of deadlocking.
    static func sorted(_ rows: [ArraySlice<DatabaseValue>], by positions: [Int]) -> [ArraySlice<DatabaseValue>] {
        // Integer keys (row ids, links, most identities), one or two: sorted as plain numbers, without comparing the
        // rows' values (retains and releases of each slice; 4% of the import writer's samples at 1M records).
        if positions.count <= 2, let first = positions.first {
            let second = positions.count == 2 ? positions[1] : first
            var keys: [(Int64, Int64, Int)] = []
            keys.reserveCapacity(rows.count)
            for (index, row) in rows.enumerated() {
                guard case .integer(let x) = row[row.startIndex + first], case .integer(let y) = row[row.startIndex + second] else {
                    keys = []
                    break
                }
                keys.append((x, y, index))
            }
            if keys.count == rows.count {
                // Equal keys keep their order.
                keys.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 != $1.1 ? $0.1 < $1.1 : $0.2 < $1.2 }
                return keys.map { rows[$0.2] }
            }
        }
        return rows.sorted { a, b in
            for position in positions {
                let (x, y) = (a[a.startIndex + position], b[b.startIndex + position])
                if x == y { continue }
                return precedes(x, y)
            }
            return false
        }
    }

    /// An order of values: NULL, numbers, text, bytes (as SQLite orders them).
    private static func precedes(_ x: DatabaseValue, _ y: DatabaseValue) -> Bool {
        switch (x, y) {
        case (.integer(let a), .integer(let b)): return a < b
        case (.real(let a), .real(let b)): return a < b
        case (.integer(let a), .real(let b)): return Double(a) < b
        case (.real(let a), .integer(let b)): return a < Double(b)
        case (.text(let a), .text(let b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.blob(let a), .blob(let b)): return a.lexicographicallyPrecedes(b)
        default: return rank(x) < rank(y)
        }
    }

    private static func rank(_ value: DatabaseValue) -> Int {
        switch value {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    private func unnest(_ types: [String]) -> String {
        "unnest(" + types.map { "?::\($0)[]" }.joined(separator: ", ") + ")"
    }

    /// The rows, keeping for each key only its last row, in the order of those last rows.
    private func lastOfEach<K: Hashable>(_ rows: [ArraySlice<DatabaseValue>], key: (ArraySlice<DatabaseValue>) -> K)
        -> [ArraySlice<DatabaseValue>]
    {
        var last: [K: Int] = [:]
        for (index, row) in rows.enumerated() { last[key(row)] = index }
        guard last.count < rows.count else { return rows }
        return rows.indices.filter { last[key(rows[$0])] == $0 }.map { rows[$0] }
    }

    /// Binds each column of `rows` as one array and runs the statement.
    private func execute(_ sql: String, _ rows: [ArraySlice<DatabaseValue>], _ width: Int) throws {
        let statement = try statements(sql)
        for column in 0..<width {
            let literal = Self.arrayLiteral(rows.lazy.map { $0[$0.startIndex + column] })
            try statement.bind(.text(literal), at: Int32(column + 1))
        }
        try statement.execute()
    }

    /// A PostgreSQL array literal: `{1,NULL,"text with \"quotes\""}`; bytes in bytea's hex form. Written as bytes
    /// (appending to a String scalar by scalar took 16% of the import writer's time at 100k records).
    static func arrayLiteral(_ values: some Sequence<DatabaseValue>) -> String {
        var text: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for value in values {
            if !first { text.append(UInt8(ascii: ",")) }
            first = false
            switch value {
            case .null: text.append(contentsOf: "NULL".utf8)
            case .integer(let integer): text.append(contentsOf: String(integer).utf8)
            case .real(let real): text.append(contentsOf: PostgresDatabaseConnection.text(of: real).utf8)
            case .text(var string):
                text.append(UInt8(ascii: "\""))
                string.withUTF8 { bytes in
                    var start = 0
                    for index in bytes.indices where bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "\\") {
                        text.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                        text.append(UInt8(ascii: "\\"))
                        start = index
                    }
                    text.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
                }
                text.append(UInt8(ascii: "\""))
            case .blob(let data):
                text.append(contentsOf: #""\"#.utf8)  // the array literal's escape of the hex form's backslash
                PostgresDatabaseConnection.appendHex(data, to: &text)
                text.append(UInt8(ascii: "\""))
            }
        }
        text.append(UInt8(ascii: "}"))
        return String(decoding: text, as: UTF8.self)
    }
}
