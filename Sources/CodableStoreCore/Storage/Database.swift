#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The storage seam: what the context, the coding layer and the importer need of a database connection. SQLite's
// `Connection` and `Statement` (CodableStoreSQLite) are the backend in the core; another backend is a module of its
// own that implements these protocols and `SQLDialect`. The SQL text itself is built by `SQLStorage` in the
// backend's `SQLDialect`; the context decides what to write and read, never how a database says it.
//
// Values cross the seam as `DatabaseValue` (integer, real, text, blob, null): the storage shape of every attribute
// type (``AttributeValue``). A backend converts them to and from its own column types.

/// A prepared statement: bind values, step through rows, read columns of the current row.
package protocol DatabaseStatement: AnyObject {
    /// The SQL it was prepared from, with `?` placeholders.
    var sql: String { get }
    var columnCount: Int32 { get }
    func bind(_ value: DatabaseValue, at index: Int32) throws
    func bind(_ value: Int64, at index: Int32) throws
    /// Binds values to parameters `first`, `first + 1`, … in order.
    func bind(_ values: ArraySlice<DatabaseValue>, from first: Int32) throws
    /// Advances to the next row; false when the statement is done.
    @discardableResult func step() throws -> Bool
    /// Runs the statement to completion and resets it.
    func execute() throws
    /// Makes the statement ready to run again; bindings are kept.
    func reset()
    func isNull(at column: Int32) -> Bool
    func int64(at column: Int32) -> Int64
    func value(at column: Int32) -> DatabaseValue
}

extension DatabaseStatement {
    /// Binds values to parameters 1, 2, … in order.
    package func bind(_ values: [DatabaseValue]) throws {
        try bind(values[...], from: 1)
    }

    /// One value at a time (SQLite's statement binds a row in one call).
    package func bind(_ values: ArraySlice<DatabaseValue>, from first: Int32) throws {
        var index = first
        for value in values {
            try bind(value, at: index)
            index += 1
        }
    }

    /// Runs the statement with these arguments to completion, then resets it.
    package func execute(_ arguments: [DatabaseValue]) throws {
        try bind(arguments)
        try execute()
    }

    /// Runs a statement written for `slots` items (an `IN` list of `slots` groups of parameters) over `items`,
    /// `slots` at a time, calling `row` on each result row. `bind` binds one item from a parameter index, which it
    /// advances. The last chunk repeats its last item to fill the slots, so the SQL stays the same and is prepared
    /// once.
    package func run<Item>(
        chunksOf items: [Item], slots: Int, bind: (any DatabaseStatement, Item, inout Int32) throws -> Void,
        row: (any DatabaseStatement) throws -> Void
    ) throws {
        var start = 0
        while start < items.count {
            let chunk = items[start..<min(start + slots, items.count)]
            var parameter: Int32 = 1
            for slot in 0..<slots {
                try bind(self, slot < chunk.count ? chunk[chunk.startIndex + slot] : chunk[chunk.endIndex - 1], &parameter)
            }
            defer { reset() }
            while try step() { try row(self) }
            start += slots
        }
    }
}

extension DatabaseStatement {
    /// ``run(chunksOf:slots:bind:row:)`` over row ids, one parameter each: what loads, deletes and clears rows by
    /// row id use.
    package func run(rowIDs: [Int64], slots: Int, row: (any DatabaseStatement) throws -> Void) throws {
        try run(chunksOf: rowIDs, slots: slots, bind: { statement, rowID, parameter in
            try statement.bind(rowID, at: parameter)
            parameter += 1
        }, row: row)
    }
}

/// A connection of a store: statements, transactions and savepoints. Used by one thread at a time.
package protocol DatabaseConnection: AnyObject {
    /// A statement prepared once per connection and reused (reset before it is returned).
    func cached(_ sql: String) throws -> any DatabaseStatement
    /// A statement owned by the caller.
    func prepare(_ sql: String) throws -> any DatabaseStatement
    /// Runs statements without arguments (several, separated by semicolons).
    func execute(sql: String) throws
    /// The most values one statement may bind.
    var maximumVariableCount: Int { get }
    var isInsideTransaction: Bool { get }
    /// Begins a transaction that writes, holding the store's write lock from the start.
    func beginWriteTransaction() throws
    /// Begins a transaction that writes with no other writer beside it, on a backend whose writers otherwise write in
    /// parallel (it waits for theirs to end, and keeps new ones waiting until it ends): what a transaction that met
    /// another writer's runs again in, so that its second attempt cannot meet one. Elsewhere a write transaction.
    func beginWriteTransaction(alone: Bool) throws
    /// Begins a transaction that only reads one consistent snapshot.
    func beginReadTransaction() throws
    /// Commits the transaction the caller has begun.
    func commit() throws
    /// Runs `body` in the transaction the caller has begun: commits when it returns, rolls back when it throws.
    func inBegunTransaction<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` in a savepoint: released when it returns, rolled back to its start when it throws.
    func inSavepoint<T>(named name: String, _ body: () throws -> T) throws -> T
    /// Opens a savepoint that stays open until ``releaseSavepoint(named:)`` or ``rollbackToSavepoint(named:)``.
    func beginSavepoint(named name: String) throws
    /// Releases a savepoint opened with ``beginSavepoint(named:)`` (and every savepoint opened after it): what was
    /// done since stays part of the transaction.
    func releaseSavepoint(named name: String) throws
    /// Undoes what was done since ``beginSavepoint(named:)`` opened the savepoint, and releases it: the transaction
    /// goes on (on a backend where a failed statement aborts the transaction, it is usable again).
    func rollbackToSavepoint(named name: String) throws
    /// Throws unless a transaction is open (the database may end one by itself after an error).
    func checkInsideTransaction(function: String) throws
    func rollbackIgnoringErrors()
    /// Tells other processes' stores, once the transaction commits, that it changed these entities' tables (the
    /// server backend's notification; nothing for SQLite, whose observers live in one process).
    func announceChanges(to entities: [String]) throws
    /// The size of the connection's page cache, in KiB; nil for a backend without one on the client side
    /// (a server's buffers are its own).
    func pageCacheSize() throws -> Int?
    /// Sets the size of the page cache, in KiB (nothing, for a backend without one).
    func setPageCacheSize(kibibytes: Int) throws
    /// Turns the checking of foreign keys, and their `ON DELETE` actions, on or off for this connection, between
    /// transactions; false when the backend cannot (a server's constraints stay checked) or a transaction is open.
    /// With them off, whoever deletes rows clears what refers to them (``SQLStorage/clearReferences(to:rowIDs:statements:)``).
    func setForeignKeyEnforcement(_ enabled: Bool) throws -> Bool
    /// Drops what an import into empty tables builds faster once their rows are in, inside the write transaction
    /// that is about to fill them (built again by ``DeferredBuilds/build()`` before it commits): SQLite's non-unique
    /// indexes of empty tables, while foreign keys are off (``IndexDeferral``; no other writer runs beside it anyway);
    /// with `alone` (the import may keep other sessions out of its tables, `ImportOptions.exclusiveAccess`), a
    /// server's foreign keys from, and non-unique indexes of, the empty tables among `tables` (those the import may
    /// write), checked and built with one query each instead of row by row, when no other session uses those tables
    /// (see `LoadDeferral` in CodableStorePostgres). Nil when there is nothing to defer (the default).
    func deferBuildsOfEmptyTables(writing tables: Set<String>, alone: Bool) throws -> (any DeferredBuilds)?
    /// Whether the database has triggers of its own (which change rows that no statement of the store's names),
    /// besides the store's ``StampGuards``: an import then keeps no cache of stored rows (see `RowCache`), and
    /// skips no records (``ImportOptions/skipsUnchangedRecords``).
    func hasTriggers() throws -> Bool
    /// Makes the store's stamp guards (triggers that clear a row's stamp when SQL of another program changes what the
    /// row's record would write; see ``RowStamps``) guard at least the rows of `entities`, in the caller's write
    /// transaction. Returns whether the guards of `previous` (the entities whose rows had stamps) were all there as
    /// made: if one was dropped or changed, their stamps may be stale. SQLite's are ``StampGuards``, installed per
    /// stamped entity; a server's are installed with the schema (for every entity whose rows can keep stamps), and
    /// made again here only when one is missing or changed.
    func installStampGuards(guarding entities: Set<Int>, previous: Set<Int>, storage: SQLStorage) throws -> Bool
    /// Takes the database for this connection alone until ``releaseExclusiveAccess()``, outside a transaction: other
    /// connections can neither read nor write it meanwhile, and SQLite writes each changed page once (a rollback
    /// journal) instead of twice (into the WAL, then by a checkpoint). False, with nothing changed, when another
    /// connection has the database open, a transaction is open, or the backend cannot (a server, in memory).
    func takeExclusiveAccess() throws -> Bool
    /// Gives the database back to other connections, in WAL mode again, after ``takeExclusiveAccess()`` and outside a
    /// transaction.
    func releaseExclusiveAccess() throws
    /// Row ids for new rows of `table` that no other writer will use, from the database (a server's sequence, in
    /// blocks), inside a write transaction; nil for a backend whose write lock keeps other writers out, where new
    /// rows follow the table's largest row id.
    func reserveRowIDs(table: String) throws -> Range<Int64>?
    /// Takes back reserved row ids that were not used (a context let go of its objects), for the next reservation.
    func returnRowIDs(_ rowIDs: Range<Int64>, table: String)
    /// Whether ``reserveRowIDs(table:)`` reserves row ids (a server with writers in parallel).
    var reservesRowIDs: Bool { get }
    /// Whether other connections write beside this one's write transactions (a server): an import that asks to be
    /// alone then takes its tables inside its transaction (``deferBuildsOfEmptyTables(writing:alone:)``), instead of
    /// the whole store before it (``takeExclusiveAccess()``).
    var writesInParallel: Bool { get }
    /// While `waits` is true, write transactions begun on this connection wait for other writers (the schema lock
    /// they share or hold, the rows they hold, the identities they inserted and have not committed) until those end,
    /// instead of at most the busy timeout: an import meets another import's rows for as long as that one runs, and a
    /// timeout shorter than the other's whole import would fail it. The server still finds deadlocks. Nothing on a
    /// backend whose write lock, taken at begin, leaves nothing else to wait for (SQLite).
    func setWaitsForWriters(_ waits: Bool)
}

/// Indexes or foreign keys an import dropped and builds once its rows are in (see
/// ``DatabaseConnection/deferBuildsOfEmptyTables(writing:alone:)``).
package protocol DeferredBuilds: AnyObject {
    /// Whether foreign keys are among them: until ``build()``, whoever deletes rows clears what refers to them
    /// (``SQLStorage/clearReferences(to:rowIDs:statements:)``), as with SQLite's foreign keys off.
    var suspendsForeignKeys: Bool { get }
    /// Builds those that do not exist, in the transaction that dropped them (nothing when they all do).
    func build() throws
    /// Forgets them, for an import that failed: rolling its transaction back restores them.
    func cancel()
}

extension DatabaseConnection {
    package func beginSavepoint(named name: String) throws {
        try execute(sql: "SAVEPOINT \(quoteIdentifier(name))")
    }

    package func releaseSavepoint(named name: String) throws {
        try execute(sql: "RELEASE SAVEPOINT \(quoteIdentifier(name))")
    }

    package func rollbackToSavepoint(named name: String) throws {
        try execute(sql: "ROLLBACK TO SAVEPOINT \(quoteIdentifier(name))")
        try execute(sql: "RELEASE SAVEPOINT \(quoteIdentifier(name))")
    }

    package func deferBuildsOfEmptyTables(writing tables: Set<String>, alone: Bool) throws -> (any DeferredBuilds)? { nil }
    package func takeExclusiveAccess() throws -> Bool { false }
    package func releaseExclusiveAccess() throws {}
    package func reserveRowIDs(table: String) throws -> Range<Int64>? { nil }
    package func beginWriteTransaction(alone: Bool) throws { try beginWriteTransaction() }
    package func returnRowIDs(_ rowIDs: Range<Int64>, table: String) {}
    package func setWaitsForWriters(_ waits: Bool) {}
    package var reservesRowIDs: Bool { false }
    package var writesInParallel: Bool { false }
}

extension DatabaseConnection {
    /// Runs a query and returns all its rows.
    package func rows(sql: String, arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var rows: [[DatabaseValue]] = []
        while try statement.step() { rows.append((0..<statement.columnCount).map(statement.value(at:))) }
        return rows
    }

    /// Runs a query and returns the first column of its first row, if any.
    package func scalar(sql: String, arguments: [DatabaseValue] = []) throws -> DatabaseValue? {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        guard try statement.step() else { return nil }
        return statement.value(at: 0)
    }

    /// Runs `body` in a write transaction (``beginWriteTransaction()``): commits when it returns, rolls back when
    /// it throws.
    package func inWriteTransaction<T>(alone: Bool = false, _ body: () throws -> T) throws -> T {
        try beginWriteTransaction(alone: alone)
        return try inBegunTransaction(body)
    }

    /// Runs `body` in a read transaction: one consistent snapshot.
    package func inReadTransaction<T>(_ body: () throws -> T) throws -> T {
        try beginReadTransaction()
        return try inBegunTransaction(body)
    }
}

/// How a store reaches its database: one writer at a time, readers beside it.
package protocol StoreBackend: Sendable {
    /// Creates the store's schema for `model`, or checks the stored one against it and migrates it (the options'
    /// migrations and ``SchemaChangePolicy``): the backend's DDL, run once when the store opens.
    func prepareSchema(for model: Schema, options: Store.Options) throws
    /// Starts hearing of other processes' commits, if the backend can: `handler` gets the names of the entities a
    /// commit changed. Called when the first observation starts; returns once listening.
    func listenForChanges(_ handler: @escaping @Sendable ([String]) -> Void)
    /// Runs `body` with the writer connection, holding the store's write lock: a second caller waits.
    func withWriter<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T
    /// Runs `body` with a reader connection.
    func withReader<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T
    /// Called when the store goes away.
    func close()
    /// Closes the readers waiting in the pool (a read opens a new one), so that the writer may take the store for
    /// itself (``DatabaseConnection/takeExclusiveAccess()``).
    func closeIdleReaders()
}

extension StoreBackend {
    package func closeIdleReaders() {}
}

// MARK: - SQLite

extension Statement: DatabaseStatement {}

extension Connection: DatabaseConnection {
    package func cached(_ sql: String) throws -> any DatabaseStatement { try cachedStatement(sql: sql) }
    package func prepare(_ sql: String) throws -> any DatabaseStatement { try makeStatement(sql: sql, persistent: true) }

    package func beginReadTransaction() throws {
        try execute(sql: "BEGIN DEFERRED TRANSACTION")
    }

    package func commit() throws {
        try execute(sql: "COMMIT TRANSACTION")
    }

    package func announceChanges(to entities: [String]) throws {}

    package func pageCacheSize() throws -> Int? {
        // A negative cache_size is in KiB, a positive one in pages.
        guard case .integer(let size)? = try scalar(sql: "PRAGMA cache_size") else { return nil }
        if size < 0 { return Int(-size) }
        guard case .integer(let pageSize)? = try scalar(sql: "PRAGMA page_size") else { return nil }
        return Int(size * pageSize / 1_024)
    }

    package func setPageCacheSize(kibibytes: Int) throws {
        try execute(sql: "PRAGMA cache_size = -\(max(kibibytes, 64))")
    }

    /// SQLite's own `ON DELETE` actions would read the tables that refer to a deleted row without a statement of the
    /// store's to see it: only with the foreign keys off (``setForeignKeyEnforcement(_:)``). Every empty table: the
    /// drop is not seen outside the transaction, and no other connection writes beside it.
    package func deferBuildsOfEmptyTables(writing tables: Set<String>, alone: Bool) throws -> (any DeferredBuilds)? {
        guard try scalar(sql: "PRAGMA foreign_keys") == .integer(0) else { return nil }
        return try IndexDeferral.begin(on: self)
    }

    package func installStampGuards(guarding entities: Set<Int>, previous: Set<Int>, storage: SQLStorage) throws -> Bool {
        try StampGuards.install(guarding: entities, previous: previous, storage: storage, on: self)
    }

    package func hasTriggers() throws -> Bool {
        // A TEMP trigger lives in the connection's temp schema, and fires on the main schema's tables too. The
        // store's own stamp guards change no column but `_digest`, which no cache keeps.
        let prefix = StampGuards.namePrefix
        return try scalar(
            sql: "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, \(prefix.utf8.count)) <> '\(prefix)' "
                + "UNION ALL SELECT 1 FROM sqlite_temp_master WHERE type = 'trigger' LIMIT 1") != nil
    }

    package func takeExclusiveAccess() throws -> Bool {
        // In memory, the journal mode is "memory": there is nobody to exclude.
        guard !isInsideTransaction, try scalar(sql: "PRAGMA journal_mode") == .text("wal") else { return false }
        // Leaving WAL mode needs every other connection closed: SQLite refuses at once with SQLITE_BUSY when one is
        // open, unless the busy handler makes it wait (for a connection that may stay open all along).
        let timeout = busyTimeout
        setBusyTimeout(0)
        let mode: DatabaseValue?
        do {
            defer { setBusyTimeout(timeout) }
            mode = try scalar(sql: "PRAGMA journal_mode = DELETE")
        } catch let error as SQLiteError where SQLiteError.busy ~= error.resultCode {
            return false
        }
        guard mode == .text("delete") else { return false }
        do {
            // EXCLUSIVE locking: the locks, once taken, are kept until released. The empty exclusive transaction
            // takes them now: with a rollback journal, readers could otherwise read until the first page is written.
            // FULL: with a rollback journal, NORMAL may leave a corrupt database after a power loss.
            try execute(sql: "PRAGMA locking_mode = EXCLUSIVE; PRAGMA synchronous = FULL; BEGIN EXCLUSIVE; COMMIT")
        } catch {
            // A reader came in between (its read outlasted the busy timeout): the store stays everyone's.
            rollbackIgnoringErrors()
            try releaseExclusiveAccess()
            return false
        }
        return true
    }

    package func releaseExclusiveAccess() throws {
        // NORMAL releases the locks at the next access: the switch back to WAL, which needs them still.
        try execute(sql: "PRAGMA locking_mode = NORMAL; PRAGMA synchronous = NORMAL")
        if let mode = try switchToWAL() {
            throw SQLiteError(resultCode: .SQLITE_ERROR, message: "cannot switch back to WAL mode (journal mode is \(mode))")
        }
    }

    /// Switches the database to WAL mode; the journal mode it is in when SQLite did not (a read-only folder, an
    /// in-memory database), nil when it did.
    func switchToWAL() throws -> String? {
        let mode = try scalar(sql: "PRAGMA journal_mode = WAL")
        return mode == .text("wal") ? nil : mode?.description ?? "unknown"
    }

    package func setForeignKeyEnforcement(_ enabled: Bool) throws -> Bool {
        // SQLite ignores the pragma inside a transaction.
        guard !isInsideTransaction else { return false }
        try execute(sql: "PRAGMA foreign_keys = \(enabled ? "ON" : "OFF")")
        return true
    }
}

/// An error of a backend other than SQLite (whose `SQLiteError` is known by name): a failure of the store, not of
/// the input.
package protocol DatabaseError: Error, CustomStringConvertible {}
