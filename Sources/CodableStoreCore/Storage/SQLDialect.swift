/// How a SQL backend says what the store needs, where backends differ: a few expressions, how its errors read, and
/// (optionally) how it reads memberships and writes a plan's steps. `SQLStorage` builds every statement from the model
/// in the store's dialect; the rest of its SQL is what the backends share (standard SQL with upserts).
///
/// The SQLite backend's is ``SQLiteDialect``. Another backend's module declares its own and opens its stores with it
/// (``Store/init(backend:dialect:entities:options:description:)``).
package protocol SQLDialect: Sendable {
    /// The backend's name, for messages.
    var name: String { get }
    /// How a multi-row INSERT starts: `INSERT INTO`, or a variant that keeps the rows before a failing one.
    var insertInto: String { get }
    /// Whether a statement may run again after one of the transaction's statements failed. A backend that aborts the
    /// transaction on any error describes a conflict from the error (``conflictingValues(_:)``) instead of finding it
    /// by running rows again, and runs statements that may fail in a savepoint.
    var continuesAfterError: Bool { get }
    /// The column that orders a join table's rows by insertion, in tables with positions (the links of a table
    /// without them have no order).
    var joinRowOrder: String { get }
    /// The function that folds text for case-insensitive comparisons.
    var caseFold: String { get }
    /// `f(haystack, needle)`: the 1-based position of the needle, 0 when absent.
    var position: String { get }
    /// A placeholder whose type must be text where the backend cannot infer it (`length(?)`).
    var textParameter: String { get }
    /// The first `%n` characters of the text `%c`.
    var prefix: String { get }
    /// The last `%n` characters of the text `%c`.
    var suffix: String { get }
    /// "Differs from, NULL included".
    var isDistinctFrom: String { get }
    /// A condition that is never true.
    var falseCondition: String { get }
    /// What `LIMIT` binds for "no limit".
    var noLimit: DatabaseValue { get }
    /// Records per import batch where ``ImportOptions/batchSize`` leaves it to the backend.
    var importBatchSize: Int { get }
    /// Whether entity tables have the `_digest` column, each row's stamp (see ``RowStamps``): every insert and update
    /// then writes it, and the store keeps the promise that a row keeps its stamp only while nothing else changed it.
    var storesStamps: Bool { get }
    /// A condition that matches any of a list of values of `column` bound as one parameter (`"id" = ANY (?::bigint[])`,
    /// the parameter made by ``listParameter(_:)``), for identity lookups of a single-column identity; nil (the
    /// default) for an `IN` list of one parameter per value.
    func listCondition(for column: EntitySchema.Column) -> String?
    /// The parameter of a ``listCondition(for:)``.
    func listParameter(_ values: [DatabaseValue]) -> DatabaseValue

    /// `term ASC`/`term DESC`, with NULL first in ascending order.
    func order(_ term: String, ascending: Bool) -> String
    /// An aggregate of a column of type `affinity`: an integer sum of integers, a real average.
    func aggregate(_ function: String, _ column: String, affinity: String?) -> String
    /// A placeholder for a value of `column` in a `VALUES` list: `?`, or one with the column's type where the backend
    /// would not infer it from the column the list is compared with.
    func valuesParameter(for column: EntitySchema.Column) -> String
    /// The members of a to-many relationship for `owners` owners (bound as row ids): each row is the owner's row id
    /// followed by the destination's columns (``SQLStorage/qualifiedColumns(of:)``), in the relationship's order. By
    /// default ``SQLStorage/membershipSQLWithOwnerList(_:owners:)``.
    func membershipSQL(_ relationship: ResolvedRelationship, owners: Int, storage: SQLStorage) -> String
    /// ``membershipSQL(_:owners:storage:)`` with the owners' row ids bound as one list parameter
    /// (``listParameter(_:)``), for any number of owners; nil (the default) where the dialect has no list parameter.
    func membershipListSQL(_ relationship: ResolvedRelationship, storage: SQLStorage) -> String?

    /// Whether an error of the backend is a violation of a unique index (an identity taken).
    func isUniqueViolation(_ error: any Error) -> Bool
    /// Whether an error is a violation of a primary key (a row id taken).
    func isPrimaryKeyViolation(_ error: any Error) -> Bool
    /// Whether a write failed only because another writer's transaction ran at the same moment (a deadlock, a
    /// serialization failure, an identity that another writer inserted after this one looked it up): the transaction
    /// was rolled back, and running it again is expected to succeed. Never for a backend whose write lock keeps
    /// other writers out (false by default).
    func isTransientConflict(_ error: any Error) -> Bool
    /// The values of a unique violation as the backend reports them (`id = 5`), where rows cannot be run again to
    /// find the conflicting one (``continuesAfterError``); nil by default.
    func conflictingValues(_ error: any Error) -> String?

    /// What writes the steps of a plan in fewer statements than one per step, with statements from `statements`
    /// (see `StepWriter`), or the connection's own ways of sending rows; nil by default: each step is a statement of
    /// its own, run at once.
    func makeStepGatherer(
        storage: SQLStorage, connection: any DatabaseConnection, statements: @escaping (String) throws -> any DatabaseStatement
    ) -> (any StepGatherer)?
}

extension SQLDialect {
    package var importBatchSize: Int { 500 }
    package var storesStamps: Bool { false }
    package func listCondition(for column: EntitySchema.Column) -> String? { nil }
    package func listParameter(_ values: [DatabaseValue]) -> DatabaseValue { .null }

    package func valuesParameter(for column: EntitySchema.Column) -> String { "?" }

    package func membershipSQL(_ relationship: ResolvedRelationship, owners: Int, storage: SQLStorage) -> String {
        storage.membershipSQLWithOwnerList(relationship, owners: owners)
    }

    package func membershipListSQL(_ relationship: ResolvedRelationship, storage: SQLStorage) -> String? { nil }

    package func conflictingValues(_ error: any Error) -> String? { nil }
    package func isTransientConflict(_ error: any Error) -> Bool { false }

    package func makeStepGatherer(
        storage: SQLStorage, connection: any DatabaseConnection, statements: @escaping (String) throws -> any DatabaseStatement
    ) -> (any StepGatherer)? {
        nil
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
}
