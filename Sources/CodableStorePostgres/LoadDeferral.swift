import CodableStore
import Foundation

/// What an import into empty tables builds once its rows are in, instead of row by row as it goes: the tables' foreign
/// keys and their non-unique indexes.
///
/// A foreign key is checked for every row inserted into its table: one index probe of the referenced table and a
/// lock of the row found, queued to the commit (the store's keys are `DEFERRABLE INITIALLY DEFERRED`). At 100k
/// reference records that was 2.1 s of a 5.4 s import's statements, all at its COMMIT; added after the load
/// (`ALTER TABLE … ADD CONSTRAINT`), a key is checked with one join of the two tables, 0.2 s for the three keys.
/// A non-unique index (a foreign key's, a join table's reverse index) takes one entry per row at a random place:
/// the 909k issues of 1M reference records went in by COPY in 4.5 s with the issues-by-user index, 2.6 s without it
/// and 0.5 s to build it afterwards (psql, same server); their 1.34M links 2.8 s with the reverse index, 1.8 s without.
///
/// When, and why it is safe:
/// - only for an import that asked to hold its tables alone (`ImportOptions.exclusiveAccess`): until it commits,
///   other transactions that read or write those tables wait for it (up to their busy timeout, then `storeBusy`), as
///   they would for a schema change. Not by default: importers started at once into a new store would fail where
///   they otherwise run side by side;
/// - only keys *from*, and indexes *of*, tables that are empty when the import begins and that the import may write,
///   inside the import's one transaction: the drop is never committed (DDL is transactional), and a failed import
///   rolls it back with the rest;
/// - only when no other transaction uses those tables or the tables the keys refer to: dropping a key or an index
///   locks them (`ACCESS EXCLUSIVE`), taken without waiting (`NOWAIT`), or the import keeps them and goes row by row;
/// - only when the store's role may alter the tables (owns them): an application's role that may only write rows
///   goes row by row;
/// - the import's own deletes clear what refers to the deleted rows themselves (``suspendsForeignKeys``), as the
///   keys' `ON DELETE` actions would;
/// - until the indexes are built, every statement the connection runs is looked at: one that reads a table whose
///   indexes wait by anything but a unique index (a membership load by a foreign key, the clearing of references to
///   a deleted row, a fetch in a decoding hook, anything not recognized) builds them first. The import's own
///   statements do not: COPY, inserts, updates and deletes by row id, identity lookups, links by their pair, a
///   to-many's members by the owner's side of the link (see ``readsOnlyByUniqueIndexes(_:)``);
/// - ``build()`` makes each index again with its definition, then adds each key back with its name and definition,
///   which checks every row: a row that refers to no row fails the import, as the key would have at its commit.
final class LoadDeferral: DeferredBuilds {
    struct Key: Equatable {
        /// The table the key is on, and the one it refers to.
        let table: String
        let referencedTable: String
        let name: String
        /// `FOREIGN KEY (…) REFERENCES …`, as the server gives it back (`pg_get_constraintdef`).
        let definition: String
    }

    struct Index: Equatable {
        let table: String
        let name: String
        /// `CREATE INDEX …`, as the server gives it back (`pg_get_indexdef`): run again, it makes the same index.
        let definition: String
    }

    private let connection: PostgresDatabaseConnection
    /// The keys dropped, until ``build()`` adds them back or ``cancel()``.
    private(set) var deferred: [Key]
    /// The indexes dropped, until ``cancel()``: ``build()`` makes those that do not exist (again, after a savepoint
    /// rolled back a build that a statement inside it started).
    private(set) var indexes: [Index]
    /// The tables of ``indexes``, quoted as statements name them, and the first column of each of their unique
    /// indexes (the primary key's too): a statement that reads them only by those needs none of the others.
    private let uniqueColumns: [String: Set<String>]
    var suspendsForeignKeys: Bool { true }

    private init(connection: PostgresDatabaseConnection, deferred: [Key], indexes: [Index], uniqueColumns: [String: Set<String>]) {
        self.connection = connection
        self.deferred = deferred
        self.indexes = indexes
        self.uniqueColumns = uniqueColumns
    }

    /// The savepoint that holds the attempt: rolled back, it releases the locks taken.
    private static let savepoint = "codablestore_defer_builds"

    /// Drops the foreign keys from, and the non-unique indexes of, the empty tables among `tables` (of the
    /// connection's current schema), when no other transaction uses them or the tables the keys refer to; nil when
    /// there are none, or the tables are in use. Call it inside the write transaction that will insert the rows.
    static func begin(on connection: PostgresDatabaseConnection, tables: Set<String>) throws -> LoadDeferral? {
        precondition(connection.isInsideTransaction, "builds are deferred inside the transaction that makes them")
        let candidates = try keys(on: connection).filter { tables.contains($0.table) }
        let indexCandidates = try nonUniqueIndexes(on: connection).filter { tables.contains($0.table) }
        guard !candidates.isEmpty || !indexCandidates.isEmpty else { return nil }
        let empty = try emptyTables(Set(candidates.map(\.table) + indexCandidates.map(\.table)), on: connection)
        var pending = candidates.filter { empty.contains($0.table) }
        var pendingIndexes = indexCandidates.filter { empty.contains($0.table) }
        guard !pending.isEmpty || !pendingIndexes.isEmpty else { return nil }
        try connection.beginSavepoint(named: savepoint)
        do {
            let locked = Set(pending.flatMap { [$0.table, $0.referencedTable] } + pendingIndexes.map(\.table)).sorted()
            try connection.execute(
                sql: "LOCK TABLE " + locked.map(quoteIdentifier).joined(separator: ", ") + " IN ACCESS EXCLUSIVE MODE NOWAIT")
            // Another writer may have committed rows between the first look and the lock.
            let stillEmpty = try emptyTables(Set(pending.map(\.table) + pendingIndexes.map(\.table)), on: connection)
            pending.removeAll { !stillEmpty.contains($0.table) }
            pendingIndexes.removeAll { !stillEmpty.contains($0.table) }
            guard !pending.isEmpty || !pendingIndexes.isEmpty else {
                try connection.rollbackToSavepoint(named: savepoint)
                return nil
            }
            for (table, keys) in Dictionary(grouping: pending, by: \.table).sorted(by: { $0.key < $1.key }) {
                try connection.execute(
                    sql: "ALTER TABLE \(quoteIdentifier(table)) "
                        + keys.map { "DROP CONSTRAINT \(quoteIdentifier($0.name))" }.joined(separator: ", "))
            }
            if !pendingIndexes.isEmpty {
                try connection.execute(sql: "DROP INDEX " + pendingIndexes.map { quoteIdentifier($0.name) }.joined(separator: ", "))
            }
            try connection.releaseSavepoint(named: savepoint)
        } catch let error as StoreError where error.code == .storeBusy {
            // A table in use (NOWAIT): import beside its users, row by row.
            try connection.rollbackToSavepoint(named: savepoint)
            return nil
        } catch let error as PostgresError where error.sqlState == PostgresError.insufficientPrivilege {
            // A role that may write the tables but not alter them (it does not own them): row by row too.
            try connection.rollbackToSavepoint(named: savepoint)
            return nil
        } catch {
            try? connection.rollbackToSavepoint(named: savepoint)
            throw error
        }
        // Every table whose indexes wait, with the first columns of its unique indexes (perhaps none).
        var uniqueColumns = Dictionary(pendingIndexes.map { (quoteIdentifier($0.table), Set<String>()) }) { first, _ in first }
        if !pendingIndexes.isEmpty {
            for (table, column) in try uniqueLeadingColumns(on: connection) where uniqueColumns[quoteIdentifier(table)] != nil {
                uniqueColumns[quoteIdentifier(table)]!.insert(quoteIdentifier(column))
            }
        }
        let deferral = LoadDeferral(connection: connection, deferred: pending, indexes: pendingIndexes, uniqueColumns: uniqueColumns)
        if !pendingIndexes.isEmpty {
            // From here on, every statement of the connection passes the guard until the indexes are made.
            connection.willRun = { [weak deferral] sql in try deferral?.check(sql) }
        }
        return deferral
    }

    /// Makes the indexes that do not exist, then adds the keys back, each checking every row of its table with one
    /// query; nothing the second time.
    func build() throws {
        try buildIndexes()
        guard !deferred.isEmpty else { return }
        for (table, keys) in Dictionary(grouping: deferred, by: \.table).sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                sql: "ALTER TABLE \(quoteIdentifier(table)) "
                    + keys.map { "ADD CONSTRAINT \(quoteIdentifier($0.name)) \($0.definition)" }.joined(separator: ", "))
        }
        deferred = []
    }

    /// Makes the deferred indexes that do not exist, and stops watching the connection.
    private func buildIndexes() throws {
        connection.willRun = nil
        guard !indexes.isEmpty else { return }
        let existing = Set(try Self.catalog(
            "SELECT relname FROM pg_class WHERE relkind = 'i' AND relnamespace = \(Self.currentSchema)", on: connection
        ).map { $0[0] })
        for index in indexes where !existing.contains(index.name) { try connection.execute(sql: index.definition) }
    }

    /// Forgets them, for an import that failed: rolling its transaction back restores them.
    func cancel() {
        connection.willRun = nil
        deferred = []
        indexes = []
    }

    /// The statements found to need no index: the import runs a few shapes over and over.
    private var passed: Set<String> = []

    /// Builds the indexes before a statement that may read their tables without them.
    private func check(_ sql: String) throws {
        if passed.contains(sql) { return }
        guard readsOnlyByUniqueIndexes(sql) else { return try buildIndexes() }
        passed.insert(sql)
    }

    // MARK: - Statements that need no deferred index

    /// Whether `sql` leaves the tables whose indexes wait alone, or reads them only through a unique index: the
    /// shapes of the import's own statements. Anything else, a statement of the user's included, is taken to need
    /// the indexes (a wrong "no" costs an early build, a wrong "yes" a slow statement).
    func readsOnlyByUniqueIndexes(_ sql: String) -> Bool {
        let named = uniqueColumns.filter { table, _ in sql.contains(table) }
        let lowered = sql.lowercased()
        if named.isEmpty {
            // A table named without quotes: the user's SQL, perhaps.
            return !indexes.contains { Self.namesUnquoted(lowered, $0.table.lowercased()) }
        }
        for prefix in Self.writesOnly where sql.hasPrefix(prefix) { return true }
        // Whether a table holds a row (SQLStorage.anyRow): a scan that stops at the first.
        if named.count == 1, let table = named.first?.key, sql == "SELECT 1 FROM \(table) LIMIT 1" { return true }
        if sql.hasPrefix("INSERT INTO ") {
            // Rows given as values: an INSERT reads nothing but its arbiter's unique index (ON CONFLICT).
            return !lowered.replacingOccurrences(of: "select * from unnest(", with: "").contains("select")
        }
        if sql.hasPrefix("UPDATE "), sql.contains(" FROM ") {
            // Rows given as arrays, by row id (PostgresStepGatherer's).
            return named.contains { table, _ in sql.hasPrefix("UPDATE \(table) SET ") && sql.hasSuffix(" WHERE \(table).\"_pk\" = v.\"pk\"") }
        }
        if sql.hasPrefix("UPDATE ") || sql.hasPrefix("DELETE FROM ") || (sql.hasPrefix("SELECT ") && !sql.contains(" JOIN ")) {
            // `… "T" … WHERE "c" = ? AND …`, `"c" IN (…)` or `("c", "d") IN (…)`, c the first column of a unique index
            // of T: a row by row id, an identity lookup, a link by its pair (moved, or removed).
            guard named.count == 1, let (table, columns) = named.first else { return false }
            let condition: Substring
            if sql.hasPrefix("UPDATE ") {
                guard sql.hasPrefix("UPDATE \(table) SET "), let clause = sql.range(of: " WHERE ", options: .backwards) else { return false }
                condition = sql[clause.upperBound...]
            } else {
                guard let from = sql.range(of: (sql.hasPrefix("DELETE") ? "DELETE FROM " : " FROM ") + table + " WHERE ") else { return false }
                if sql.hasPrefix("SELECT "), sql[..<from.lowerBound].contains("(") { return false }
                condition = sql[from.upperBound...]
            }
            let opened = condition.hasPrefix("(") ? condition.dropFirst() : condition
            guard let column = columns.first(where: { opened.hasPrefix($0 + " ") || opened.hasPrefix($0 + ",") }) else { return false }
            // The other columns of a composite key, then the values (or arrays) it is given in, then conditions that
            // can only narrow what the index finds.
            var rest = opened.dropFirst(column.count)
            if rest.hasPrefix(", "), let list = rest.range(of: ") IN (") { rest = rest[list.upperBound...] }
            let lowered = rest.lowercased()
            return !rest.contains("\"") || (!lowered.contains(" or ") && !lowered.contains("select"))
        }
        if sql.hasPrefix("SELECT "), sql.contains(#"(SELECT DISTINCT "owner" FROM "#) {
            // A to-many's members (PostgresDialect.membershipSQL): each owner probes `FROM "T" WHERE "c" = o."owner"`.
            var probes = 0
            var remaining = sql[...]
            while let probe = remaining.range(of: " CROSS JOIN LATERAL (SELECT * FROM ") {
                remaining = remaining[probe.upperBound...]
                guard let table = remaining.range(of: " WHERE ") else { return false }
                let name = String(remaining[..<table.lowerBound])
                let condition = remaining[table.upperBound...]
                if let columns = uniqueColumns[name] {
                    guard columns.contains(where: { condition.hasPrefix($0 + #" = o."owner""#) }) else { return false }
                }
                probes += 1
            }
            return probes > 0
        }
        return false
    }

    /// Whether lower-cased SQL names `table` (lower-cased) as a word outside quotes: `from issue`, not `"IssueComment"`.
    private static func namesUnquoted(_ sql: String, _ table: String) -> Bool {
        func isNamePart(_ character: Character?) -> Bool {
            guard let character else { return false }
            return character.isLetter || character.isNumber || character == "_" || character == "\"" || character == "$"
        }
        var searched = sql[...]
        while let found = searched.range(of: table) {
            let before = found.lowerBound > sql.startIndex ? sql[sql.index(before: found.lowerBound)] : nil
            let after = found.upperBound < sql.endIndex ? sql[found.upperBound] : nil
            if !isNamePart(before), !isNamePart(after) { return true }
            searched = sql[found.upperBound...]
        }
        return false
    }

    /// Statements that read no table's rows by a condition: transaction control, COPY, the import's DDL.
    private static let writesOnly = [
        "COPY ", "SAVEPOINT ", "RELEASE ", "ROLLBACK", "COMMIT", "SELECT nextval(", "SELECT set_config(", "LOCK TABLE ",
        "ALTER TABLE ", "CREATE INDEX ", "DROP INDEX ",
    ]

    /// The oid of the store's schema (the connection's current one), in a catalog query.
    private static let currentSchema = "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"

    /// The rows of a catalog query whose columns are all names or definitions (text).
    private static func catalog(_ sql: String, on connection: any DatabaseConnection) throws -> [[String]] {
        try connection.rows(sql: sql).map { row in
            row.map { value in if case .text(let text) = value { text } else { "" } }
        }
    }

    /// The foreign keys of the current schema's tables.
    static func keys(on connection: any DatabaseConnection) throws -> [Key] {
        try catalog(
            "SELECT t.relname, r.relname, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
                + "JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid "
                + "WHERE c.contype = 'f' AND t.relnamespace = \(currentSchema) ORDER BY t.relname, c.conname",
            on: connection
        ).map { Key(table: $0[0], referencedTable: $0[1], name: $0[2], definition: $0[3]) }
    }

    /// The non-unique indexes of the current schema's tables (none a constraint uses).
    static func nonUniqueIndexes(on connection: any DatabaseConnection) throws -> [Index] {
        try catalog(
            "SELECT t.relname, i.relname, pg_get_indexdef(i.oid) FROM pg_index x "
                + "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
                + "WHERE NOT x.indisunique AND NOT x.indisprimary "
                + "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid) "
                + "AND t.relnamespace = \(currentSchema) ORDER BY i.relname",
            on: connection
        ).map { Index(table: $0[0], name: $0[1], definition: $0[2]) }
    }

    /// The first column of every unique index (a primary key's too) of the current schema's tables, by table.
    private static func uniqueLeadingColumns(on connection: any DatabaseConnection) throws -> [(String, String)] {
        try catalog(
            "SELECT t.relname, a.attname FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid "
                + "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0] "
                + "WHERE x.indisunique AND x.indpred IS NULL AND t.relnamespace = \(currentSchema)",
            on: connection
        ).map { ($0[0], $0[1]) }
    }

    /// Which of `tables` hold no row, in one query.
    private static func emptyTables(_ tables: Set<String>, on connection: PostgresDatabaseConnection) throws -> Set<String> {
        let ordered = tables.sorted()
        guard let row = try connection.rows(
            sql: "SELECT " + ordered.map { "NOT EXISTS (SELECT 1 FROM \(quoteIdentifier($0)))" }.joined(separator: ", ")
        ).first else { return [] }
        return Set(zip(ordered, row).compactMap { table, value in value == .integer(1) ? table : nil })
    }
}
