import CFuzzSupport
import CodableStore

/// Every row of every table of a store, read with libsqlite3 directly (not through CodableStore's SQLite
/// wrapper), as text: the oracle's view of a store. The queries are made once from the schema; the work of a
/// dump is done by SQLite, since each input is dumped six times.
///
/// Two renderings:
/// - `raw`: the rows as stored, row ids and foreign keys included. Equal raw dumps mean the same values in the
///   tables, which is what a second decode of the same input must leave.
/// - `canonical`: no row ids; each foreign key (join tables included) is replaced by the identity of the row it
///   points to. Two stores filled by different paths (one thread, two threads, the importer) may number their
///   rows in another order; their canonical dumps are still equal.
///
/// Values are rendered with their storage class: `i:` integer, `r:` real (the shortest text that reads back as
/// the same double), `t<bytes>:` text, `b:` blob (hex), `NULL`.
final class StoreDump {
    struct Table {
        let name: String
        let columns: [String]
        /// Per column, the table its values refer to (a foreign key), if any.
        let references: [String?]
        /// The identity columns of an entity table (the columns of its `<table>_identity` index), else empty.
        let identityColumns: [String]
        /// False for a `WITHOUT ROWID` table (a join table without positions, whose links have no order).
        let hasRowID: Bool
    }

    let store: Store
    let tables: [Table]
    /// The statements that empty the store, in one transaction.
    private let clearStatements: [String]
    /// Per table, the query of its rows.
    private let rawQueries: [String]
    private let canonicalQueries: [String]
    /// Prepared statements of the store's writer connection, by SQL (used only inside `withWriterConnection`).
    private var statements: [String: OpaquePointer] = [:]

    /// Reads the schema of `store`. With `ordersAsRanks`, the canonical dump shows the order columns of ordered
    /// relationships (a join table's `position`, an `<relationship>_order` column) as the rank of the row among
    /// its owner's members, in the order the library reads them back, rather than as stored: two stores then
    /// compare equal when they hold the same ordered lists, whatever numbers (or NULLs) encode the order.
    init(_ store: Store, ordersAsRanks: Bool = false) throws {
        self.store = store
        let tables = try store.withWriterConnection { connection in
            let db = connection.sqliteConnection
            let names = try Self.strings(
                db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                    + "AND name != '_codablestore_metadata' ORDER BY name")
            return try names.map { name in
                // Not `_digest`: which import record last wrote a row (an import's bookkeeping for skipping
                // unchanged records, which the decoder's saves leave NULL), not a value the paths must agree on.
                let columns = try Self.strings(
                    db, "SELECT name FROM pragma_table_info(\(Self.literal(name))) WHERE name != '_digest' ORDER BY cid")
                let foreignKeys = try Self.strings(
                    db, "SELECT \"from\" || char(31) || \"table\" FROM pragma_foreign_key_list(\(Self.literal(name)))"
                ).map { $0.split(separator: "\u{1F}").map(String.init) }
                let target = Dictionary(foreignKeys.map { ($0[0], $0[1]) }, uniquingKeysWith: { first, _ in first })
                let identity = try Self.strings(
                    db, "SELECT name FROM pragma_index_info(\(Self.literal(name + "_identity"))) ORDER BY seqno")
                let withoutRowID = try Self.strings(
                    db, "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = \(Self.literal(name))")
                return Table(
                    name: name, columns: columns, references: columns.map { target[$0] }, identityColumns: identity,
                    hasRowID: withoutRowID != ["1"])
            }
        }
        guard tables.count >= 3, tables.contains(where: { !$0.identityColumns.isEmpty }) else {
            fatalError("StoreDump: unexpected schema \(tables)")
        }
        self.tables = tables
        clearStatements = ["BEGIN IMMEDIATE"] + tables.map { "DELETE FROM \(Self.identifier($0.name))" } + ["COMMIT"]
        rawQueries = tables.map { table in
            let columns = table.columns.map(Self.identifier).joined(separator: ", ")
            return "SELECT \(columns) FROM \(Self.identifier(table.name)) ORDER BY \(columns)"
        }
        let identities = Dictionary(uniqueKeysWithValues: tables.map { ($0.name, $0.identityColumns) })
        canonicalQueries = tables.map { table in
            var expressions: [String] = []
            for (column, target) in zip(table.columns, table.references) {
                if column == "_pk" && !table.identityColumns.isEmpty { continue }
                if ordersAsRanks, let rank = Self.rank(of: column, in: table) {
                    expressions.append(rank)
                    continue
                }
                guard let target, let targetIdentity = identities[target], !targetIdentity.isEmpty else {
                    expressions.append(Self.identifier(column))
                    continue
                }
                // The identity of the row pointed to; a key pointing nowhere stays visible.
                let key = Self.identifier(column)
                for identityColumn in targetIdentity {
                    expressions.append(
                        "CASE WHEN \(key) IS NULL THEN NULL ELSE coalesce((SELECT \(Self.identifier(identityColumn)) "
                            + "FROM \(Self.identifier(target)) WHERE \"_pk\" = \(key)), 'dangling ' || \(key)) END")
                }
            }
            let ordinals = expressions.indices.map { String($0 + 1) }.joined(separator: ", ")
            return "SELECT \(expressions.joined(separator: ", ")) FROM \(Self.identifier(table.name)) ORDER BY \(ordinals)"
        }
    }

    /// The rank of a row among its owner's members, if `column` holds the order of an ordered relationship: in
    /// the order of the library's membership queries (Context+Relationships.swift, `membershipSQL`). A row
    /// without owner has no rank, whatever its order column holds.
    private static func rank(of column: String, in table: Table) -> String? {
        let owner: String
        let tiebreak: String
        if column == "position", table.columns.contains("source"), !table.columns.contains("_pk"), table.hasRowID {
            (owner, tiebreak) = ("source", "rowid")
        } else if column.hasSuffix("_order"), table.columns.contains(String(column.dropLast("_order".count))) {
            (owner, tiebreak) = (String(column.dropLast("_order".count)), "_pk")
        } else {
            return nil
        }
        let (order, key) = (identifier(column), identifier(owner))
        return "CASE WHEN \(key) IS NULL THEN NULL ELSE row_number() OVER "
            + "(PARTITION BY \(key) ORDER BY \(order) IS NULL, \(order), \(identifier(tiebreak))) END"
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
    }

    /// Deletes every row of every table (between inputs, instead of opening new stores).
    func clear() throws {
        try store.withWriterConnection { connection in
            let db = connection.sqliteConnection
            for sql in clearStatements {
                let statement = try prepared(sql, db)
                defer { sqlite3_reset(statement) }
                guard sqlite3_step(statement) == SQLITE_DONE else {
                    throw SQLError(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
                }
            }
        }
    }

    /// The number of rows changed since the store's connection was opened (`sqlite3_total_changes64`).
    func totalChanges() throws -> Int64 {
        try store.withWriterConnection { connection in sqlite3_total_changes64(connection.sqliteConnection) }
    }

    func raw() throws -> String {
        try dump(rawQueries)
    }

    func canonical() throws -> String {
        try dump(canonicalQueries)
    }

    /// One line per row: the table's name, then its values.
    private func dump(_ queries: [String]) throws -> String {
        try store.withWriterConnection { connection in
            let db = connection.sqliteConnection
            var text = ""
            for (table, sql) in zip(tables, queries) {
                let statement = try prepared(sql, db)
                defer { sqlite3_reset(statement) }
                while true {
                    let code = sqlite3_step(statement)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else {
                        throw SQLError(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
                    }
                    text += table.name
                    for column in 0..<sqlite3_column_count(statement) {
                        text += " "
                        Self.render(statement, column, into: &text)
                    }
                    text += "\n"
                }
            }
            return text
        }
    }

    private func prepared(_ sql: String, _ db: OpaquePointer) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else {
            throw SQLError(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        statements[sql] = statement
        return statement
    }

    private static func render(_ statement: OpaquePointer, _ column: Int32, into text: inout String) {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL:
            text += "NULL"
        case SQLITE_INTEGER:
            text += "i:\(sqlite3_column_int64(statement, column))"
        case SQLITE_FLOAT:
            text += "r:\(sqlite3_column_double(statement, column))"
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard let bytes = sqlite3_column_text(statement, column) else { return text += "t0:" }
            let buffer = UnsafeBufferPointer(start: bytes, count: count)
            if let string = String(validating: buffer, as: UTF8.self) {
                text += "t\(count):" + string
            } else {
                text += "t(invalid UTF-8):" + hex(buffer)
            }
        default:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard let blob = sqlite3_column_blob(statement, column) else { return text += "b:" }
            text += "b:" + hex(UnsafeRawBufferPointer(start: blob, count: count))
        }
    }

    private static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16)
            return byte < 16 ? "0" + digits : digits
        }.joined()
    }

    // MARK: - Schema

    struct SQLError: Error, CustomStringConvertible {
        let description: String
    }

    /// The text of the first column of every row.
    private static func strings(_ db: OpaquePointer, _ sql: String) throws -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw SQLError(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(statement) }
        var values: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            values.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "NULL")
        }
        return values
    }

    private static func identifier(_ name: String) -> String {
        "\"" + name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }

    private static func literal(_ text: String) -> String {
        "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
    }
}
