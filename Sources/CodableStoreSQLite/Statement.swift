import CSQLite

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the bind call returns. Computed (the C function is
/// inlined), not a global constant: a global is initialized lazily, and every bind would check that it is.
var SQLITE_TRANSIENT: sqlite3_destructor_type { _codablestore_sqlite_transient() }

/// A prepared statement, finalized when the object is released.
///
/// Parameters are bound by 1-based index, columns are read by 0-based index, as in the C API.
/// A statement belongs to one ``Connection`` and is used under that connection's serialization.
///
/// ```swift
/// let statement = try connection.cachedStatement(sql: "SELECT name FROM person WHERE id = ?")
/// try statement.bind(Int64(42), at: 1)
/// while try statement.step() { print(statement.text(at: 0)) }
/// statement.reset()
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/stmt.html>
public final class Statement {
    /// The `sqlite3_stmt` handle.
    public let sqliteStatement: OpaquePointer
    /// The SQL this statement was prepared from.
    public let sql: String
    let sqliteConnection: OpaquePointer
    /// When the connection's statement cache last handed it out (for evicting the least recently used).
    var lastUse = 0

    init(sqliteStatement: OpaquePointer, sql: String, sqliteConnection: OpaquePointer) {
        self.sqliteStatement = sqliteStatement
        self.sql = sql
        self.sqliteConnection = sqliteConnection
    }

    deinit {
        sqlite3_finalize(sqliteStatement)
    }

    /// The number of `?` parameters.
    public var parameterCount: Int32 { sqlite3_bind_parameter_count(sqliteStatement) }
    /// The number of result columns.
    public var columnCount: Int32 { sqlite3_column_count(sqliteStatement) }
    /// The name of a result column.
    public func columnName(at index: Int32) -> String { String(cString: sqlite3_column_name(sqliteStatement, index)) }

    // MARK: - Binding

    @inline(__always)
    private func checkBind(_ code: Int32) throws {
        if code != SQLITE_OK { try check(code, sqliteConnection, sql: sql) }
    }

    public func bind(_ value: Int64, at index: Int32) throws {
        try checkBind(sqlite3_bind_int64(sqliteStatement, index, value))
    }

    public func bind(_ value: Double, at index: Int32) throws {
        try checkBind(sqlite3_bind_double(sqliteStatement, index, value))
    }

    public func bind(_ value: String, at index: Int32) throws {
        var value = value
        try checkBind(value.withUTF8 { bindText($0, at: index) })
    }

    public func bind(_ value: Data, at index: Int32) throws {
        let code = value.withUnsafeBytes { buffer -> Int32 in
            guard let base = buffer.baseAddress, buffer.count > 0 else {
                return sqlite3_bind_zeroblob(sqliteStatement, index, 0)
            }
            return sqlite3_bind_blob(sqliteStatement, index, base, Int32(buffer.count), SQLITE_TRANSIENT)
        }
        try checkBind(code)
    }

    public func bindNull(at index: Int32) throws {
        try checkBind(sqlite3_bind_null(sqliteStatement, index))
    }

    public func bind(_ value: SQLiteValue, at index: Int32) throws {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let value): try bind(value, at: index)
        case .real(let value): try bind(value, at: index)
        case .text(let value): try bind(value, at: index)
        case .blob(let value): try bind(value, at: index)
        }
    }

    /// Binds values to parameters 1, 2, … in order.
    public func bind(_ values: [SQLiteValue]) throws {
        try bind(values[...], from: 1)
    }

    /// Binds values to parameters `first`, `first + 1`, … in order.
    ///
    /// The import's writer binds every row of a batch through here: one call per statement, not one (through the
    /// storage seam's protocol) per value; text is bound from the string's own UTF-8 storage.
    public func bind(_ values: ArraySlice<SQLiteValue>, from first: Int32) throws {
        try values.withUnsafeBufferPointer { buffer in
            var index = first
            for offset in buffer.indices {
                let code: Int32
                switch buffer[offset] {
                case .null: code = sqlite3_bind_null(sqliteStatement, index)
                case .integer(let value): code = sqlite3_bind_int64(sqliteStatement, index, value)
                case .real(let value): code = sqlite3_bind_double(sqliteStatement, index, value)
                case .text(let value):
                    code = value.utf8.withContiguousStorageIfAvailable { bindText($0, at: index) } ?? {
                        var value = value
                        return value.withUTF8 { bindText($0, at: index) }
                    }()
                case .blob(let value):
                    try bind(value, at: index)
                    code = SQLITE_OK
                }
                try checkBind(code)
                index += 1
            }
        }
    }

    @inline(__always)
    private func bindText(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        // A NULL pointer would bind SQL NULL: an empty string needs a real (empty) buffer.
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            return sqlite3_bind_text(sqliteStatement, index, "", 0, SQLITE_TRANSIENT)
        }
        return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
            sqlite3_bind_text(sqliteStatement, index, $0, Int32(buffer.count), SQLITE_TRANSIENT)
        }
    }

    /// Sets every parameter back to NULL.
    public func clearBindings() {
        sqlite3_clear_bindings(sqliteStatement)
    }

    // MARK: - Stepping

    /// Advances to the next row; returns false when the statement is done.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/step.html>
    @discardableResult
    public func step() throws -> Bool {
        let code = sqlite3_step(sqliteStatement)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            // > In the legacy interface [...] sqlite3_reset() would return the specific error code.
            // With sqlite3_prepare_v3 the step result is already specific; reset so the statement is reusable.
            sqlite3_reset(sqliteStatement)
            try check(code, sqliteConnection, sql: sql)
            return false
        }
    }

    /// Runs the statement to completion and resets it.
    public func execute() throws {
        defer { sqlite3_reset(sqliteStatement) }
        while try step() {}
    }

    /// Runs the statement with these arguments to completion, then resets it.
    public func execute(_ arguments: [SQLiteValue]) throws {
        try bind(arguments)
        try execute()
    }

    /// Makes the statement ready to run again. Bindings are kept.
    public func reset() {
        sqlite3_reset(sqliteStatement)
    }

    // MARK: - Reading columns

    public func isNull(at column: Int32) -> Bool {
        sqlite3_column_type(sqliteStatement, column) == SQLITE_NULL
    }

    public func int64(at column: Int32) -> Int64 {
        sqlite3_column_int64(sqliteStatement, column)
    }

    public func double(at column: Int32) -> Double {
        sqlite3_column_double(sqliteStatement, column)
    }

    public func text(at column: Int32) -> String {
        guard let pointer = sqlite3_column_text(sqliteStatement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(sqliteStatement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    public func data(at column: Int32) -> Data {
        // > The pointer returned by sqlite3_column_blob() for a zero-length BLOB is a NULL pointer.
        guard let pointer = sqlite3_column_blob(sqliteStatement, column) else { return Data() }
        let count = Int(sqlite3_column_bytes(sqliteStatement, column))
        return Data(bytes: pointer, count: count)
    }

    /// The column's value with its storage class.
    public func value(at column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(sqliteStatement, column) {
        case SQLITE_INTEGER: .integer(int64(at: column))
        case SQLITE_FLOAT: .real(double(at: column))
        case SQLITE_TEXT: .text(text(at: column))
        case SQLITE_BLOB: .blob(data(at: column))
        default: .null
        }
    }

    /// The storage class of the column's value: `SQLITE_INTEGER`, `SQLITE_FLOAT`, `SQLITE_TEXT`, `SQLITE_BLOB` or `SQLITE_NULL`.
    public func storageClass(at column: Int32) -> Int32 {
        sqlite3_column_type(sqliteStatement, column)
    }

    /// The kind of the column's value (its storage class).
    public func kind(at column: Int32) -> DatabaseValue.Kind {
        switch sqlite3_column_type(sqliteStatement, column) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        case SQLITE_BLOB: .blob
        default: .null
        }
    }

    /// All columns of the current row.
    public func row() -> [SQLiteValue] {
        (0..<columnCount).map { value(at: $0) }
    }
}

extension Statement: DatabaseColumns {}

@available(*, unavailable)
extension Statement: Sendable {}
