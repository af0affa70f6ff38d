import CSQLite

/// An error reported by SQLite, with the statement that caused it.
///
/// ```swift
/// do {
///     try connection.execute(sql: "INSERT INTO person (id) VALUES (1)")
/// } catch SQLiteError.constraint {
///     // a UNIQUE, NOT NULL, CHECK or FOREIGN KEY constraint failed
/// }
/// ```
///
/// `description` is one line: `SQLite error 19 (SQLITE_CONSTRAINT): UNIQUE constraint failed: person.id - while executing 'INSERT …'`.
/// Bound values are not part of the description unless ``publicArguments`` is set, because they may hold
/// personal data; ``detailedDescription()`` renders a multi-line tree.
///
/// Related SQLite documentation: <https://www.sqlite.org/rescode.html>
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The primary or extended result code.
    public let resultCode: ResultCode
    /// The message from `sqlite3_errmsg`, or one of ours when the failure happened before SQLite was reached.
    public let message: String
    /// The SQL being prepared or executed, if any.
    public let sql: String?
    /// The values bound to the statement, as text. Hidden from `description` unless ``publicArguments`` is true.
    public let arguments: [String]?
    /// Whether ``description`` shows ``arguments``.
    public var publicArguments: Bool = false
    /// The Swift function that called SQLite.
    public let function: String

    public init(
        resultCode: ResultCode,
        message: String,
        sql: String? = nil,
        arguments: [String]? = nil,
        function: String = #function
    ) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
        self.arguments = arguments
        self.function = function
    }

    public var description: String {
        var text = "SQLite error \(resultCode.rawValue) (\(resultCode.name)): \(message)"
        if let sql { text += " - while executing '\(sql)'" }
        if publicArguments, let arguments { text += " with arguments [\(arguments.joined(separator: ", "))]" }
        return text
    }

    /// A multi-line rendering with every piece of context.
    public func detailedDescription() -> String {
        var lines = ["SQLiteError: \(message)"]
        lines.append("├─ Result code: \(resultCode.name) (\(resultCode.rawValue))")
        if let sql { lines.append("├─ SQL: \(sql)") }
        if let arguments { lines.append("├─ Arguments: " + (publicArguments ? arguments.joined(separator: ", ") : "<\(arguments.count) hidden>")) }
        lines.append("└─ Function: \(function)")
        return lines.joined(separator: "\n")
    }

    public static let busy = ResultCode.SQLITE_BUSY
    public static let locked = ResultCode.SQLITE_LOCKED
    public static let constraint = ResultCode.SQLITE_CONSTRAINT
    public static let readOnly = ResultCode.SQLITE_READONLY
    public static let notADatabase = ResultCode.SQLITE_NOTADB
    public static let corrupt = ResultCode.SQLITE_CORRUPT
    public static let cannotOpen = ResultCode.SQLITE_CANTOPEN
}

/// A SQLite result code, primary (`SQLITE_CONSTRAINT`) or extended (`SQLITE_CONSTRAINT_UNIQUE`).
///
/// Related SQLite documentation: <https://www.sqlite.org/rescode.html>
public struct ResultCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code: the low 8 bits of an extended code.
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

    /// The symbolic name SQLite gives the code, such as `SQLITE_CONSTRAINT_UNIQUE`.
    public var name: String {
        if let name = Self.names[rawValue] { return name }
        if let name = Self.names[primary.rawValue] { return "\(name) (extended \(rawValue))" }
        return "SQLITE_\(rawValue)"
    }

    private static let names: [Int32: String] = [
        CSQLite.SQLITE_OK: "SQLITE_OK", CSQLite.SQLITE_ERROR: "SQLITE_ERROR", CSQLite.SQLITE_INTERNAL: "SQLITE_INTERNAL",
        CSQLite.SQLITE_PERM: "SQLITE_PERM", CSQLite.SQLITE_ABORT: "SQLITE_ABORT", CSQLite.SQLITE_BUSY: "SQLITE_BUSY",
        CSQLite.SQLITE_LOCKED: "SQLITE_LOCKED", CSQLite.SQLITE_NOMEM: "SQLITE_NOMEM", CSQLite.SQLITE_READONLY: "SQLITE_READONLY",
        CSQLite.SQLITE_INTERRUPT: "SQLITE_INTERRUPT", CSQLite.SQLITE_IOERR: "SQLITE_IOERR", CSQLite.SQLITE_CORRUPT: "SQLITE_CORRUPT",
        CSQLite.SQLITE_NOTFOUND: "SQLITE_NOTFOUND", CSQLite.SQLITE_FULL: "SQLITE_FULL", CSQLite.SQLITE_CANTOPEN: "SQLITE_CANTOPEN",
        CSQLite.SQLITE_PROTOCOL: "SQLITE_PROTOCOL", CSQLite.SQLITE_SCHEMA: "SQLITE_SCHEMA", CSQLite.SQLITE_TOOBIG: "SQLITE_TOOBIG",
        CSQLite.SQLITE_CONSTRAINT: "SQLITE_CONSTRAINT", CSQLite.SQLITE_MISMATCH: "SQLITE_MISMATCH", CSQLite.SQLITE_MISUSE: "SQLITE_MISUSE",
        CSQLite.SQLITE_RANGE: "SQLITE_RANGE", CSQLite.SQLITE_NOTADB: "SQLITE_NOTADB",
        2067: "SQLITE_CONSTRAINT_UNIQUE", 1555: "SQLITE_CONSTRAINT_PRIMARYKEY", 1299: "SQLITE_CONSTRAINT_NOTNULL",
        787: "SQLITE_CONSTRAINT_FOREIGNKEY", 275: "SQLITE_CONSTRAINT_CHECK",
        264: "SQLITE_READONLY_RECOVERY", 520: "SQLITE_READONLY_CANTLOCK", 1032: "SQLITE_READONLY_DBMOVED",
        517: "SQLITE_BUSY_SNAPSHOT", 261: "SQLITE_BUSY_RECOVERY", 516: "SQLITE_ABORT_ROLLBACK",
    ].merging(ioErrorNames) { name, _ in name }

    /// The extended codes of `SQLITE_IOERR` (`SQLITE_IOERR | n << 8`) that say which file operation failed.
    private static let ioErrorNames: [Int32: String] = Dictionary(
        uniqueKeysWithValues: [
            (1, "READ"), (2, "SHORT_READ"), (3, "WRITE"), (4, "FSYNC"), (5, "DIR_FSYNC"), (6, "TRUNCATE"), (7, "FSTAT"),
            (8, "UNLOCK"), (9, "RDLOCK"), (10, "DELETE"), (12, "NOMEM"), (13, "ACCESS"), (14, "CHECKRESERVEDLOCK"),
            (15, "LOCK"), (16, "CLOSE"), (18, "SHMOPEN"), (19, "SHMSIZE"), (20, "SHMLOCK"), (21, "SHMMAP"), (22, "SEEK"),
            (23, "DELETE_NOENT"), (24, "MMAP"),
        ].map { (CSQLite.SQLITE_IOERR | Int32($0.0) << 8, "SQLITE_IOERR_\($0.1)") })

    public static let SQLITE_OK = ResultCode(rawValue: CSQLite.SQLITE_OK)
    public static let SQLITE_ERROR = ResultCode(rawValue: CSQLite.SQLITE_ERROR)
    public static let SQLITE_ABORT = ResultCode(rawValue: CSQLite.SQLITE_ABORT)
    /// `SQLITE_ABORT_ROLLBACK`: the transaction was rolled back (by SQLite, after an error) under a statement.
    public static let SQLITE_ABORT_ROLLBACK = ResultCode(rawValue: CSQLite.SQLITE_ABORT | 2 << 8)
    public static let SQLITE_BUSY = ResultCode(rawValue: CSQLite.SQLITE_BUSY)
    public static let SQLITE_LOCKED = ResultCode(rawValue: CSQLite.SQLITE_LOCKED)
    public static let SQLITE_READONLY = ResultCode(rawValue: CSQLite.SQLITE_READONLY)
    public static let SQLITE_IOERR = ResultCode(rawValue: CSQLite.SQLITE_IOERR)
    public static let SQLITE_CORRUPT = ResultCode(rawValue: CSQLite.SQLITE_CORRUPT)
    public static let SQLITE_FULL = ResultCode(rawValue: CSQLite.SQLITE_FULL)
    public static let SQLITE_CANTOPEN = ResultCode(rawValue: CSQLite.SQLITE_CANTOPEN)
    public static let SQLITE_CONSTRAINT = ResultCode(rawValue: CSQLite.SQLITE_CONSTRAINT)
    public static let SQLITE_MISMATCH = ResultCode(rawValue: CSQLite.SQLITE_MISMATCH)
    public static let SQLITE_MISUSE = ResultCode(rawValue: CSQLite.SQLITE_MISUSE)
    public static let SQLITE_RANGE = ResultCode(rawValue: CSQLite.SQLITE_RANGE)
    public static let SQLITE_NOTADB = ResultCode(rawValue: CSQLite.SQLITE_NOTADB)
    public static let SQLITE_TOOBIG = ResultCode(rawValue: CSQLite.SQLITE_TOOBIG)
}

/// Turns a SQLite result code into a thrown ``SQLiteError`` carrying the connection's message.
///
/// The one place where return codes are mapped to errors, so every failure carries the same context.
@discardableResult
func check(
    _ code: Int32,
    _ connection: OpaquePointer?,
    sql: String? = nil,
    function: String = #function
) throws(SQLiteError) -> Int32 {
    switch code {
    case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
        return code
    default:
        // > sqlite3_errmsg() returns English-language text that describes the error [...]
        // > If the most recent API call was successful, the return value is undefined.
        // The code we got is the authority; the message comes from the connection when it has one.
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
        let resultCode = (extended & 0xFF) == (code & 0xFF) ? extended : code
        throw SQLiteError(resultCode: ResultCode(rawValue: resultCode), message: message, sql: sql, function: function)
    }
}

/// Matches an error against a primary result code: `catch SQLiteError.busy`, `catch ResultCode.SQLITE_CONSTRAINT`.
public func ~= (code: ResultCode, error: any Error) -> Bool {
    guard let error = error as? SQLiteError else { return false }
    return error.resultCode.primary == code.primary
}
