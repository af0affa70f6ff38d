import CodableStore
import Foundation
import Logging
import NIOCore
import PostgresNIO

/// One connection to the server, used synchronously by one thread at a time: the context's calls wait for
/// postgres-nio's event loop (never on it, and never on a task of Swift's cooperative pool). The store's `async`
/// methods run their closures on threads of their own, so a waiting connection holds no cooperative thread.
final class PostgresDatabaseConnection: DatabaseConnection {
    let connection: PostgresConnection
    private let logger: Logger
    private let observer: (@Sendable (String) -> Void)?
    private let profiler: (@Sendable (String, Duration) -> Void)?
    private var statementCache: [String: PostgresStatement] = [:]
    /// How long a write waits for another process's write lock, in milliseconds.
    private let busyTimeout: Int32
    private(set) var isInsideTransaction = false
    /// Where commits are announced (``announceChanges(to:)``), and this store's mark on its own announcements.
    var announcement: (channel: String, token: String)?
    /// Set when a statement failed inside the transaction: PostgreSQL then refuses everything until a rollback.
    private var isAborted = false

    init(connection: PostgresConnection, options: Store.Options) {
        self.connection = connection
        self.logger = options.logger
        self.observer = options.statementObserver
        self.profiler = options.statementProfiler
        self.busyTimeout = options.busyTimeout
    }

    /// Connects, waiting for the server.
    static func connect(_ configuration: PostgresConfiguration, options: Store.Options) throws -> PostgresDatabaseConnection {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.any()
        do {
            let connection = try PostgresConnection.connect(
                on: eventLoop, configuration: configuration.connection, id: configuration.nextID(), logger: options.logger
            ).wait()
            return PostgresDatabaseConnection(connection: connection, options: options)
        } catch {
            throw StoreError(
                .connectionFailed, "cannot connect to \(configuration.redactedURL): \(PostgresError(error, sql: nil))",
                cause: PostgresError(error, sql: nil))
        }
    }

    deinit { close() }

    /// Closes the connection, waiting for the server to be told (postgres-nio requires a close before release).
    func close() {
        guard !connection.isClosed else { return }
        try? connection.close().wait()
    }

    // MARK: - Running statements

    /// Runs one statement with its arguments and returns its rows, converted to values.
    func run(_ sql: String, postgresSQL: String, arguments: [SQLiteValue]) throws -> [[SQLiteValue]] {
        observer?(sql)
        if logger.logLevel <= .trace { logger.trace("statement", metadata: ["sql": "\(sql)"]) }
        if isAborted {
            throw PostgresError(
                sqlState: "25P02", message: "an earlier statement of the transaction failed; nothing more runs until it is rolled back",
                sql: postgresSQL)
        }
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            if case .null = argument { bindings.appendNull() } else { bindings.append(BoundValue(value: argument)) }
        }
        do {
            let start = ContinuousClock.now
            let result = try connection.query(PostgresQuery(unsafeSQL: postgresSQL, binds: bindings), logger: logger).wait()
            // The statement's time as the client sees it: the round trip and the server's work.
            profiler?(sql, ContinuousClock.now - start)
            return try result.rows.map { row in try row.map(Self.value(of:)) }
        } catch {
            if isInsideTransaction { isAborted = true }
            throw PostgresError(error, sql: postgresSQL)
        }
    }

    /// A result column as the storage shape of attribute values.
    static func value(of cell: PostgresCell) throws -> SQLiteValue {
        guard let bytes = cell.bytes else { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return .integer(try cell.decode(Int64.self))
        case .float8, .float4: return .real(try cell.decode(Double.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .bytea: return .blob(Data(bytes.readableBytesView))
        case .numeric:
            // Exact decimal text, as SQLite stores a Decimal.
            return .text("\(try cell.decode(Decimal.self))")
        default:
            if cell.format == .text { return .text(String(buffer: bytes)) }
            return .text(try cell.decode(String.self))
        }
    }

    // MARK: - DatabaseConnection

    func cached(_ sql: String) throws -> any DatabaseStatement {
        if let statement = statementCache[sql] {
            statement.reset()
            return statement
        }
        let statement = PostgresStatement(sql: sql, connection: self)
        if statementCache.count >= 1_000 { statementCache.removeAll(keepingCapacity: true) }
        statementCache[sql] = statement
        return statement
    }

    func prepare(_ sql: String) throws -> any DatabaseStatement {
        PostgresStatement(sql: sql, connection: self)
    }

    func execute(sql: String) throws {
        _ = try run(sql, postgresSQL: sql, arguments: [])
    }

    /// PostgreSQL takes up to 65,535 parameters per statement.
    var maximumVariableCount: Int { 32_766 }

    func beginWriteTransaction() throws {
        try begin("BEGIN ISOLATION LEVEL READ COMMITTED")
        do {
            // Writes are serialized per schema across every process, as SQLite serializes them per file: a write sees
            // everything committed before it, and its row ids and identity lookups cannot race another writer's.
            _ = try run(
                "SET LOCAL lock_timeout", postgresSQL: "SET LOCAL lock_timeout = \(max(1, Int(busyTimeout)))", arguments: [])
            _ = try run(
                "SELECT pg_advisory_xact_lock(…)",
                postgresSQL: "SELECT pg_advisory_xact_lock(hashtextextended('codablestore.' || current_schema(), 0))",
                arguments: [])
        } catch let error as PostgresError where error.sqlState == PostgresError.lockNotAvailable {
            rollbackIgnoringErrors()
            throw StoreError.storeBusy(waitedMilliseconds: busyTimeout, cause: error)
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
    }

    func beginReadTransaction() throws {
        try begin("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    }

    private func begin(_ sql: String) throws {
        precondition(!isInsideTransaction, "a transaction is already open on this connection")
        _ = try run(sql, postgresSQL: sql, arguments: [])
        isInsideTransaction = true
        isAborted = false
    }

    func inBegunTransaction<T>(_ body: () throws -> T) throws -> T {
        precondition(isInsideTransaction, "inBegunTransaction(_:) needs a transaction begun")
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        try commit()
        return result
    }

    func commit() throws {
        do {
            _ = try run("COMMIT", postgresSQL: "COMMIT", arguments: [])
            isInsideTransaction = false
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
    }

    func inSavepoint<T>(named name: String, _ body: () throws -> T) throws -> T {
        let quoted = quoteIdentifier(name)
        try execute(sql: "SAVEPOINT \(quoted)")
        do {
            let result = try body()
            try execute(sql: "RELEASE SAVEPOINT \(quoted)")
            return result
        } catch {
            isAborted = false
            try? execute(sql: "ROLLBACK TO SAVEPOINT \(quoted)")
            try? execute(sql: "RELEASE SAVEPOINT \(quoted)")
            throw error
        }
    }

    func checkInsideTransaction(function: String) throws {
        guard isInsideTransaction else {
            throw StoreError(.unsupported, "\(function) needs a transaction, and none is open")
        }
        if isAborted {
            throw PostgresError(
                sqlState: "25P02", message: "an earlier statement of the transaction failed; nothing more is written")
        }
    }

    /// NOTIFY is transactional: other processes hear of the change when (and only if) the transaction commits.
    func announceChanges(to entities: [String]) throws {
        guard let announcement, !entities.isEmpty else { return }
        let statement = try cached("SELECT pg_notify(?, ?)")
        try statement.execute([.text(announcement.channel), .text(announcement.token + " " + entities.joined(separator: ","))])
    }

    /// The server's buffers are its own: nothing to size here.
    func pageCacheSize() throws -> Int? { nil }
    func setPageCacheSize(kibibytes: Int) throws {}

    /// A server's constraints cannot be turned off for a session (short of a superuser's replication role): they
    /// stay checked, deferred to the commit.
    func setForeignKeyEnforcement(_ enabled: Bool) throws -> Bool { false }

    /// Any trigger on a table of the store's schema (the current one), the internal ones that check foreign keys
    /// aside: a trigger fires on its own table's changes, so those of other schemas never see the store's.
    func hasTriggers() throws -> Bool {
        try scalar(
            sql: "SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                + "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace LIMIT 1") != nil
    }

    func rollbackIgnoringErrors() {
        guard isInsideTransaction else { return }
        isAborted = false
        _ = try? run("ROLLBACK", postgresSQL: "ROLLBACK", arguments: [])
        isInsideTransaction = false
    }
}

/// A value bound in text format with no declared type: the server gives the parameter the type its place in the
/// statement needs (`bigint` next to a bigint column, `numeric` for a Decimal), as SQLite's affinity would.
private struct BoundValue: PostgresDynamicTypeEncodable {
    let value: SQLiteValue
    var psqlType: PostgresDataType { .null }  // OID 0: unspecified
    var psqlFormat: PostgresFormat { .text }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        switch value {
        case .null: break
        case .integer(let integer): buffer.writeString(String(integer))
        case .real(let real):
            if real.isNaN {
                buffer.writeString("NaN")
            } else if real.isInfinite {
                buffer.writeString(real < 0 ? "-Infinity" : "Infinity")
            } else {
                buffer.writeString("\(real)")
            }
        case .text(let text): buffer.writeString(text)
        case .blob(let data):
            // bytea's hex input format.
            buffer.writeString("\\x")
            let digits = Array("0123456789abcdef".utf8)
            for byte in data {
                buffer.writeInteger(digits[Int(byte >> 4)])
                buffer.writeInteger(digits[Int(byte & 0xF)])
            }
        }
    }
}

/// A statement: its SQL with `$n` placeholders, the values bound to it, and the rows of its last run, read one
/// `step()` at a time.
final class PostgresStatement: DatabaseStatement {
    let sql: String
    private let postgresSQL: String
    private let parameterCount: Int
    private unowned let connection: PostgresDatabaseConnection
    private var arguments: [SQLiteValue]
    private var rows: [[SQLiteValue]]?
    private var current = -1

    init(sql: String, connection: PostgresDatabaseConnection) {
        self.sql = sql
        (postgresSQL, parameterCount) = Self.numberPlaceholders(sql)
        self.connection = connection
        self.arguments = Array(repeating: .null, count: parameterCount)
    }

    /// `?` → `$1`, `$2`, … outside quoted names and string literals.
    static func numberPlaceholders(_ sql: String) -> (String, Int) {
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var count = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                result.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                result.append(character)
            } else if character == "?" {
                count += 1
                result += "$\(count)"
            } else {
                result.append(character)
            }
        }
        return (result, count)
    }

    var columnCount: Int32 { Int32(rows?.first?.count ?? 0) }

    func bind(_ value: SQLiteValue, at index: Int32) throws {
        guard index >= 1, Int(index) <= parameterCount else {
            throw PostgresError(sqlState: nil, message: "parameter \(index) is out of range (1…\(parameterCount))", sql: postgresSQL)
        }
        arguments[Int(index) - 1] = value
    }

    func bind(_ value: Int64, at index: Int32) throws {
        try bind(.integer(value), at: index)
    }

    @discardableResult
    func step() throws -> Bool {
        if rows == nil {
            rows = try connection.run(sql, postgresSQL: postgresSQL, arguments: arguments)
            current = -1
        }
        current += 1
        return current < rows!.count
    }

    func execute() throws {
        defer { reset() }
        _ = try connection.run(sql, postgresSQL: postgresSQL, arguments: arguments)
    }

    func reset() {
        rows = nil
        current = -1
    }

    func isNull(at column: Int32) -> Bool {
        if case .null = value(at: column) { return true }
        return false
    }

    func int64(at column: Int32) -> Int64 {
        switch value(at: column) {
        case .integer(let value): value
        case .real(let value): Int64(exactly: value.rounded(.towardZero)) ?? 0
        case .text(let text): Int64(text) ?? 0
        default: 0
        }
    }

    func value(at column: Int32) -> SQLiteValue {
        guard let rows, current >= 0, current < rows.count, Int(column) < rows[current].count else { return .null }
        return rows[current][Int(column)]
    }

    func storageClass(at column: Int32) -> Int32 {
        switch value(at: column) {
        case .integer: 1
        case .real: 2
        case .text: 3
        case .blob: 4
        case .null: 5
        }
    }
}
