import CodableStore
import Foundation
import PostgresNIO

/// An error reported by the PostgreSQL server, or a failure to reach it: the server's SQLSTATE, message and detail,
/// and the statement that failed.
///
/// ```swift
/// catch let error as PostgresError where error.sqlState == "23505" { … }   // unique_violation
/// ```
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The SQLSTATE code (`23505` unique_violation, `55P03` lock_not_available…), nil when the server was not reached.
    public let sqlState: String?
    /// The server's primary message, or what failed on the way to it.
    public let message: String
    /// The server's detail (`Key ("id")=(5) already exists.`), if any.
    public let detail: String?
    /// The statement that failed, with `$n` placeholders, if any.
    public let sql: String?

    public init(sqlState: String?, message: String, detail: String? = nil, sql: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.sql = sql
    }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }

    /// The error of a failed statement or connection attempt, without the values it bound (postgres-nio keeps them
    /// out of descriptions, and so does this).
    init(_ error: any Error, sql: String?) {
        if let error = error as? PostgresError {
            self = error
        } else if let error = error as? PSQLError {
            if let info = error.serverInfo {
                self.init(
                    sqlState: info[.sqlState], message: info[.message] ?? "the server reported an error",
                    detail: info[.detail], sql: sql)
            } else {
                let cause = error.underlying.map { " (\($0))" } ?? ""
                self.init(sqlState: nil, message: "\(error.code)\(cause)", sql: sql)
            }
        } else {
            self.init(sqlState: nil, message: "\(error)", sql: sql)
        }
    }

    static let uniqueViolation = "23505"
    static let lockNotAvailable = "55P03"
}

extension PostgresError: DatabaseError {}

/// `Key (_pk)=(5) already exists.`: PostgreSQL quotes a column name only where it needs quotes.
private func isPrimaryKeyDetail(_ detail: String?) -> Bool {
    guard let detail else { return false }
    return detail.hasPrefix("Key (_pk)") || detail.hasPrefix("Key (\"_pk\")")
}

extension SQLDialect {
    /// PostgreSQL's SQL, with its errors read as the context needs them.
    static let postgresql = SQLDialect.postgres(
        isUniqueViolation: { error in
            guard let error = error as? PostgresError, error.sqlState == PostgresError.uniqueViolation else { return false }
            return !isPrimaryKeyDetail(error.detail)
        },
        isPrimaryKeyViolation: { error in
            guard let error = error as? PostgresError, error.sqlState == PostgresError.uniqueViolation else { return false }
            return isPrimaryKeyDetail(error.detail)
        },
        conflictingValues: { error in
            // `Key (id)=(5) already exists.` → `id = 5`; `Key (repo, number)=(r, 101)` → `repo, number = r, 101`.
            guard let detail = (error as? PostgresError)?.detail, detail.hasPrefix("Key ("),
                let equals = detail.range(of: ")=(")
            else { return nil }
            let columns = detail[detail.index(detail.startIndex, offsetBy: 5)..<equals.lowerBound]
            guard let end = detail.range(of: ") already exists", range: equals.upperBound..<detail.endIndex) else { return nil }
            let values = detail[equals.upperBound..<end.lowerBound]
            return "\(columns.replacing("\"", with: "")) = \(values)"
        })
}
