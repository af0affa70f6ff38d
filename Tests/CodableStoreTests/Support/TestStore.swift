import CSQLite
import CodableStore
import Foundation
import Testing

/// Helpers shared by the tests: temporary store files, a raw SQLite oracle, a statement log.
enum TestStore {
    /// The test process's own temporary directory, removed when the process exits: every test's files go under it.
    static let root: URL = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("codablestore-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestStore.root) }
        return directory
    }()

    /// A fresh path in a fresh temporary directory.
    static func temporaryPath(_ name: String = "store.sqlite") -> String {
        let directory = root.appendingPathComponent(UUID().uuidString)
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent(name).path
    }

    static let entities: [any EntityObject.Type] = [Person.self, Country.self, Tag.self, PersonAttribute.self]
}

/// A plain sqlite3 connection, independent of CodableStore's SQLite layer: the oracle for what is on disk.
final class RawDatabase {
    private var handle: OpaquePointer?

    init(_ path: String) throws {
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil)
        guard code == SQLITE_OK else { throw RawError(message: "open \(path): \(code)") }
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Turns the firing of triggers off (or on) for this connection's statements, as any program can.
    func setTriggersEnabled(_ enabled: Bool) throws {
        guard _codablestore_sqlite_db_config_int(handle, SQLITE_DBCONFIG_ENABLE_TRIGGER, enabled ? 1 : 0) == SQLITE_OK else {
            throw RawError(message: String(cString: sqlite3_errmsg(handle)))
        }
    }

    struct RawError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// All rows of a query, each value rendered as text (`NULL` for null), like the sqlite3 shell.
    func rows(_ sql: String) throws -> [[String]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw RawError(message: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String]] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw RawError(message: String(cString: sqlite3_errmsg(handle))) }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    sqlite3_column_type(statement, column) == SQLITE_NULL
                        ? "NULL" : String(cString: sqlite3_column_text(statement, column))
                })
        }
        return rows
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw RawError(message: String(cString: sqlite3_errmsg(handle)))
        }
    }

    /// The single value of a one-row, one-column query.
    func value(_ sql: String) throws -> String {
        let rows = try rows(sql)
        guard rows.count == 1, rows[0].count == 1 else { throw RawError(message: "expected one value, got \(rows)") }
        return rows[0][0]
    }
}

/// Collects the SQL of executed statements, to count queries and check what was written.
final class StatementLog: Sendable {
    private let statements = Locked<[String]>([])

    var observer: @Sendable (String) -> Void {
        { [self] sql in statements.withLock { $0.append(sql) } }
    }

    var all: [String] { statements.withLock { $0 } }

    func reset() { statements.withLock { $0.removeAll() } }

    /// Statements that write: INSERT, UPDATE, DELETE.
    var writes: [String] {
        all.filter { $0.hasPrefix("INSERT") || $0.hasPrefix("UPDATE") || $0.hasPrefix("DELETE") }
    }
}
