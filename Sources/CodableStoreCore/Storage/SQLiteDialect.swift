/// The SQL of the SQLite backend.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang.html>
struct SQLiteDialect: SQLDialect {
    init() {}

    var name: String { "SQLite" }
    /// OR FAIL: a failing multi-row INSERT keeps the rows before the failure instead of undoing itself, so SQLite needs
    /// no statement journal (see ``SQLStorage``).
    var insertInto: String { "INSERT OR FAIL INTO" }
    var continuesAfterError: Bool { true }
    var joinRowOrder: String { "rowid" }
    /// Registered on every connection of the store (see `Connection.registerCaseFolding()`).
    var caseFold: String { "codablestore_fold" }
    var position: String { "instr" }
    var textParameter: String { "?" }
    var prefix: String { "substr(%c, 1, %n)" }
    var suffix: String { "substr(%c, -%n)" }
    var isDistinctFrom: String { "IS NOT" }
    var falseCondition: String { "0" }
    var noLimit: DatabaseValue { .integer(-1) }
    var storesStamps: Bool { true }

    /// SQLite sorts NULL first in ascending order by itself.
    func order(_ term: String, ascending: Bool) -> String {
        term + (ascending ? " ASC" : " DESC")
    }

    /// SQLite's `sum` of integers is an integer, its `avg` a real.
    func aggregate(_ function: String, _ column: String, affinity: String?) -> String {
        "\(function)(\(column))"
    }

    func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? SQLiteError).map { ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= $0.resultCode } ?? false
    }

    func isPrimaryKeyViolation(_ error: any Error) -> Bool {
        (error as? SQLiteError).map { ResultCode.SQLITE_CONSTRAINT_PRIMARYKEY ~= $0.resultCode } ?? false
    }
}
