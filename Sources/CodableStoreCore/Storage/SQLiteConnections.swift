import Logging

/// A store's connections to its SQLite database: one writer, behind a lock (writes are serialized), and a pool of
/// read-only readers, which WAL mode lets read while a write runs. An in-memory database has the writer only, and
/// reads wait for it.
///
/// Every connection is configured alike (foreign keys, case folding for predicates, the statement trace); the
/// writer also switches the file to WAL mode, and refuses a file it can only read.
///
/// Related SQLite documentation: <https://www.sqlite.org/wal.html>, <https://www.sqlite.org/pragma.html>
final class SQLiteConnections: StoreBackend {
    let path: String
    let isInMemory: Bool
    private let options: Store.Options
    private let writer: SerializedConnection
    private let readers = Locked<[ConnectionBox]>([])

    /// Opens the writer connection.
    /// - Throws: `SQLiteError` when the file cannot be opened, can only be read, or cannot switch to WAL mode.
    init(path: String, inMemory: Bool, options: Store.Options) throws {
        let connection = try Connection(path: path, busyTimeout: options.busyTimeout, vfs: options.vfs)
        if !inMemory {
            if connection.isReadOnly {
                throw SQLiteError(
                    resultCode: .SQLITE_READONLY,
                    message: "the database at '\(path)' can only be opened read-only (check the permissions of the file and its folder)")
            }
            // WAL lets readers run while a write is in progress.
            if let mode = try connection.switchToWAL() {
                throw SQLiteError(
                    resultCode: .SQLITE_CANTOPEN,
                    message: "cannot switch '\(path)' to WAL mode (journal mode is \(mode)); is the folder writable?")
            }
        }
        // Foreign keys keep rows consistent when objects are deleted (SET NULL, CASCADE); they are checked at
        // commit (DEFERRABLE INITIALLY DEFERRED), so write order inside a transaction does not matter.
        try connection.execute(sql: "PRAGMA foreign_keys = ON")
        // With WAL, NORMAL is durable against application crashes and keeps the database consistent on power loss.
        try connection.execute(sql: "PRAGMA synchronous = NORMAL")
        try Self.configure(connection, cacheSizeKiB: options.cacheSizeKiB, options: options)
        self.path = path
        self.isInMemory = inMemory
        self.options = options
        self.writer = SerializedConnection(connection)
    }

    func withWriter<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try writer.withConnection { try body($0) }
    }

    /// Observers hear of this store's own writes only (another process's writes to the file are not announced).
    func listenForChanges(_ handler: @escaping @Sendable ([String]) -> Void) {}

    func prepareSchema(for model: Schema, options: Store.Options) throws {
        try withWriter { connection in
            try SQLiteMigration.prepare(
                connection, model: model, policy: options.schemaChangePolicy, migrations: options.migrations, logger: options.logger)
        }
    }

    func withReader<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try withReader { (connection: Connection) in try body(connection) }
    }

    /// What every connection gets.
    private static func configure(_ connection: Connection, cacheSizeKiB: Int, options: Store.Options) throws {
        try connection.execute(sql: "PRAGMA cache_size = -\(max(cacheSizeKiB, 64))")
        // Closing the last connection would otherwise checkpoint under an EXCLUSIVE lock, during which another
        // process's reader without a busy timeout gets "database is locked".
        try connection.setCheckpointsOnClose(false)
        try connection.registerCaseFolding()
        try connection.registerDecimalCollation()
        let observer = options.statementObserver
        let logger = options.logger
        let observes = observer != nil || logger.logLevel <= .trace
        guard observes || options.statementProfiler != nil else { return }
        connection.trace(
            statements: observes
                ? { sql in
                    observer?(sql)
                    logger.trace("statement", metadata: ["sql": "\(sql)"])
                } : nil,
            profile: options.statementProfiler.map { profiler in { sql, nanoseconds in profiler(sql, .nanoseconds(Int64(nanoseconds))) } })
    }

    /// Runs `body` with the writer connection, holding the write lock: a second caller waits.
    func withWriter<T: Sendable>(_ body: (Connection) throws -> T) throws -> T {
        try writer.withConnection(body)
    }

    /// Runs `body` with a reader connection of the pool (a new one when none is free); in memory, with the writer.
    func withReader<T: Sendable>(_ body: (Connection) throws -> T) throws -> T {
        if isInMemory { return try writer.withConnection(body) }
        let box = try takeReader()
        defer { returnReader(box) }
        return try body(box.connection)
    }

    private func takeReader() throws -> ConnectionBox {
        if let box = readers.withLock({ $0.popLast() }) { return box }
        let connection = try Connection(path: path, mode: .readOnly, busyTimeout: options.busyTimeout, vfs: options.vfs)
        try Self.configure(connection, cacheSizeKiB: options.cacheSizeKiB / 4, options: options)
        return ConnectionBox(connection)
    }

    func closeIdleReaders() {
        // Taken out under the lock, closed as they go when `idle` ends, outside it.
        let idle = readers.withLock { pool in
            var taken: [ConnectionBox] = []
            swap(&taken, &pool)
            return taken
        }
        _ = idle
    }

    private func returnReader(_ box: ConnectionBox) {
        readers.withLock { pool in
            if pool.count < options.maximumReaderCount { pool.append(box) }
        }
    }

    /// What the store does when it goes away. Closing does not checkpoint (see `configure`). Instead, copy the WAL
    /// into the database and empty it now, without waiting for anyone: the next process to open the store, if it is
    /// the only one, rebuilds the WAL's index from the WAL, and other processes' readers get SQLITE_BUSY_RECOVERY
    /// while it does; an empty WAL makes that a matter of microseconds. A reader in the way leaves the work to later
    /// writers.
    func close() {
        guard !isInMemory else { return }
        try? writer.withConnection { connection in
            connection.setBusyTimeout(0)
            try connection.checkpoint(.truncate)
        }
    }
}

/// The writer connection behind a lock.
///
/// `@unchecked Sendable` is safe: `connection` is only reached through `withConnection`, which holds the lock
/// for the whole use, so one thread at a time touches it.
private final class SerializedConnection: @unchecked Sendable {
    // A bare mutex, not a `Locked(())`: see `Locked` for why an empty value is kept out of it.
    private let lock = Monitor()
    private let connection: Connection

    init(_ connection: Connection) { self.connection = connection }

    func withConnection<T: Sendable>(_ body: (Connection) throws -> T) throws -> T {
        try lock.withLock { try body(connection) }
    }
}

/// A reader connection moving in and out of the pool.
///
/// `@unchecked Sendable` is safe: a box is either in the pool (untouched) or owned by exactly one `read` call.
private final class ConnectionBox: @unchecked Sendable {
    let connection: Connection
    init(_ connection: Connection) { self.connection = connection }
}

extension Connection {
    /// Begins a transaction that holds the store's write lock from the start (`BEGIN IMMEDIATE`), so that it
    /// never fails halfway for another writer. Waits up to the busy timeout for another connection's write to
    /// end, then throws ``StoreError/Code/storeBusy``.
    package func beginWriteTransaction() throws {
        do {
            try execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        } catch let error as SQLiteError where ResultCode.SQLITE_BUSY ~= error.resultCode {
            throw StoreError.storeBusy(waitedMilliseconds: busyTimeout, cause: error)
        }
        do {
            // Not traced: statement logs and profiles show the caller's statements.
            try untraced { try StampGuards.quiet(on: self) }
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
    }
}
