import CLibPQ
import CLibPQLoader
import CodableStore
import Foundation

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

    /// The error a failed statement's result carries (the server's SQLSTATE, message and detail), or else the
    /// connection's last message (the server could not be reached, or went away). The values the statement bound are
    /// never part of it.
    init(result: OpaquePointer?, connection: OpaquePointer?, sql: String?) {
        func field(_ code: Character) -> String? {
            guard let result, let value = codable_store_PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        if let message = field("M") {
            self.init(sqlState: field("C"), message: message, detail: field("D"), sql: sql)
        } else {
            self.init(sqlState: nil, message: Self.connectionMessage(connection), sql: sql)
        }
    }

    /// libpq's last message for `connection`, on one line (it ends its messages with a line feed).
    static func connectionMessage(_ connection: OpaquePointer?) -> String {
        guard let connection, let text = codable_store_PQerrorMessage(connection) else { return "out of memory" }
        let lines = String(cString: text).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return lines.isEmpty ? "the connection failed" : lines.joined(separator: "; ")
    }

    static let uniqueViolation = "23505"
    static let lockNotAvailable = "55P03"
    static let insufficientPrivilege = "42501"
    static let serializationFailure = "40001"
    static let deadlockDetected = "40P01"
}

extension PostgresError: DatabaseError {}
