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
/// Codes match as patterns: a primary code matches itself and every extended code of it, an extended code only
/// itself. So `switch error.resultCode { case .SQLITE_CONSTRAINT_UNIQUE: … case .SQLITE_CONSTRAINT: … }`
/// and `catch ResultCode.SQLITE_BUSY` (which also catches `SQLITE_BUSY_RECOVERY`) read as they mean.
///
/// Related SQLite documentation: <https://www.sqlite.org/rescode.html>
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code: the low 8 bits of an extended code.
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

    /// Whether this is a primary code (no extended information).
    public var isPrimary: Bool { rawValue & 0xFF == rawValue }

    /// The symbolic name SQLite gives the code, such as `SQLITE_CONSTRAINT_UNIQUE`.
    public var name: String {
        if let name = Self.names[rawValue] { return name }
        if let name = Self.names[primary.rawValue] { return "\(name) (extended \(rawValue))" }
        return "SQLITE_\(rawValue)"
    }

    public var description: String { "\(name) (\(rawValue))" }

    /// A primary pattern matches every code with that primary code; an extended pattern matches only itself.
    public static func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
        pattern.isPrimary ? pattern == code.primary : pattern == code
    }

    private static func extended(_ primary: Int32, _ number: Int32) -> ResultCode {
        ResultCode(rawValue: primary | number << 8)
    }

    public static let SQLITE_OK = ResultCode(rawValue: CSQLite.SQLITE_OK)
    public static let SQLITE_ERROR = ResultCode(rawValue: CSQLite.SQLITE_ERROR)
    public static let SQLITE_INTERNAL = ResultCode(rawValue: CSQLite.SQLITE_INTERNAL)
    public static let SQLITE_PERM = ResultCode(rawValue: CSQLite.SQLITE_PERM)
    public static let SQLITE_ABORT = ResultCode(rawValue: CSQLite.SQLITE_ABORT)
    public static let SQLITE_BUSY = ResultCode(rawValue: CSQLite.SQLITE_BUSY)
    public static let SQLITE_LOCKED = ResultCode(rawValue: CSQLite.SQLITE_LOCKED)
    public static let SQLITE_NOMEM = ResultCode(rawValue: CSQLite.SQLITE_NOMEM)
    public static let SQLITE_READONLY = ResultCode(rawValue: CSQLite.SQLITE_READONLY)
    public static let SQLITE_INTERRUPT = ResultCode(rawValue: CSQLite.SQLITE_INTERRUPT)
    public static let SQLITE_IOERR = ResultCode(rawValue: CSQLite.SQLITE_IOERR)
    public static let SQLITE_CORRUPT = ResultCode(rawValue: CSQLite.SQLITE_CORRUPT)
    public static let SQLITE_NOTFOUND = ResultCode(rawValue: CSQLite.SQLITE_NOTFOUND)
    public static let SQLITE_FULL = ResultCode(rawValue: CSQLite.SQLITE_FULL)
    public static let SQLITE_CANTOPEN = ResultCode(rawValue: CSQLite.SQLITE_CANTOPEN)
    public static let SQLITE_PROTOCOL = ResultCode(rawValue: CSQLite.SQLITE_PROTOCOL)
    public static let SQLITE_SCHEMA = ResultCode(rawValue: CSQLite.SQLITE_SCHEMA)
    public static let SQLITE_TOOBIG = ResultCode(rawValue: CSQLite.SQLITE_TOOBIG)
    public static let SQLITE_CONSTRAINT = ResultCode(rawValue: CSQLite.SQLITE_CONSTRAINT)
    public static let SQLITE_MISMATCH = ResultCode(rawValue: CSQLite.SQLITE_MISMATCH)
    public static let SQLITE_MISUSE = ResultCode(rawValue: CSQLite.SQLITE_MISUSE)
    public static let SQLITE_RANGE = ResultCode(rawValue: CSQLite.SQLITE_RANGE)
    public static let SQLITE_NOTADB = ResultCode(rawValue: CSQLite.SQLITE_NOTADB)

    /// The transaction was rolled back (by SQLite, after an error) under a statement.
    public static let SQLITE_ABORT_ROLLBACK = extended(CSQLite.SQLITE_ABORT, 2)
    /// Another connection is recovering the WAL index (at the first open of a database).
    public static let SQLITE_BUSY_RECOVERY = extended(CSQLite.SQLITE_BUSY, 1)
    /// A read transaction's snapshot is no longer the newest, so it cannot become a write transaction.
    public static let SQLITE_BUSY_SNAPSHOT = extended(CSQLite.SQLITE_BUSY, 2)
    public static let SQLITE_READONLY_RECOVERY = extended(CSQLite.SQLITE_READONLY, 1)
    public static let SQLITE_READONLY_CANTLOCK = extended(CSQLite.SQLITE_READONLY, 2)
    public static let SQLITE_READONLY_DBMOVED = extended(CSQLite.SQLITE_READONLY, 4)
    public static let SQLITE_CONSTRAINT_CHECK = extended(CSQLite.SQLITE_CONSTRAINT, 1)
    public static let SQLITE_CONSTRAINT_FOREIGNKEY = extended(CSQLite.SQLITE_CONSTRAINT, 3)
    public static let SQLITE_CONSTRAINT_NOTNULL = extended(CSQLite.SQLITE_CONSTRAINT, 5)
    public static let SQLITE_CONSTRAINT_PRIMARYKEY = extended(CSQLite.SQLITE_CONSTRAINT, 6)
    public static let SQLITE_CONSTRAINT_UNIQUE = extended(CSQLite.SQLITE_CONSTRAINT, 8)

    private static let names: [Int32: String] = {
        let named: [(ResultCode, String)] = [
            (.SQLITE_OK, "SQLITE_OK"), (.SQLITE_ERROR, "SQLITE_ERROR"), (.SQLITE_INTERNAL, "SQLITE_INTERNAL"),
            (.SQLITE_PERM, "SQLITE_PERM"), (.SQLITE_ABORT, "SQLITE_ABORT"), (.SQLITE_BUSY, "SQLITE_BUSY"),
            (.SQLITE_LOCKED, "SQLITE_LOCKED"), (.SQLITE_NOMEM, "SQLITE_NOMEM"), (.SQLITE_READONLY, "SQLITE_READONLY"),
            (.SQLITE_INTERRUPT, "SQLITE_INTERRUPT"), (.SQLITE_IOERR, "SQLITE_IOERR"), (.SQLITE_CORRUPT, "SQLITE_CORRUPT"),
            (.SQLITE_NOTFOUND, "SQLITE_NOTFOUND"), (.SQLITE_FULL, "SQLITE_FULL"), (.SQLITE_CANTOPEN, "SQLITE_CANTOPEN"),
            (.SQLITE_PROTOCOL, "SQLITE_PROTOCOL"), (.SQLITE_SCHEMA, "SQLITE_SCHEMA"), (.SQLITE_TOOBIG, "SQLITE_TOOBIG"),
            (.SQLITE_CONSTRAINT, "SQLITE_CONSTRAINT"), (.SQLITE_MISMATCH, "SQLITE_MISMATCH"),
            (.SQLITE_MISUSE, "SQLITE_MISUSE"), (.SQLITE_RANGE, "SQLITE_RANGE"), (.SQLITE_NOTADB, "SQLITE_NOTADB"),
            (.SQLITE_ABORT_ROLLBACK, "SQLITE_ABORT_ROLLBACK"), (.SQLITE_BUSY_RECOVERY, "SQLITE_BUSY_RECOVERY"),
            (.SQLITE_BUSY_SNAPSHOT, "SQLITE_BUSY_SNAPSHOT"), (.SQLITE_READONLY_RECOVERY, "SQLITE_READONLY_RECOVERY"),
            (.SQLITE_READONLY_CANTLOCK, "SQLITE_READONLY_CANTLOCK"), (.SQLITE_READONLY_DBMOVED, "SQLITE_READONLY_DBMOVED"),
            (.SQLITE_CONSTRAINT_CHECK, "SQLITE_CONSTRAINT_CHECK"),
            (.SQLITE_CONSTRAINT_FOREIGNKEY, "SQLITE_CONSTRAINT_FOREIGNKEY"),
            (.SQLITE_CONSTRAINT_NOTNULL, "SQLITE_CONSTRAINT_NOTNULL"),
            (.SQLITE_CONSTRAINT_PRIMARYKEY, "SQLITE_CONSTRAINT_PRIMARYKEY"),
            (.SQLITE_CONSTRAINT_UNIQUE, "SQLITE_CONSTRAINT_UNIQUE"),
        ]
        // The extended codes of SQLITE_IOERR say which file operation failed.
        let ioErrors: [(Int32, String)] = [
            (1, "READ"), (2, "SHORT_READ"), (3, "WRITE"), (4, "FSYNC"), (5, "DIR_FSYNC"), (6, "TRUNCATE"), (7, "FSTAT"),
            (8, "UNLOCK"), (9, "RDLOCK"), (10, "DELETE"), (12, "NOMEM"), (13, "ACCESS"), (14, "CHECKRESERVEDLOCK"),
            (15, "LOCK"), (16, "CLOSE"), (18, "SHMOPEN"), (19, "SHMSIZE"), (20, "SHMLOCK"), (21, "SHMMAP"), (22, "SEEK"),
            (23, "DELETE_NOENT"), (24, "MMAP"),
        ]
        return Dictionary(
            uniqueKeysWithValues: named.map { ($0.0.rawValue, $0.1) }
                + ioErrors.map { (extended(CSQLite.SQLITE_IOERR, $0.0).rawValue, "SQLITE_IOERR_\($0.1)") })
    }()
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

/// Matches an error against a result code, as codes match (a primary code matches its extended codes):
/// `catch ResultCode.SQLITE_CONSTRAINT_UNIQUE`, `catch SQLiteError.busy`.
public func ~= (code: ResultCode, error: any Error) -> Bool {
    guard let error = error as? SQLiteError else { return false }
    return code ~= error.resultCode
}
