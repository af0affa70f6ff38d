import CLibPQ
import CLibPQLoader
import CodableStore
import Foundation
import Logging

/// One connection to the server through libpq, used synchronously by one thread at a time: each statement is sent and
/// its result waited for on the calling thread. The store's `async` methods run their closures on threads of their
/// own, so a waiting connection holds no cooperative thread.
final class PostgresDatabaseConnection: DatabaseConnection {
    /// libpq's connection, until ``close()``.
    private(set) var handle: OpaquePointer?
    private let logger: Logger
    private let observer: (@Sendable (String) -> Void)?
    private let profiler: (@Sendable (String, Duration) -> Void)?
    private var statementCache: [String: PostgresStatement] = [:]
    /// How long a write waits for another process's write lock, in milliseconds.
    private let busyTimeout: Int32
    /// Write transactions wait for other writers until they end (``setWaitsForWriters(_:)``: an import's).
    private var waitsForWriters = false
    private(set) var isInsideTransaction = false
    /// Where commits are announced (``announceChanges(to:)``), and this store's mark on its own announcements.
    var announcement: (channel: String, token: String)?
    /// Set when a statement failed inside the transaction: PostgreSQL then refuses everything until a rollback.
    private var isAborted = false
    /// Set when the server said, between statements, that it ends the session (`FATAL`: an administrator ended it, the
    /// server is shutting down): the end of the stream may not have arrived yet.
    private var serverEndedSession = false
    /// Called with each statement before it runs (not COPY), while an import's indexes wait (``LoadDeferral``).
    var willRun: ((String) throws -> Void)?

    /// The store's URL without its password, for the errors of a lost connection or a failing server.
    let storeName: String

    private init(handle: OpaquePointer, options: Store.Options, storeName: String) {
        self.handle = handle
        self.storeName = storeName
        self.logger = options.logger
        self.observer = options.statementObserver
        self.profiler = options.statementProfiler
        self.busyTimeout = options.busyTimeout
    }

    /// Connects, waiting for the server.
    static func connect(_ configuration: PostgresConfiguration, options: Store.Options) throws -> PostgresDatabaseConnection {
        // libpq is loaded on the first connection, not at start-up (see CLibPQLoader).
        var failure: UnsafePointer<CChar>?
        guard codable_store_load_libpq(&failure) == 1 else {
            let reason = failure.map { String(cString: $0) } ?? "cannot load PostgreSQL's client library (libpq)"
            throw StoreError(.connectionFailed, "cannot connect to \(configuration.redactedURL): \(reason)")
        }
        let parameters = configuration.libpqParameters
        let handle = withCStrings(parameters.map(\.keyword)) { keywords in
            withCStrings(parameters.map(\.value)) { values in codable_store_PQconnectdbParams(keywords, values, 0) }
        }
        guard let handle else {
            throw StoreError(.connectionFailed, "cannot connect to \(configuration.redactedURL): out of memory")
        }
        guard codable_store_PQstatus(handle) == CONNECTION_OK else {
            let error = PostgresError(result: nil, connection: handle, sql: nil)
            codable_store_PQfinish(handle)
            throw StoreError(.connectionFailed, "cannot connect to \(configuration.redactedURL): \(error.message)", cause: error)
        }
        let connection = PostgresDatabaseConnection(handle: handle, options: options, storeName: configuration.redactedURL)
        // The server's notices (`schema "x" already exists, skipping`) go to the log, not to standard error.
        codable_store_PQsetNoticeReceiver(handle, { context, result in
            guard let context, let result, let text = codable_store_PQresultErrorMessage(result) else { return }
            let connection = Unmanaged<PostgresDatabaseConnection>.fromOpaque(context).takeUnretainedValue()
            let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
            // An error between statements comes this way too: the server's last word before it ends the session.
            if let severity = codable_store_PQresultErrorField(result, Int32(UInt8(ascii: "V"))),
                ["FATAL", "PANIC"].contains(String(cString: severity))
            {
                connection.serverEndedSession = true
            }
            connection.logger.debug("server notice", metadata: ["notice": "\(message)"])
        }, Unmanaged.passUnretained(connection).toOpaque())
        return connection
    }

    deinit { close() }

    /// Whether the connection is gone: closed, or lost (the server restarted, or ended this session, or the network
    /// dropped). libpq learns of a loss when it reads: an idle connection whose socket has something to read (the
    /// server's last message and the end of the stream, when it went away) reads it here, without waiting.
    var isClosed: Bool {
        guard let handle else { return true }
        if codable_store_PQstatus(handle) == CONNECTION_OK, !isInsideTransaction {
            // The server's last message may come in one read and the end of the stream in the next (or a moment later,
            // as the server's process exits): the message, parsed (PQisBusy), says so already.
            var reads = 0
            while reads < 4, readInput(waitingMilliseconds: 0) == .read { reads += 1 }
            if reads > 0 { _ = codable_store_PQisBusy(handle) }
        }
        return serverEndedSession || codable_store_PQstatus(handle) != CONNECTION_OK
    }

    enum InputState { case nothing, read, failed }

    /// Reads what the socket holds into libpq's buffer, waiting up to `milliseconds` for something to arrive, without
    /// running a statement (for notifications, or to see that the server went away).
    func readInput(waitingMilliseconds milliseconds: Int32) -> InputState {
        guard let handle else { return .failed }
        var descriptor = pollfd(fd: codable_store_PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, milliseconds) > 0 else { return .nothing }  // EINTR too: the caller asks again
        return codable_store_PQconsumeInput(handle) != 0 ? .read : .failed
    }

    /// Closes the connection (telling the server, if it is still there).
    func close() {
        guard let handle else { return }
        self.handle = nil
        codable_store_PQfinish(handle)
    }

    // MARK: - Running statements

    /// What every statement goes through before it is sent: the store's observer and log, then the connection's
    /// state (a transaction a failed statement aborted refuses everything; a closed connection has no handle).
    private func willSend(_ sql: String, postgresSQL: String, logged: @autoclosure () -> Logger.Metadata) throws -> OpaquePointer {
        observer?(sql)
        if logger.logLevel <= .trace { logger.trace("statement", metadata: logged()) }
        if isAborted {
            throw PostgresError(
                sqlState: "25P02", message: "an earlier statement of the transaction failed; nothing more runs until it is rolled back",
                sql: postgresSQL)
        }
        guard let handle else {
            throw failure(PostgresError(sqlState: nil, message: "the connection is closed", sql: postgresSQL))
        }
        return handle
    }

    /// Runs one statement with its arguments and returns its rows, converted to values.
    ///
    /// Arguments go in text format with no declared type: the server gives each parameter the type its place in the
    /// statement needs (`bigint` next to a bigint column, `numeric` for a Decimal), as SQLite's affinity would.
    func run(_ sql: String, postgresSQL: String, arguments: [DatabaseValue]) throws -> [[DatabaseValue]] {
        if let willRun { try willRun(sql) }
        let handle = try willSend(sql, postgresSQL: postgresSQL, logged: ["sql": "\(sql)"])
        let start = ContinuousClock.now
        let texts = try arguments.map { try Self.text(of: $0, sql: postgresSQL) }
        let result = withCStrings(texts) { values in
            codable_store_PQexecParams(handle, postgresSQL, Int32(texts.count), nil, values, nil, nil, 0)
        }
        defer { codable_store_PQclear(result) }
        switch result.map(codable_store_PQresultStatus) {
        case PGRES_COMMAND_OK?, PGRES_TUPLES_OK?, PGRES_EMPTY_QUERY?:
            break
        default:
            if isInsideTransaction { isAborted = true }
            throw failure(PostgresError(result: result, connection: handle, sql: postgresSQL))
        }
        // The statement's time as the client sees it: the round trip and the server's work.
        profiler?(sql, ContinuousClock.now - start)
        guard let result else { return [] }
        let rowCount = codable_store_PQntuples(result)
        let columnCount = codable_store_PQnfields(result)
        guard rowCount > 0, columnCount > 0 else { return [] }
        let types = (0..<columnCount).map { codable_store_PQftype(result, $0) }
        var rows: [[DatabaseValue]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if codable_store_PQgetisnull(result, row, column) != 0 {
                    values.append(.null)
                    continue
                }
                let bytes = UnsafeRawBufferPointer(
                    start: codable_store_PQgetvalue(result, row, column), count: Int(codable_store_PQgetlength(result, row, column)))
                values.append(try Self.value(of: bytes, type: types[Int(column)], sql: postgresSQL))
            }
            rows.append(values)
        }
        return rows
    }

    /// Runs `COPY table (columns) FROM STDIN` with `rows` in COPY's text format: one message of rows after another,
    /// then the end, then the result. The server parses each field as its column's type, as it does the text of a
    /// statement's arguments (see ``text(of:sql:)``), and inserts the rows without planning a statement per batch of
    /// them: for the 91k issues of 100k reference records, 0.87 s against 1.50 s as `INSERT … SELECT * FROM
    /// unnest(…)` over text arrays (psql, same server).
    ///
    /// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/sql-copy.html>,
    /// <https://www.postgresql.org/docs/current/libpq-copy.html>
    ///
    /// With `binaryTypes` (each column's type, see ``CopyType``), when every value is of its column's kind, the rows go
    /// in COPY's binary format instead: numbers as their 8 bytes, text and bytes as they are, nothing for the server to
    /// parse or the client to escape or format.
    func copy(into table: String, columns: [String], rows: [ArraySlice<DatabaseValue>], binaryTypes: [CopyType]? = nil) throws {
        let binary = binaryTypes.map { types in Self.fitsBinary(rows, types) } ?? false
        let sql = "COPY \(quoteIdentifier(table)) (" + columns.map(quoteIdentifier).joined(separator: ", ") + ") FROM STDIN"
            + (binary ? " (FORMAT binary)" : "")
        let handle = try willSend(sql, postgresSQL: sql, logged: ["sql": "\(sql)", "rows": "\(rows.count)"])
        let start = ContinuousClock.now
        let started = codable_store_PQexecParams(handle, sql, 0, nil, nil, nil, nil, 0)
        if started.map(codable_store_PQresultStatus) != PGRES_COPY_IN {
            defer { codable_store_PQclear(started) }
            if isInsideTransaction { isAborted = true }
            throw failure(PostgresError(result: started, connection: handle, sql: sql))
        }
        codable_store_PQclear(started)
        // Sent a message at a time as the rows are written out: the server inserts the first rows while the client
        // writes the next. A value COPY's text cannot carry ends the COPY with an error (the server then fails it).
        var data: [UInt8] = []
        data.reserveCapacity(Self.copyMessageBytes + 4_096)
        var sent = true
        var refused: (any Error)?
        func send() {
            sent = sent && data.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { codable_store_PQputCopyData(handle, $0.baseAddress, Int32($0.count)) == 1 }
            }
            data.removeAll(keepingCapacity: true)
        }
        do {
            if let binaryTypes, binary {
                // The header: signature, flags, no extension.
                data.append(contentsOf: [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
                for row in rows where sent {
                    Self.appendBigEndian(UInt16(row.count), to: &data)
                    for (value, type) in zip(row, binaryTypes) { try Self.appendCopyBinary(of: value, as: type, to: &data, sql: sql) }
                    if data.count >= Self.copyMessageBytes { send() }
                }
                Self.appendBigEndian(UInt16.max, to: &data)  // -1: the end
            } else {
                for row in rows where sent {
                    var first = true
                    for value in row {
                        if !first { data.append(0x09) }
                        first = false
                        try Self.appendCopyText(of: value, to: &data, sql: sql)
                    }
                    data.append(0x0A)
                    if data.count >= Self.copyMessageBytes { send() }
                }
            }
            if !data.isEmpty { send() }
        } catch {
            refused = error
        }
        // Ended either way: after a failed send libpq reports the connection's error as the COPY's result.
        _ = codable_store_PQputCopyEnd(handle, refused == nil ? nil : "a value cannot be sent")
        var failed: PostgresError?
        while let result = codable_store_PQgetResult(handle) {
            let status = codable_store_PQresultStatus(result)
            if status != PGRES_COMMAND_OK, failed == nil { failed = PostgresError(result: result, connection: handle, sql: sql) }
            codable_store_PQclear(result)
        }
        if !sent, failed == nil { failed = PostgresError(result: nil, connection: handle, sql: sql) }
        if let refused {
            if isInsideTransaction { isAborted = true }
            throw refused
        }
        if let failed {
            if isInsideTransaction { isAborted = true }
            throw failure(failed)
        }
        profiler?(sql, ContinuousClock.now - start)
    }

    /// Bytes per message of COPY data (libpq sends a message as it is given).
    static let copyMessageBytes = 64 * 1_024

    /// A column's type in COPY's binary format; a table with a column of another type (`numeric`) goes in text.
    enum CopyType { case int8, float8, text, bytea }

    /// Whether every value is NULL or of its column's kind (an integer in a `double precision` column too): a value
    /// that only the server's text parsing would take, or refuse, sends the rows as text, as before.
    static func fitsBinary(_ rows: [ArraySlice<DatabaseValue>], _ types: [CopyType]) -> Bool {
        rows.allSatisfy { row in
            row.count == types.count && zip(row, types).allSatisfy { value, type in
                switch (value, type) {
                case (.null, _), (.integer, .int8), (.integer, .float8), (.real, .float8), (.text, .text), (.blob, .bytea): true
                default: false
                }
            }
        }
    }

    static func appendBigEndian<T: FixedWidthInteger>(_ value: T, to data: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) }
    }

    /// A value in COPY's binary format: its length (-1 for NULL), then its bytes (`fitsBinary` checked its kind).
    static func appendCopyBinary(of value: DatabaseValue, as type: CopyType, to data: inout [UInt8], sql: String?) throws {
        switch value {
        case .null:
            appendBigEndian(Int32(-1), to: &data)
        case .integer(let integer) where type == .float8:
            appendBigEndian(Int32(8), to: &data)
            appendBigEndian(Double(integer).bitPattern, to: &data)
        case .integer(let integer):
            appendBigEndian(Int32(8), to: &data)
            appendBigEndian(integer, to: &data)
        case .real(let real):
            appendBigEndian(Int32(8), to: &data)
            appendBigEndian(real.bitPattern, to: &data)
        case .text(var text):
            try text.withUTF8 { bytes in
                if bytes.contains(0) {
                    throw nulInText(sql: sql)
                }
                appendBigEndian(Int32(bytes.count), to: &data)
                data.append(contentsOf: bytes)
            }
        case .blob(let bytes):
            appendBigEndian(Int32(bytes.count), to: &data)
            data.append(contentsOf: bytes)
        }
    }

    /// A value in COPY's text format: `\N` for NULL; backslash, tab, line feed and carriage return escaped in text;
    /// bytes in bytea's hex form (its backslash escaped).
    static func appendCopyText(of value: DatabaseValue, to data: inout [UInt8], sql: String?) throws {
        switch value {
        case .null:
            data.append(0x5C)
            data.append(UInt8(ascii: "N"))
        case .integer(let integer):
            data.append(contentsOf: String(integer).utf8)
        case .real:
            data.append(contentsOf: try text(of: value, sql: sql)!.utf8)
        case .text(let text):
            var text = text
            try text.withUTF8 { bytes in try appendEscaped(bytes, to: &data, sql: sql) }
        case .blob(let bytes):
            data.append(0x5C)  // COPY's escape of the hex form's own backslash
            appendHex(bytes, to: &data)
        }
    }

    /// Text's bytes, escaped for COPY's text format: runs without a byte to escape are copied whole (most text has
    /// none; byte by byte, the COPY data took 23% of the import writer's time at 100k records).
    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to data: inout [UInt8], sql: String?) throws {
        var start = 0
        for index in bytes.indices {
            let byte = bytes[index]
            // Tab, line feed, carriage return, NUL and backslash are all below 0x5D and not a space or a letter.
            guard byte <= 0x5C, byte == 0x5C || byte < 0x20 else { continue }
            let escaped: UInt8
            switch byte {
            case 0x5C: escaped = 0x5C
            case 0x09: escaped = UInt8(ascii: "t")
            case 0x0A: escaped = UInt8(ascii: "n")
            case 0x0D: escaped = UInt8(ascii: "r")
            case 0:
                throw nulInText(sql: sql)
            default: continue
            }
            data.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            data.append(0x5C)
            data.append(escaped)
            start = index + 1
        }
        data.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }

    /// The error of a statement the server refused or could not run: a ``StoreError`` that names the store when the
    /// failure is the server's or the connection's rather than the statement's (the connection lost, the server shut
    /// down, a full disk, a statement timeout, a lock waited for too long), the server's error otherwise.
    ///
    /// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/errcodes-appendix.html>
    func failure(_ error: PostgresError) -> any Error {
        let state = error.sqlState ?? ""
        // Another writer held a lock (the schema's, a row's) for longer than the busy timeout.
        if state == PostgresError.lockNotAvailable {
            return StoreError.storeBusy(
                waitedMilliseconds: busyTimeout, cause: error,
                by: "another session (a write of the same rows, an import loading its tables alone, or a schema change)")
        }
        let lost = handle.map { codable_store_PQstatus($0) != CONNECTION_OK } ?? true
        // No state: libpq's own failure (the server went away mid-statement); 08: connection exceptions; 57P01-03:
        // the server shuts down, crashed, or is starting.
        if lost || error.sqlState == nil || state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state) {
            return StoreError(
                .connectionFailed,
                "lost the connection to \(storeName): \(error.message)\(error.sqlState.map { " (PostgreSQL \($0))" } ?? ""); "
                    + "what the transaction wrote was rolled back",
                cause: error)
        }
        // 53: insufficient resources (disk full, out of memory); 58: system errors (I/O); 57014: a statement canceled
        // (statement_timeout, or by an administrator).
        if state.hasPrefix("53") || state.hasPrefix("58") || state == "57014" {
            return StoreError(
                .serverFailed, "the server of \(storeName) failed: \(error.message) (PostgreSQL \(state)); the transaction was rolled back",
                cause: error)
        }
        return error
    }

    /// An argument's text form, as the server reads it for any type; nil for NULL.
    static func text(of value: DatabaseValue, sql: String?) throws -> String? {
        switch value {
        case .null: return nil
        case .integer(let integer): return String(integer)
        case .real(let real): return text(of: real)
        case .text(let text):
            // libpq sends text arguments as C strings; the server refuses a NUL in text anyway.
            if text.utf8.contains(0) {
                throw nulInText(sql: sql)
            }
            return text
        case .blob(let data):
            var hex: [UInt8] = []
            hex.reserveCapacity(2 + data.count * 2)
            appendHex(data, to: &hex)
            return String(decoding: hex, as: UTF8.self)
        }
    }

    /// A double as PostgreSQL reads it back exactly: Swift's shortest round-trip form, and the words PostgreSQL spells
    /// the special values with.
    static func text(of real: Double) -> String {
        real.isNaN ? "NaN" : real.isInfinite ? (real < 0 ? "-Infinity" : "Infinity") : "\(real)"
    }

    /// Bytes in bytea's hex input format (`\x0a1b…`), as statements' arguments, array literals and COPY's text carry them.
    static func appendHex(_ bytes: Data, to text: inout [UInt8]) {
        text.append(UInt8(ascii: "\\"))
        text.append(UInt8(ascii: "x"))
        for byte in bytes {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0xF)])
        }
    }

    /// The server's refusal of a NUL in text, said before anything is sent (libpq sends text arguments as C strings).
    static func nulInText(sql: String?) -> PostgresError {
        PostgresError(sqlState: "22021", message: "invalid byte sequence for encoding \"UTF8\": 0x00 (text cannot hold NUL)", sql: sql)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
    /// The server writes numbers with a `.`, whatever the process's locale.
    private static let posixLocale = Locale(identifier: "en_US_POSIX")

    /// The type OIDs of the built-in types whose text a result converts (pg_type.dat).
    private enum TypeOID {
        static let bool: Oid = 16
        static let bytea: Oid = 17
        static let int8: Oid = 20
        static let int2: Oid = 21
        static let int4: Oid = 23
        static let oid: Oid = 26
        static let float4: Oid = 700
        static let float8: Oid = 701
        static let numeric: Oid = 1700
    }

    /// A result column's text, as the storage shape of attribute values.
    static func value(of bytes: UnsafeRawBufferPointer, type: Oid, sql: String?) throws -> DatabaseValue {
        func failure() -> PostgresError {
            PostgresError(
                sqlState: nil, message: "the server sent '\(String(decoding: bytes.prefix(64), as: UTF8.self))' for a value of type \(type)",
                sql: sql)
        }
        if type == TypeOID.bytea {
            guard let data = Self.bytes(ofHex: bytes) else { throw failure() }
            return .blob(data)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        switch type {
        case TypeOID.int8, TypeOID.int4, TypeOID.int2, TypeOID.oid:
            guard let integer = Int64(text) else { throw failure() }
            return .integer(integer)
        case TypeOID.float8, TypeOID.float4:
            // The server writes the shortest text that reads back as the same double (extra_float_digits 1, the
            // default since PostgreSQL 12), and "NaN", "Infinity" and "-Infinity", which Double(_:) reads too.
            guard let real = Double(text) else { throw failure() }
            return .real(real)
        case TypeOID.bool:
            return .integer(text == "t" ? 1 : 0)
        case TypeOID.numeric:
            // Exact decimal text, as SQLite stores a Decimal.
            guard let decimal = Decimal(string: text, locale: posixLocale) else { throw failure() }
            return .text("\(decimal)")
        default:
            return .text(text)
        }
    }

    /// bytea's hex output format (`\x0a1b…`), the server's default.
    private static func bytes(ofHex text: UnsafeRawBufferPointer) -> Data? {
        guard text.count >= 2, text.count % 2 == 0, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return nil }
        func digit(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var data = Data(capacity: (text.count - 2) / 2)
        var index = 2
        while index < text.count {
            guard let high = digit(text[index]), let low = digit(text[index + 1]) else { return nil }
            data.append(high << 4 | low)
            index += 2
        }
        return data
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

    /// Begins a write: other processes' writes run beside it (row ids come from the server's sequences, identity
    /// conflicts and deadlocks are run again, see ``PostgresDialect/isTransientConflict(_:)``); only a schema change
    /// (``beginSchemaTransaction()``) keeps them out, and waits for them. No lock is waited for longer than the
    /// store's busy timeout.
    func beginWriteTransaction() throws {
        try beginLocked(exclusive: false)
    }

    /// A write alone takes the schema lock for itself, as a schema change does: it waits for the writes running, and
    /// new ones wait for it.
    func beginWriteTransaction(alone: Bool) throws {
        try beginLocked(exclusive: alone)
    }

    /// Begins a transaction that changes the schema: it waits for every write of every process to end, and keeps
    /// new ones out until it commits.
    func beginSchemaTransaction() throws {
        try beginLocked(exclusive: true)
    }

    private func beginLocked(exclusive: Bool) throws {
        try begin("BEGIN ISOLATION LEVEL READ COMMITTED")
        do {
            // The schema lock, shared by writes and taken alone by schema changes (a transaction-scoped advisory lock
            // on the schema's name); lock_timeout bounds every wait of the transaction, for row locks too.
            let lock = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
            // 0: no timeout (an import waiting for another's rows; see setWaitsForWriters).
            let timeout = waitsForWriters ? 0 : max(1, Int(busyTimeout))
            // The store's writes keep row stamps right themselves: the stamp guards stay quiet for them (see
            // PostgresStampGuards).
            _ = try run(
                "SELECT set_config('lock_timeout', …), set_config('\(PostgresStampGuards.quietSetting)', …), \(lock)(…)",
                postgresSQL: "SELECT set_config('lock_timeout', '\(timeout)', true), "
                    + "set_config('\(PostgresStampGuards.quietSetting)', 'on', true), "
                    + "\(lock)(hashtextextended('codablestore.' || current_schema(), 0))",
                arguments: [])
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
    }

    // MARK: - Row ids

    /// Row ids come from each table's identity sequence (see ``PostgresSchema/rowIDBlock``), a block per `nextval`:
    /// the rest of a block a context did not use waits here for the next reservation.
    /// Locked: a context gives ids back from its own thread while an import's writer thread runs statements.
    private let reservedRowIDs = Locked<[String: Range<Int64>]>([:])

    var reservesRowIDs: Bool { true }
    var writesInParallel: Bool { true }

    func reserveRowIDs(table: String) throws -> Range<Int64>? {
        if let reserved = reservedRowIDs.withLock({ $0.removeValue(forKey: table) }), !reserved.isEmpty { return reserved }
        let statement = try cached("SELECT nextval(pg_get_serial_sequence(?, '_pk'))")
        try statement.bind(.text(quoteIdentifier(table)), at: 1)
        guard try statement.step(), case .integer(let first) = statement.value(at: 0) else {
            throw PostgresError(sqlState: nil, message: "the table \(table) has no row id sequence", sql: nil)
        }
        statement.reset()
        return first..<(first + PostgresSchema.rowIDBlock)
    }

    func setWaitsForWriters(_ waits: Bool) {
        waitsForWriters = waits
    }

    func returnRowIDs(_ rowIDs: Range<Int64>, table: String) {
        guard !rowIDs.isEmpty else { return }
        reservedRowIDs.withLock { $0[table] = rowIDs }
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

    /// A rollback to a savepoint is what makes a transaction aborted by a failed statement usable again.
    func rollbackToSavepoint(named name: String) throws {
        let quoted = quoteIdentifier(name)
        isAborted = false
        try execute(sql: "ROLLBACK TO SAVEPOINT \(quoted)")
        try execute(sql: "RELEASE SAVEPOINT \(quoted)")
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

    /// The foreign keys from, and non-unique indexes of, the empty tables an import writes, made again once its rows
    /// are in, when the import may hold its tables alone (see ``LoadDeferral``).
    func deferBuildsOfEmptyTables(writing tables: Set<String>, alone: Bool) throws -> (any DeferredBuilds)? {
        alone ? try LoadDeferral.begin(on: self, tables: tables) : nil
    }

    /// Any trigger on a table of the store's schema (the current one), the internal ones that check foreign keys and
    /// the store's stamp guards aside: a trigger fires on its own table's changes, so those of other schemas never
    /// see the store's.
    func hasTriggers() throws -> Bool {
        let prefix = PostgresStampGuards.namePrefix
        return try scalar(
            sql: "SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                // Not `current_schema()::regnamespace`: that reads the name as SQL, folding a mixed-case one to lower case.
                + "WHERE NOT t.tgisinternal AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                + "AND substr(t.tgname, 1, \(prefix.utf8.count)) <> '\(prefix)' LIMIT 1") != nil
    }

    /// The guards are made with the schema (see ``PostgresStampGuards``): here only checked, and made again when one
    /// is missing or changed.
    func installStampGuards(guarding entities: Set<Int>, previous: Set<Int>, storage: SQLStorage) throws -> Bool {
        try PostgresStampGuards.install(storage.model, guarding: !previous.isEmpty, on: self)
    }

    func rollbackIgnoringErrors() {
        guard isInsideTransaction else { return }
        isAborted = false
        _ = try? run("ROLLBACK", postgresSQL: "ROLLBACK", arguments: [])
        isInsideTransaction = false
    }
}

/// A statement: its SQL with `$n` placeholders, the values bound to it, and the rows of its last run, read one
/// `step()` at a time.
final class PostgresStatement: DatabaseStatement {
    let sql: String
    private let postgresSQL: String
    private let parameterCount: Int
    private unowned let connection: PostgresDatabaseConnection
    private var arguments: [DatabaseValue]
    private var rows: [[DatabaseValue]]?
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

    func bind(_ value: DatabaseValue, at index: Int32) throws {
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

    func value(at column: Int32) -> DatabaseValue {
        guard let rows, current >= 0, current < rows.count, Int(column) < rows[current].count else { return .null }
        return rows[current][Int(column)]
    }
}

/// Calls `body` with the strings as an array of C strings (NULL for nil), valid for the call.
func withCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } }
    defer { for pointer in pointers { free(pointer) } }
    pointers.append(nil)
    return pointers.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
    }
}
