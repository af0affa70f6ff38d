import CodableStore
import Foundation

/// The SQL of the PostgreSQL backend, and how its errors read.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/sql-commands.html>
struct PostgresDialect: SQLDialect {
    var name: String { "PostgreSQL" }
    var insertInto: String { "INSERT INTO" }
    /// PostgreSQL aborts the transaction on any error, until a rollback (to a savepoint).
    var continuesAfterError: Bool { false }
    /// The identity column of join tables (see ``PostgresSchema/createJoinTable(_:model:on:)``): SQLite's rowid.
    var joinRowOrder: String { "\"_row\"" }
    /// Created with the schema (see ``PostgresSchema``).
    var caseFold: String { "codablestore_fold" }
    var position: String { "strpos" }
    var textParameter: String { "?::text" }
    var prefix: String { "left(%c, %n)" }
    var suffix: String { "right(%c, %n)" }
    var isDistinctFrom: String { "IS DISTINCT FROM" }
    var falseCondition: String { "FALSE" }
    var noLimit: DatabaseValue { .null }
    /// A batch costs a few statements per table, each a round trip and a plan: larger batches carry more rows per
    /// statement (see `ImportOptions.batchSize`).
    var importBatchSize: Int { 2_000 }
    /// Each entity table has a `_digest` column (see ``PostgresSchema``), guarded by ``PostgresStampGuards``.
    var storesStamps: Bool { true }

    /// psql, 50 lookups of 1,000 random identities in 1M rows: 0.35 s with one array parameter, 0.49 s with an `IN`
    /// list of 1,000 parameters (each one parsed, and the plan made with each).
    func listCondition(for column: EntitySchema.Column) -> String? {
        "\(quoteIdentifier(column.name)) = ANY (?::\(PostgresSchema.arrayElementType(column))[])"
    }

    func listParameter(_ values: [DatabaseValue]) -> DatabaseValue {
        .text(PostgresStepGatherer.arrayLiteral(values))
    }

    /// PostgreSQL sorts NULL last in ascending order: explicitly first, as SQLite sorts it.
    func order(_ term: String, ascending: Bool) -> String {
        term + (ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST")
    }

    /// `sum` of bigints is a numeric and `avg` a numeric in PostgreSQL: cast to what SQLite gives, an integer sum of
    /// integers and a real average.
    func aggregate(_ function: String, _ column: String, affinity: String?) -> String {
        let call = "\(function)(\(column))"
        switch function {
        case "sum" where affinity == "INTEGER": return "CAST(\(call) AS bigint)"
        case "avg": return "CAST(\(call) AS double precision)"
        default: return call
        }
    }

    /// PostgreSQL types an untyped parameter in VALUES as text: each gets its column's type.
    func valuesParameter(for column: EntitySchema.Column) -> String {
        "?::" + PostgresSchema.arrayElementType(column)
    }

    /// Probes the index once per owner instead of filtering by an `IN` list (see ``membershipSQL(_:from:storage:)``).
    func membershipSQL(_ relationship: ResolvedRelationship, owners: Int, storage: SQLStorage) -> String {
        membershipSQL(relationship, from: "(VALUES " + Array(repeating: "(?::bigint)", count: owners).joined(separator: ", ") + ")", storage: storage)
    }

    /// psql, 30 loads of the labels of 220 random issues among 1M: 5.34 ms a load with one array, 6.54 ms with
    /// `VALUES` of 220 parameters (each parsed, and the plan made with each).
    func membershipListSQL(_ relationship: ResolvedRelationship, storage: SQLStorage) -> String? {
        membershipSQL(relationship, from: "unnest(?::bigint[])", storage: storage)
    }

    /// The members of the owners listed by `owners` (`VALUES` of one parameter each, or an array).
    ///
    /// `(SELECT DISTINCT "owner" FROM … AS v ("owner")) AS o`: the owners are probed one by one. A server that has no
    /// statistics for a table filled in the current transaction may otherwise read the whole table for an `IN` list
    /// (PostgreSQL does: a parallel scan of every link, measured at 87 ms for 3 owners of 1.3M links); a probe per
    /// owner (kept apart from the join by `OFFSET 0`, so that the planner cannot flatten it into one) can only use
    /// the index (0.13 ms). `DISTINCT`: a statement's last chunk of `VALUES` repeats its last owner to fill the slots,
    /// and each owner is probed once.
    private func membershipSQL(_ relationship: ResolvedRelationship, from owners: String, storage: SQLStorage) -> String {
        let model = storage.model
        let destination = model.mappings[relationship.destination]
        let table = quoteIdentifier(destination.name)
        let columns = storage.qualifiedColumns(of: destination.index)
        let source = "(SELECT DISTINCT \"owner\" FROM \(owners) AS v (\"owner\")) AS o"
        switch relationship.storage {
        case .foreignKey:
            preconditionFailure("a to-one relationship has no membership query")
        case .inverseForeignKey(let column, let orderColumn):
            let order = orderColumn.map { "\(quoteIdentifier($0)) IS NULL, \(quoteIdentifier($0)), " } ?? ""
            return "SELECT \(table).\(quoteIdentifier(column)), \(columns) FROM " + source
                + " CROSS JOIN LATERAL (SELECT * FROM \(table) WHERE \(quoteIdentifier(column)) = o.\"owner\" OFFSET 0) AS \(table) "
                + "ORDER BY \(order)\"_pk\""
        case .joinTable(let index, let ownerIsSource):
            let join = model.joinTables[index]
            let (mine, theirs) = ownerIsSource ? ("source", "target") : ("target", "source")
            // Links of a table without positions (both sides unordered) have no order to keep.
            let order = !join.hasPosition ? ""
                : " ORDER BY " + (ownerIsSource ? "j.\"position\" IS NULL, j.\"position\", " : "") + "j.\(joinRowOrder)"
            return "SELECT j.\"\(mine)\", \(columns) FROM " + source
                + " CROSS JOIN LATERAL (SELECT * FROM \(quoteIdentifier(join.name)) WHERE \"\(mine)\" = o.\"owner\" OFFSET 0) AS j "
                + "JOIN \(table) ON \(table).\"_pk\" = j.\"\(theirs)\"" + order
        }
    }

    // MARK: - Errors

    func isUniqueViolation(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError, error.sqlState == PostgresError.uniqueViolation else { return false }
        return !Self.isPrimaryKeyDetail(error.detail)
    }

    func isPrimaryKeyViolation(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError, error.sqlState == PostgresError.uniqueViolation else { return false }
        return Self.isPrimaryKeyDetail(error.detail)
    }

    /// A deadlock or a serialization failure; or an identity conflict of an insert: the store's writes look an
    /// identity up before inserting it, so a conflict means that another writer inserted it since (the insert waited
    /// for that writer's commit), and the lookup of a second attempt finds its row. An insert of an identity the
    /// caller's own code duplicated fails the same way on every attempt, and is thrown as it is after the last.
    func isTransientConflict(_ error: any Error) -> Bool {
        if let error = error as? PostgresError {
            return error.sqlState == PostgresError.deadlockDetected || error.sqlState == PostgresError.serializationFailure
        }
        if let error = error as? StoreError {
            if error.code == .identityConflict, let cause = error.cause as? PostgresError {
                return cause.sqlState == PostgresError.uniqueViolation
            }
            return error.cause.map(isTransientConflict) ?? false
        }
        return false
    }

    /// `Key (id)=(5) already exists.` → `id = 5`; `Key (repo, number)=(r, 101)` → `repo, number = r, 101`.
    func conflictingValues(_ error: any Error) -> String? {
        guard let detail = (error as? PostgresError)?.detail, detail.hasPrefix("Key ("),
            let equals = detail.range(of: ")=(")
        else { return nil }
        let columns = detail[detail.index(detail.startIndex, offsetBy: 5)..<equals.lowerBound]
        guard let end = detail.range(of: ") already exists", range: equals.upperBound..<detail.endIndex) else { return nil }
        let values = detail[equals.upperBound..<end.lowerBound]
        return "\(columns.replacing("\"", with: "")) = \(values)"
    }

    /// `Key (_pk)=(5) already exists.`: PostgreSQL quotes a column name only where it needs quotes.
    private static func isPrimaryKeyDetail(_ detail: String?) -> Bool {
        guard let detail else { return false }
        return detail.hasPrefix("Key (_pk)") || detail.hasPrefix("Key (\"_pk\")")
    }

    // MARK: - Writing

    /// Every statement is a round trip: steps are gathered into COPYs and statements over arrays (see
    /// ``PostgresStepGatherer``).
    func makeStepGatherer(
        storage: SQLStorage, connection: any DatabaseConnection, statements: @escaping (String) throws -> any DatabaseStatement
    ) -> (any StepGatherer)? {
        PostgresStepGatherer(storage: storage, connection: connection as? PostgresDatabaseConnection, statements: statements)
    }
}
