/// The SQL of the SQLite backend.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang.html>
package struct SQLiteDialect: SQLDialect {
    package init() {}

    package var name: String { "SQLite" }
    /// OR FAIL: a failing multi-row INSERT keeps the rows before the failure instead of undoing itself, so SQLite needs
    /// no statement journal (see ``SQLStorage``).
    package var insertInto: String { "INSERT OR FAIL INTO" }
    package var continuesAfterError: Bool { true }
    package var joinRowOrder: String { "rowid" }
    /// Registered on every connection of the store (see `Connection.registerCaseFolding()`).
    package var caseFold: String { "codablestore_fold" }
    package var position: String { "instr" }
    package var textParameter: String { "?" }
    package var prefix: String { "substr(%c, 1, %n)" }
    package var suffix: String { "substr(%c, -%n)" }
    package var isDistinctFrom: String { "IS NOT" }
    package var falseCondition: String { "0" }
    package var noLimit: DatabaseValue { .integer(-1) }
    package var storesDigests: Bool { true }

    /// SQLite sorts NULL first in ascending order by itself.
    package func order(_ term: String, ascending: Bool) -> String {
        term + (ascending ? " ASC" : " DESC")
    }

    /// SQLite's `sum` of integers is an integer, its `avg` a real.
    package func aggregate(_ function: String, _ column: String, affinity: String?) -> String {
        "\(function)(\(column))"
    }

    package func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? SQLiteError).map { ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= $0.resultCode } ?? false
    }

    package func isPrimaryKeyViolation(_ error: any Error) -> Bool {
        (error as? SQLiteError).map { ResultCode.SQLITE_CONSTRAINT_PRIMARYKEY ~= $0.resultCode } ?? false
    }
}
