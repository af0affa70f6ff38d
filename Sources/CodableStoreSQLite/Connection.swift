import CSQLite

/// A connection to a SQLite database: the thin owner of a `sqlite3*` handle.
///
/// ```swift
/// let connection = try Connection(path: "/tmp/example.sqlite")
/// try connection.execute(sql: "CREATE TABLE t(a)")
/// try connection.inTransaction {
///     try connection.execute(sql: "INSERT INTO t VALUES (?)", arguments: [.integer(1)])
/// }
/// ```
///
/// A connection is not thread-safe and not `Sendable`: its owner (a `Store` of CodableStore) serializes all access, which
/// is why it is opened with `SQLITE_OPEN_NOMUTEX` (multi-thread mode): SQLite's own mutex would only add cost.
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/open.html>, <https://www.sqlite.org/threadsafe.html>
public final class Connection {
    /// How the database file is opened.
    public enum Mode: Sendable {
        /// Read and write, creating the file when missing.
        case readWriteCreate
        /// Read and write an existing file.
        case readWrite
        /// Read only.
        case readOnly
    }

    /// The `sqlite3*` handle.
    public let sqliteConnection: OpaquePointer
    /// The path it was opened with.
    public let path: String
    /// How long the connection waits for a lock held by another connection, in milliseconds.
    public private(set) var busyTimeout: Int32
    /// The name of the VFS it was opened with, or `nil` for SQLite's default VFS.
    public let vfs: String?
    private var statementCache: [String: Statement] = [:]
    private var statementUses = 0
    /// At most this many cached statements: SQL built from data (raw predicates, `IN` lists of varying
    /// length, one UPDATE per set of changed columns) would otherwise grow the cache for ever.
    public static let statementCacheLimit = 512
    /// The number of statements in the cache.
    public var cachedStatementCount: Int { statementCache.count }
    private var traceBox: TraceBox?

    /// Opens (and with `.readWriteCreate`, creates) a database.
    ///
    /// Opening is lazy in SQLite: a file that is not a database is only detected on first read. This initializer
    /// reads the schema once, so a bad file fails here with `SQLITE_NOTADB` rather than later.
    ///
    /// - Parameters:
    ///   - path: A file path, `":memory:"`, or a `file:` URI.
    ///   - mode: Read-write-create (default), read-write or read-only.
    ///   - busyTimeout: How long to wait for a lock held by another connection, in milliseconds.
    ///   - vfs: The name of a registered SQLite VFS (operating-system interface) to open the file with; `nil`,
    ///     the default, is SQLite's default VFS (`"unix"` on Linux and macOS).
    /// - Throws: ``SQLiteError`` (`SQLITE_CANTOPEN`, `SQLITE_NOTADB`, `SQLITE_CORRUPT`, …; `SQLITE_ERROR`
    ///   "no such vfs" for a VFS name that is not registered).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/vfs.html>
    public init(path: String, mode: Mode = .readWriteCreate, busyTimeout: Int32 = 5_000, vfs: String? = nil) throws {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, flags, vfs)
        guard let handle else {
            throw SQLiteError(resultCode: .init(rawValue: SQLITE_NOMEM), message: "out of memory", sql: nil)
        }
        // > Whether or not an error occurs when it is opened, resources associated with the database connection
        // > handle should be released by passing it to sqlite3_close() when it is no longer required.
        do {
            try check(code, handle)
        } catch {
            sqlite3_close_v2(handle)
            throw SQLiteError(
                resultCode: error.resultCode,
                message: "\(error.message): cannot open '\(path)'",
                sql: nil
            )
        }
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeout)
        self.busyTimeout = busyTimeout
        self.sqliteConnection = handle
        self.path = path
        self.vfs = vfs
        // Detect "not a database" and corruption of the header now.
        try execute(sql: "SELECT count(*) FROM sqlite_master")
    }

    deinit {
        statementCache.removeAll()
        // Statements cached elsewhere are finalized by their owners; close_v2 defers until they are.
        sqlite3_close_v2(sqliteConnection)
    }

    // MARK: - Statements

    /// Prepares a new statement, owned by the caller.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/prepare.html>
    public func makeStatement(sql: String, persistent: Bool = false) throws -> Statement {
        if let willPrepare { try willPrepare(sql) }
        var handle: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(sqliteConnection, sql, -1, flags, &handle, nil)
        try check(code, sqliteConnection, sql: sql)
        guard let handle else {
            throw SQLiteError(resultCode: .SQLITE_MISUSE, message: "empty statement", sql: sql)
        }
        return Statement(sqliteStatement: handle, sql: sql, sqliteConnection: sqliteConnection)
    }

    /// Called with the SQL of every statement about to be prepared (``makeStatement(sql:persistent:)``, a
    /// ``cachedStatement(sql:)`` not in the cache, ``rows(sql:arguments:)``, …), before it is; what it throws, the
    /// preparation throws. Not called for ``execute(sql:)``. The store uses it to build indexes it deferred during a
    /// bulk load before a statement that would read a table without them.
    package var willPrepare: ((String) throws -> Void)?

    /// A statement prepared once per connection and reused; reset before it is returned.
    ///
    /// Use it for SQL that is built from the schema (never from data) and runs many times.
    public func cachedStatement(sql: String) throws -> Statement {
        statementUses &+= 1
        if let statement = statementCache[sql] {
            statement.reset()
            statement.lastUse = statementUses
            return statement
        }
        if statementCache.count >= Self.statementCacheLimit { evictLeastRecentlyUsedStatements() }
        let statement = try makeStatement(sql: sql, persistent: true)
        statement.lastUse = statementUses
        statementCache[sql] = statement
        return statement
    }

    /// Drops the least recently used quarter of the cache (a statement still held by a caller stays valid:
    /// it is finalized when released).
    private func evictLeastRecentlyUsedStatements() {
        let uses = statementCache.values.map(\.lastUse).sorted()
        let threshold = uses[uses.count / 4]
        statementCache = statementCache.filter { $0.value.lastUse > threshold }
    }

    /// Drops the cached statements, after a schema change for instance.
    public func clearStatementCache() {
        statementCache.removeAll()
    }

    // MARK: - Executing

    /// Executes one or more statements separated by semicolons, without arguments.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/exec.html>
    public func execute(sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(sqliteConnection, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) }
            sqlite3_free(message)
            var error: SQLiteError
            do {
                try check(code, sqliteConnection, sql: sql)
                return
            } catch let thrown {
                error = thrown
            }
            if let text { error = SQLiteError(resultCode: error.resultCode, message: text, sql: sql) }
            throw error
        }
    }

    /// Executes one statement with bound arguments.
    public func execute(sql: String, arguments: [SQLiteValue]) throws {
        let statement = try makeStatement(sql: sql)
        try statement.execute(arguments)
    }

    /// Runs a query and returns all its rows.
    public func rows(sql: String, arguments: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        let statement = try makeStatement(sql: sql)
        try statement.bind(arguments)
        var rows: [[SQLiteValue]] = []
        while try statement.step() { rows.append(statement.row()) }
        return rows
    }

    /// Runs a query and returns the first column of its first row, if any.
    public func scalar(sql: String, arguments: [SQLiteValue] = []) throws -> SQLiteValue? {
        let statement = try makeStatement(sql: sql)
        try statement.bind(arguments)
        guard try statement.step() else { return nil }
        return statement.value(at: 0)
    }

    /// The rowid of the most recent successful INSERT on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(sqliteConnection) }
    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(sqliteConnection)) }
    /// Whether the main database was opened read-only (or fell back to read-only, as SQLite does when the
    /// file is not writable).
    public var isReadOnly: Bool { sqlite3_db_readonly(sqliteConnection, "main") == 1 }
    /// Whether closing this connection, when it is the database's last one, checkpoints the WAL and deletes it
    /// (SQLite's default: on).
    ///
    /// To do that, SQLite takes an EXCLUSIVE lock on the database file for the time of the checkpoint, and a
    /// connection of another process that starts a read in that moment fails with `SQLITE_BUSY` ("database is
    /// locked") unless it has a busy timeout. With this off, closing takes no lock: the WAL is checkpointed by
    /// later writes (automatic checkpoints) or ``checkpoint(_:)``, and its file stays next to the database.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfignockptonclose>,
    /// <https://www.sqlite.org/wal.html#the_wal_file>
    public func setCheckpointsOnClose(_ enabled: Bool) throws {
        let code = _codablestore_sqlite_db_config_int(sqliteConnection, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1)
        try check(code, sqliteConnection)
    }

    /// Turns the firing of triggers by this connection's statements on or off (SQLite's default: on). It affects this
    /// connection alone, and no foreign-key action; SQLite prepares this connection's statements again.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfigenabletrigger>
    public func setTriggersEnabled(_ enabled: Bool) throws {
        let code = _codablestore_sqlite_db_config_int(sqliteConnection, SQLITE_DBCONFIG_ENABLE_TRIGGER, enabled ? 1 : 0)
        try check(code, sqliteConnection)
        firesTriggers = enabled
    }

    /// Whether this connection's statements fire triggers (see ``setTriggersEnabled(_:)``).
    public private(set) var firesTriggers = true
    /// For the store that writes through this connection: the schema versions (main, temp) at which it last decided
    /// whether its writes fire triggers; nil to decide again.
    package var triggerDecision: (main: Int64, temp: Int64)?

    /// How a checkpoint treats the readers and writers of other connections.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/wal_checkpoint_v2.html>
    public enum CheckpointMode: Sendable {
        /// Copies what it can without waiting for anyone and without blocking anyone.
        case passive
        /// Waits (up to the busy timeout) until no reader uses the WAL, copies all of it, and truncates the WAL
        /// file to zero bytes. Writers are blocked meanwhile; readers are not.
        case truncate

        var code: Int32 {
            switch self {
            case .passive: SQLITE_CHECKPOINT_PASSIVE
            case .truncate: SQLITE_CHECKPOINT_TRUNCATE
            }
        }
    }

    /// Copies what the WAL holds into the database file (a checkpoint).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/wal_checkpoint_v2.html>
    public func checkpoint(_ mode: CheckpointMode = .passive) throws {
        let code = sqlite3_wal_checkpoint_v2(sqliteConnection, nil, mode.code, nil, nil)
        try check(code, sqliteConnection)
    }

    /// Sets how long this connection waits for a lock held by another connection, in milliseconds.
    public func setBusyTimeout(_ milliseconds: Int32) {
        sqlite3_busy_timeout(sqliteConnection, milliseconds)
        busyTimeout = milliseconds
    }

    /// Whether a transaction is open (autocommit is off).
    public var isInsideTransaction: Bool { sqlite3_get_autocommit(sqliteConnection) == 0 }
    /// The maximum number of `?` parameters in one statement.
    public var maximumVariableCount: Int { Int(sqlite3_limit(sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) }

    // MARK: - Transactions

    /// How a transaction takes its locks.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_transaction.html>
    public enum TransactionKind: String, Sendable {
        case deferred = "DEFERRED"
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    public func inTransaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        try execute(sql: "BEGIN \(kind.rawValue) TRANSACTION")
        return try inBegunTransaction(body)
    }

    /// Runs `body` in the transaction the caller has begun: commits when it returns, rolls back when it throws.
    package func inBegunTransaction<T>(_ body: () throws -> T) throws -> T {
        precondition(isInsideTransaction, "inBegunTransaction(_:) needs a transaction begun")
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        do {
            try execute(sql: "COMMIT TRANSACTION")
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        return result
    }

    /// Runs `body` in a savepoint, which nests inside a transaction: released when it returns, rolled back
    /// (to its start) when it throws.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_savepoint.html>
    public func inSavepoint<T>(named name: String = "codablestore", _ body: () throws -> T) throws -> T {
        let quoted = quoteIdentifier(name)
        try execute(sql: "SAVEPOINT \(quoted)")
        do {
            let result = try body()
            try execute(sql: "RELEASE SAVEPOINT \(quoted)")
            return result
        } catch {
            try? execute(sql: "ROLLBACK TRANSACTION TO SAVEPOINT \(quoted)")
            try? execute(sql: "RELEASE SAVEPOINT \(quoted)")
            throw error
        }
    }

    /// Throws unless a transaction is open: SQLite rolls a whole transaction back by itself after some errors
    /// (an I/O error, a full disk, no memory), and a statement run after one was caught would then commit on
    /// its own, outside the transaction it belongs to.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_transaction.html> ("Response To Errors
    /// Within A Transaction")
    public func checkInsideTransaction(function: String = #function) throws {
        guard !isInsideTransaction else { return }
        throw SQLiteError(
            resultCode: .SQLITE_ABORT_ROLLBACK,
            message: "the transaction was rolled back by SQLite after an earlier error (an I/O error or a full disk); nothing more is written",
            function: function)
    }

    package func rollbackIgnoringErrors() {
        // > If the transaction has already been rolled back automatically by the error response, then the
        // > ROLLBACK command will fail with an error, but no harm is caused by this.
        if isInsideTransaction { try? execute(sql: "ROLLBACK TRANSACTION") }
    }

    // MARK: - Tracing

    /// Runs `body` with tracing suspended: the statements it runs are reported to neither handler (bookkeeping of
    /// the connection's owner that is not the caller's work, such as a check at the start of each transaction).
    package func untraced<T>(_ body: () throws -> T) rethrows -> T {
        let box = traceBox
        box?.isSuspended = true
        defer { box?.isSuspended = false }
        return try body()
    }

    /// Calls `handler` with the SQL of every statement as it starts running (`SQLITE_TRACE_STMT`), or stops
    /// tracing when `handler` is nil. Tests use it to count queries; logging uses it at trace level.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/trace_v2.html>
    public func trace(_ handler: ((String) -> Void)?) {
        trace(statements: handler, profile: nil)
    }

    /// Calls `statements` with the SQL of every statement as it starts running (`SQLITE_TRACE_STMT`), and
    /// `profile` with the SQL of every statement when it finishes (is reset or finalized), with the nanoseconds it
    /// ran (`SQLITE_TRACE_PROFILE`, for a statement profile). With both nil, tracing stops.
    ///
    /// The SQL is the statement's text with its `?` placeholders, not the bound values: one text per kind of
    /// statement. A trigger that fires is reported too, as SQLite writes it: `-- TRIGGER name`, then each statement of
    /// its body after `-- `. Related SQLite documentation: <https://www.sqlite.org/c3ref/trace_v2.html>
    public func trace(statements: ((String) -> Void)?, profile: ((String, UInt64) -> Void)?) {
        guard statements != nil || profile != nil else {
            sqlite3_trace_v2(sqliteConnection, 0, nil, nil)
            traceBox = nil
            return
        }
        let box = TraceBox(statements: statements, profile: profile)
        traceBox = box
        let mask = (statements == nil ? 0 : UInt32(SQLITE_TRACE_STMT)) | (profile == nil ? 0 : UInt32(SQLITE_TRACE_PROFILE))
        sqlite3_trace_v2(
            sqliteConnection, mask,
            { event, context, statement, detail in
                guard let context, let statement, let sql = sqlite3_sql(OpaquePointer(statement)) else { return 0 }
                let box = Unmanaged<TraceBox>.fromOpaque(context).takeUnretainedValue()
                if box.isSuspended { return 0 }
                if event == UInt32(SQLITE_TRACE_STMT) {
                    // A trigger's program, which runs under its statement: "-- TRIGGER name", then "-- " and each
                    // statement of its body (sqlite3_sql would give the outer statement's text again).
                    if let text = detail?.assumingMemoryBound(to: CChar.self), text[0] == 0x2D, text[1] == 0x2D {
                        box.statements?(String(cString: text))
                    } else {
                        box.statements?(String(cString: sql))
                    }
                } else if event == UInt32(SQLITE_TRACE_PROFILE), let detail {
                    box.profile?(String(cString: sql), detail.load(as: UInt64.self))
                }
                return 0
            },
            Unmanaged.passUnretained(box).toOpaque()
        )
    }
}

extension Connection {
    /// Registers the `codablestore_decimal` collation, which orders decimal numbers written as text (`-12.5`,
    /// `0.001`, `1E+30`) by value, exactly: `9 < 10`, `1.5 = 1.50`. Text that is not a decimal number sorts before
    /// every number, by its bytes. CodableStore declares its `Decimal` columns with it, so comparisons, `ORDER BY`,
    /// `min`/`max` and indexes of those columns follow the numbers' order.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/create_collation.html>
    public func registerDecimalCollation() throws {
        let code = sqlite3_create_collation_v2(
            sqliteConnection, "codablestore_decimal", SQLITE_UTF8, nil,
            { _, leftCount, left, rightCount, right in
                let a = UnsafeRawBufferPointer(start: left, count: Int(leftCount))
                let b = UnsafeRawBufferPointer(start: right, count: Int(rightCount))
                return Int32(DecimalText.compare(a, b))
            }, nil)
        try check(code, sqliteConnection)
    }

    /// Registers `codablestore_fold(text)`: the text lowercased with Unicode case mapping (SQLite's own
    /// `lower()` folds ASCII letters only). Case-insensitive predicates compare folded text.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/create_function.html>
    public func registerCaseFolding() throws {
        let code = sqlite3_create_function_v2(
            sqliteConnection, "codablestore_fold", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, count, values in
                guard count == 1, let value = values?[0] else { return sqlite3_result_null(context) }
                guard sqlite3_value_type(value) == SQLITE_TEXT, let text = sqlite3_value_text(value) else {
                    // Not text (NULL, numbers): unchanged.
                    return sqlite3_result_value(context, value)
                }
                let length = Int(sqlite3_value_bytes(value))
                let folded = String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self).lowercased()
                let bytes = Array(folded.utf8)
                bytes.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { characters in
                        if let base = characters.baseAddress {
                            sqlite3_result_text(context, base, Int32(characters.count), SQLITE_TRANSIENT)
                        } else {
                            sqlite3_result_text(context, "", 0, SQLITE_TRANSIENT)
                        }
                    }
                }
            }, nil, nil, nil)
        try check(code, sqliteConnection)
    }
}

private final class TraceBox {
    let statements: ((String) -> Void)?
    let profile: ((String, UInt64) -> Void)?
    /// While true (``Connection/untraced(_:)``), nothing is reported.
    var isSuspended = false
    init(statements: ((String) -> Void)?, profile: ((String, UInt64) -> Void)?) {
        self.statements = statements
        self.profile = profile
    }
}

// Connections are owned by a Store, which serializes every use of one: never share them across threads.
@available(*, unavailable)
extension Connection: Sendable {}

/// Quotes an SQL identifier (`"name"`, with inner quotes doubled), so no identifier is ever spliced raw.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_keywords.html>
public func quoteIdentifier(_ name: String) -> String {
    var quoted = "\""
    for character in name {
        if character == "\"" { quoted += "\"\"" } else { quoted.append(character) }
    }
    return quoted + "\""
}
