/// Where the SQL of two backends differs. `SQLStorage` builds every statement from the model in one dialect; the
/// rest of its SQL is what SQLite and PostgreSQL both accept.
package struct SQLDialect: Sendable {
    /// The backend's name, for messages.
    package var name: String
    /// How a multi-row INSERT starts: `INSERT OR FAIL INTO` (SQLite keeps the rows before a failing one, and needs
    /// no statement journal) or `INSERT INTO`.
    package var insertInto: String
    /// Whether a statement may run again after one of the transaction's statements failed. PostgreSQL aborts the
    /// transaction on any error, so a conflict is described from the error instead of found by running rows again.
    package var continuesAfterError: Bool
    /// The column that orders a join table's rows by insertion (`rowid` in SQLite), in tables with positions (the
    /// links of a table without them have no order).
    package var joinRowOrder: String
    /// Whether ORDER BY needs `NULLS FIRST`/`NULLS LAST` to sort NULL first in ascending order, as SQLite does.
    package var needsNullOrdering: Bool
    /// The function that folds text for case-insensitive comparisons.
    package var caseFold: String
    /// `f(haystack, needle)`: the 1-based position of the needle, 0 when absent.
    package var position: String
    /// A placeholder whose type must be text where the server cannot infer it (`length(?)`).
    package var textParameter: String
    /// The first `%n` characters of the text `%c`.
    package var prefix: String
    /// The last `%n` characters of the text `%c`.
    package var suffix: String
    /// "Differs from, NULL included": `IS NOT` in SQLite.
    package var isDistinctFrom: String
    /// A condition that is never true.
    package var falseCondition: String
    /// Whether `sum` of integers and `avg` need casts to give what SQLite gives (an integer, a real).
    package var castsAggregates: Bool
    /// Whether consecutive write steps of one kind are run as one statement over arrays (see `StepWriter`).
    package var gathersSteps: Bool
    /// Whether membership queries probe the index once per owner instead of filtering by an `IN` list.
    package var probesPerOwner: Bool
    /// Whether parameters in a `VALUES` list need their column's type (PostgreSQL would take them for text).
    package var typesValuesLists: Bool
    /// What `LIMIT` binds for "no limit".
    package var noLimit: SQLiteValue
    /// Whether an error of the backend is a violation of a unique index (an identity taken).
    package var isUniqueViolation: @Sendable (any Error) -> Bool
    /// Whether an error is a violation of a primary key (a row id taken).
    package var isPrimaryKeyViolation: @Sendable (any Error) -> Bool
    /// The values of a unique violation as the backend reports them (`id = 5`), where rows cannot be run again to
    /// find the conflicting one (``continuesAfterError``).
    package var conflictingValues: @Sendable (any Error) -> String?
    /// Records per import batch where ``ImportOptions/batchSize`` leaves it to the backend.
    package var importBatchSize = 500
    /// Whether entity tables have the `_digest` column: which record last wrote each row, so that an import can skip
    /// the records that would change nothing (see `RecordDigests`). Every insert and update then writes it.
    package var storesDigests = false

    package static let sqlite: SQLDialect = {
        var dialect = SQLDialect(
            name: "SQLite", insertInto: "INSERT OR FAIL INTO", continuesAfterError: true, joinRowOrder: "rowid",
            needsNullOrdering: false, caseFold: "codablestore_fold", position: "instr", textParameter: "?",
            prefix: "substr(%c, 1, %n)", suffix: "substr(%c, -%n)", isDistinctFrom: "IS NOT", falseCondition: "0",
            castsAggregates: false, gathersSteps: false, probesPerOwner: false, typesValuesLists: false, noLimit: .integer(-1),
            isUniqueViolation: { error in (error as? SQLiteError).map { ResultCode.SQLITE_CONSTRAINT_UNIQUE ~= $0.resultCode } ?? false },
            isPrimaryKeyViolation: { error in
                (error as? SQLiteError).map { ResultCode.SQLITE_CONSTRAINT_PRIMARYKEY ~= $0.resultCode } ?? false
            },
            conflictingValues: { _ in nil })
        dialect.storesDigests = true
        return dialect
    }()

    /// The SQL of the PostgreSQL backend; CodableStorePostgres supplies how its errors read.
    package static func postgres(
        isUniqueViolation: @escaping @Sendable (any Error) -> Bool, isPrimaryKeyViolation: @escaping @Sendable (any Error) -> Bool,
        conflictingValues: @escaping @Sendable (any Error) -> String?
    ) -> SQLDialect {
        var dialect = SQLDialect(
            name: "PostgreSQL", insertInto: "INSERT INTO", continuesAfterError: false, joinRowOrder: "\"_row\"",
            needsNullOrdering: true, caseFold: "codablestore_fold", position: "strpos", textParameter: "?::text", prefix: "left(%c, %n)",
            suffix: "right(%c, %n)", isDistinctFrom: "IS DISTINCT FROM", falseCondition: "FALSE", castsAggregates: true, gathersSteps: true,
            probesPerOwner: true, typesValuesLists: true,
            noLimit: .null, isUniqueViolation: isUniqueViolation, isPrimaryKeyViolation: isPrimaryKeyViolation,
            conflictingValues: conflictingValues)
        // A batch costs a few round trips per table: larger batches carry more rows per trip.
        dialect.importBatchSize = 1_000
        return dialect
    }

    /// The first (`prefix`) or last characters of `column`, as many as the bound text has.
    func part(_ template: String, of column: String) -> String {
        template.split(separator: "%", omittingEmptySubsequences: false).enumerated().map { offset, piece in
            guard offset > 0 else { return String(piece) }
            if piece.hasPrefix("c") { return column + piece.dropFirst() }
            if piece.hasPrefix("n") { return "length(\(textParameter))" + piece.dropFirst() }
            return "%" + piece
        }.joined()
    }

    /// An aggregate of a column of type `affinity`, giving what SQLite gives: an integer sum of integers, a real
    /// average.
    func aggregate(_ function: String, _ column: String, affinity: String?) -> String {
        let call = "\(function)(\(column))"
        guard castsAggregates else { return call }
        switch function {
        case "sum" where affinity == "INTEGER": return "CAST(\(call) AS bigint)"
        case "avg": return "CAST(\(call) AS double precision)"
        default: return call
        }
    }

    /// `term ASC`/`term DESC`, with NULL first in ascending order.
    func order(_ term: String, ascending: Bool) -> String {
        guard needsNullOrdering else { return term + (ascending ? " ASC" : " DESC") }
        return term + (ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST")
    }
}
