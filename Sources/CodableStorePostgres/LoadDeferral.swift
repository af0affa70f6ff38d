import CodableStore

/// The foreign keys an import into empty tables adds once its rows are in, instead of checking them row by row.
///
/// A foreign key is checked for every row inserted into its table: one index probe of the referenced table and a
/// lock of the row found, queued to the commit (the store's keys are `DEFERRABLE INITIALLY DEFERRED`). At 100k
/// reference records that was 2.1 s of a 5.4 s import's statements, all at its COMMIT; added after the load
/// (`ALTER TABLE … ADD CONSTRAINT`), a key is checked with one join of the two tables, 0.2 s for the three keys.
///
/// When, and why it is safe:
/// - only for an import that asked to hold its tables alone (`ImportOptions.exclusiveAccess`): until it commits,
///   other transactions that read or write those tables wait for it (up to their busy timeout, then `storeBusy`), as
///   they would for a schema change. Not by default: importers started at once into a new store would fail where
///   they otherwise run side by side;
/// - only keys *from* tables that are empty when the import begins and that the import may write, inside the
///   import's one transaction: the drop is never committed (DDL is transactional), and a failed import rolls it back
///   with the rest;
/// - only when no other transaction uses those tables or the tables the keys refer to: dropping a key locks both
///   (`ACCESS EXCLUSIVE`), taken without waiting (`NOWAIT`), or the import checks its keys row by row as usual;
/// - only when the store's role may alter the tables (owns them): an application's role that may only write rows
///   checks them row by row;
/// - the import's own deletes clear what refers to the deleted rows themselves (``suspendsForeignKeys``), as the
///   keys' `ON DELETE` actions would;
/// - ``build()`` adds each key back, with its name and definition, which checks every row: a row that refers to no
///   row fails the import, as the key would have at its commit.
final class ForeignKeyDeferral: DeferredBuilds {
    struct Key: Equatable {
        /// The table the key is on, and the one it refers to.
        let table: String
        let referencedTable: String
        let name: String
        /// `FOREIGN KEY (…) REFERENCES …`, as the server gives it back (`pg_get_constraintdef`).
        let definition: String
    }

    private let connection: PostgresDatabaseConnection
    /// The keys dropped, until ``build()`` adds them back or ``cancel()``.
    private(set) var deferred: [Key]
    var suspendsForeignKeys: Bool { true }

    private init(connection: PostgresDatabaseConnection, deferred: [Key]) {
        self.connection = connection
        self.deferred = deferred
    }

    /// The savepoint that holds the attempt: rolled back, it releases the locks taken.
    private static let savepoint = "codablestore_defer_keys"

    /// Drops the foreign keys from the empty tables among `tables` (of the connection's current schema), when no
    /// other transaction uses them or the tables they refer to; nil when there are none, or the tables are in use.
    /// Call it inside the write transaction that will insert the rows.
    static func begin(on connection: PostgresDatabaseConnection, tables: Set<String>) throws -> ForeignKeyDeferral? {
        precondition(connection.isInsideTransaction, "foreign keys are deferred inside the transaction that adds them back")
        let candidates = try keys(on: connection).filter { tables.contains($0.table) }
        guard !candidates.isEmpty else { return nil }
        let empty = try emptyTables(Set(candidates.map(\.table)), on: connection)
        var pending = candidates.filter { empty.contains($0.table) }
        guard !pending.isEmpty else { return nil }
        try connection.beginSavepoint(named: savepoint)
        do {
            let locked = Set(pending.flatMap { [$0.table, $0.referencedTable] }).sorted()
            try connection.execute(
                sql: "LOCK TABLE " + locked.map(quoteIdentifier).joined(separator: ", ") + " IN ACCESS EXCLUSIVE MODE NOWAIT")
            // Another writer may have committed rows between the first look and the lock.
            let stillEmpty = try emptyTables(Set(pending.map(\.table)), on: connection)
            pending.removeAll { !stillEmpty.contains($0.table) }
            guard !pending.isEmpty else {
                try connection.rollbackToSavepoint(named: savepoint)
                return nil
            }
            for (table, keys) in Dictionary(grouping: pending, by: \.table).sorted(by: { $0.key < $1.key }) {
                try connection.execute(
                    sql: "ALTER TABLE \(quoteIdentifier(table)) "
                        + keys.map { "DROP CONSTRAINT \(quoteIdentifier($0.name))" }.joined(separator: ", "))
            }
            try connection.releaseSavepoint(named: savepoint)
        } catch let error as StoreError where error.code == .storeBusy {
            // A table in use (NOWAIT): import beside its users, checking keys row by row.
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
        return ForeignKeyDeferral(connection: connection, deferred: pending)
    }

    /// Adds the keys back, each checking every row of its table with one query; nothing the second time.
    func build() throws {
        guard !deferred.isEmpty else { return }
        for (table, keys) in Dictionary(grouping: deferred, by: \.table).sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                sql: "ALTER TABLE \(quoteIdentifier(table)) "
                    + keys.map { "ADD CONSTRAINT \(quoteIdentifier($0.name)) \($0.definition)" }.joined(separator: ", "))
        }
        deferred = []
    }

    /// Forgets them, for an import that failed: rolling its transaction back restores them.
    func cancel() {
        deferred = []
    }

    /// The foreign keys of the current schema's tables.
    static func keys(on connection: any DatabaseConnection) throws -> [Key] {
        try connection.rows(
            sql: "SELECT t.relname, r.relname, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
                + "JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid "
                + "WHERE c.contype = 'f' AND t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                + "ORDER BY t.relname, c.conname"
        ).compactMap { row in
            guard case .text(let table) = row[0], case .text(let referenced) = row[1], case .text(let name) = row[2],
                case .text(let definition) = row[3]
            else { return nil }
            return Key(table: table, referencedTable: referenced, name: name, definition: definition)
        }
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
