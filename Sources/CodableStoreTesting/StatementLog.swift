import CodableStore
import Foundation

/// The SQL statements a store runs, recorded for a test: to read them, and to hold a piece of code to a budget of
/// queries (``expectQueries(atMost:_:)``), so that "this screen loads in 3 queries" stays true.
///
/// A ``FixtureStore`` has one. For a store of your own, open it with options that record into a log:
/// ```swift
/// let log = StatementLog()
/// let store = try Store(path: path, entities: entities, options: log.recording(into: Store.Options()))
/// ```
/// Every statement of the store's connections is recorded, from any thread (an import's writer thread too), in
/// the order they start. A budget counts what runs while its closure runs: keep other work on the same store out
/// of that time.
public final class StatementLog: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var entries: [String] = []

    public init() {}

    /// `options` with this log recording every statement (after the statement observer they had, if any).
    public func recording(into options: Store.Options) -> Store.Options {
        var options = options
        let previous = options.statementObserver
        options.statementObserver = { [self] sql in
            previous?(sql)
            record(sql)
        }
        return options
    }

    /// Adds a statement.
    public func record(_ sql: String) {
        lock.withLock { entries.append(sql) }
    }

    /// The statements recorded so far, in order.
    public var statements: [String] { lock.withLock { entries } }

    /// Forgets the statements recorded so far.
    public func removeAll() {
        lock.withLock { entries.removeAll() }
    }

    /// Runs `body` and returns what it returned with the statements that ran meanwhile.
    public func statements<T>(during body: () throws -> T) rethrows -> (value: T, statements: [String]) {
        let start = lock.withLock { entries.count }
        let value = try body()
        return (value, lock.withLock { Array(entries[start...]) })
    }

    /// Runs `body` and fails if it ran more than `limit` queries (`SELECT` statements).
    /// - Throws: ``FixtureError`` (`budgetExceeded`) listing the statements, or what `body` threw.
    @discardableResult
    public func expectQueries<T>(atMost limit: Int, _ body: () throws -> T) throws -> T {
        try expect(atMost: limit, of: [.select], "queries", body)
    }

    /// Runs `body` and fails if it ran more than `limit` statements, transaction control (`BEGIN`, `COMMIT`,
    /// savepoints) left out.
    @discardableResult
    public func expectStatements<T>(atMost limit: Int, _ body: () throws -> T) throws -> T {
        try expect(atMost: limit, of: Set(StatementKind.allCases).subtracting([.transaction]), "statements", body)
    }

    /// Runs `body` and fails unless the statements it ran were exactly of these kinds, in this order
    /// (transaction control left out).
    @discardableResult
    public func expectStatements<T>(_ kinds: [StatementKind], _ body: () throws -> T) throws -> T {
        let (value, ran) = try statements(during: body)
        let counted = ran.filter { StatementKind(sql: $0) != .transaction }
        let actual = counted.map { StatementKind(sql: $0) }
        guard actual != kinds else { return value }
        throw FixtureError(
            .budgetExceeded,
            message: "expected statements \(kinds.map(\.rawValue)), ran \(actual.map(\.rawValue)):\n" + Self.numbered(counted))
    }

    private func expect<T>(atMost limit: Int, of kinds: Set<StatementKind>, _ noun: String, _ body: () throws -> T) throws -> T {
        let (value, ran) = try statements(during: body)
        let counted = ran.filter { kinds.contains(StatementKind(sql: $0)) }
        guard counted.count > limit else { return value }
        throw FixtureError(.budgetExceeded, message: "\(counted.count) \(noun) ran, over the budget of \(limit):\n" + Self.numbered(counted))
    }

    private static func numbered(_ statements: [String]) -> String {
        statements.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n")
    }
}

/// What a SQL statement does, by its first keyword.
public enum StatementKind: String, Sendable, CaseIterable {
    /// `SELECT`, and `WITH … SELECT`.
    case select
    case insert
    case update
    case delete
    /// `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`.
    case transaction
    /// `CREATE`, `DROP`, `ALTER`.
    case schema
    case pragma
    case other

    public init(sql: String) {
        let keyword = sql.drop { $0.isWhitespace || $0 == "(" }.prefix { $0.isLetter }.uppercased()
        switch keyword {
        case "SELECT", "WITH", "VALUES": self = .select
        case "INSERT", "REPLACE": self = .insert
        case "UPDATE": self = .update
        case "DELETE": self = .delete
        case "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE": self = .transaction
        case "CREATE", "DROP", "ALTER": self = .schema
        case "PRAGMA": self = .pragma
        default: self = .other
        }
    }
}
