import CodableStoreSQLite
import Foundation
import Testing

@Suite struct ConnectionTests {
    @Test func typedBindingAndReadingRoundTrip() throws {
        let connection = try Connection(path: ":memory:")
        try connection.execute(sql: "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)")
        let insert = try connection.makeStatement(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)")
        try insert.bind(Int64.min, at: 1)
        try insert.bind(2.5, at: 2)
        try insert.bind("", at: 3)  // an empty string stays a string, not NULL
        try insert.bind(Data([0, 255]), at: 4)
        try insert.bindNull(at: 5)
        try insert.execute()
        let rows = try connection.rows(sql: "SELECT i, r, s, b, n, typeof(s) FROM t")
        #expect(rows == [[.integer(.min), .real(2.5), .text(""), .blob(Data([0, 255])), .null, .text("text")]])
    }

    /// Each constraint failure carries its extended code; a primary pattern matches all of them, an extended
    /// pattern only its own, in `switch` over codes and in `catch` over errors.
    @Test(arguments: [
        ("INSERT INTO t (id, name) VALUES (1, 'b')", ResultCode.SQLITE_CONSTRAINT_UNIQUE, "SQLITE_CONSTRAINT_UNIQUE", 2067),
        ("INSERT INTO t (id, name) VALUES (2, NULL)", .SQLITE_CONSTRAINT_NOTNULL, "SQLITE_CONSTRAINT_NOTNULL", 1299),
        ("INSERT INTO t (pk, id, name) VALUES (1, 3, 'c')", .SQLITE_CONSTRAINT_PRIMARYKEY, "SQLITE_CONSTRAINT_PRIMARYKEY", 1555),
        ("INSERT INTO t (id, name) VALUES (-1, 'd')", .SQLITE_CONSTRAINT_CHECK, "SQLITE_CONSTRAINT_CHECK", 275),
    ])
    func extendedResultCodesMatchAsPatterns(sql: String, expected: ResultCode, name: String, raw: Int32) throws {
        let connection = try Connection(path: ":memory:")
        try connection.execute(
            sql: "CREATE TABLE t (pk INTEGER PRIMARY KEY, id INTEGER UNIQUE CHECK (id >= 0), name TEXT NOT NULL)")
        try connection.execute(sql: "INSERT INTO t (pk, id, name) VALUES (1, 1, 'a')")
        let error = try #require(throws: SQLiteError.self) { try connection.execute(sql: sql) }
        #expect(error.resultCode == expected)
        #expect(error.resultCode.rawValue == raw)
        #expect(error.resultCode.name == name)
        #expect(!error.resultCode.isPrimary && error.resultCode.primary.isPrimary)
        #expect(ResultCode.SQLITE_CONSTRAINT ~= error.resultCode)
        #expect(expected ~= error.resultCode)
        let others: [ResultCode] = [
            .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_NOTNULL, .SQLITE_CONSTRAINT_PRIMARYKEY, .SQLITE_CONSTRAINT_CHECK,
        ].filter { $0 != expected }
        #expect(others.allSatisfy { !($0 ~= error.resultCode) })
        #expect(!(ResultCode.SQLITE_BUSY ~= error.resultCode))

        let branch: String
        switch error.resultCode {
        case .SQLITE_CONSTRAINT_UNIQUE: branch = "unique"
        case .SQLITE_CONSTRAINT_NOTNULL: branch = "not null"
        case .SQLITE_CONSTRAINT: branch = "other constraint"
        default: branch = "other"
        }
        #expect(branch == ["SQLITE_CONSTRAINT_UNIQUE": "unique", "SQLITE_CONSTRAINT_NOTNULL": "not null"][name, default: "other constraint"])

        do {
            try connection.execute(sql: sql)
            Issue.record("no error")
        } catch ResultCode.SQLITE_CONSTRAINT_UNIQUE {
            #expect(expected == .SQLITE_CONSTRAINT_UNIQUE)
        } catch SQLiteError.constraint {
            #expect(expected != .SQLITE_CONSTRAINT_UNIQUE)
        }
        #expect(ResultCode(rawValue: 2067 | 0x10000).name == "SQLITE_CONSTRAINT (extended \(2067 | 0x10000))")
        #expect(ResultCode.SQLITE_IOERR.description == "SQLITE_IOERR (10)")
        #expect(ResultCode(rawValue: 10 | 4 << 8).name == "SQLITE_IOERR_FSYNC")
    }

    @Test func errorsCarryResultCodeMessageAndSQL() throws {
        let connection = try Connection(path: ":memory:")
        try connection.execute(sql: "CREATE TABLE t (id INTEGER UNIQUE)")
        try connection.execute(sql: "INSERT INTO t VALUES (1)")
        let error = try #require(throws: SQLiteError.self) {
            try connection.execute(sql: "INSERT INTO t VALUES (?)", arguments: [.integer(1)])
        }
        #expect(error.resultCode.primary == .SQLITE_CONSTRAINT)
        #expect(error.resultCode.name == "SQLITE_CONSTRAINT_UNIQUE")
        #expect(error.sql == "INSERT INTO t VALUES (?)")
        #expect(
            error.description
                == "SQLite error 2067 (SQLITE_CONSTRAINT_UNIQUE): UNIQUE constraint failed: t.id - while executing 'INSERT INTO t VALUES (?)'"
        )
        let matched: Bool
        switch error as any Error {
        case SQLiteError.constraint: matched = true
        default: matched = false
        }
        #expect(matched)
        let syntax = try #require(throws: SQLiteError.self) { try connection.makeStatement(sql: "SELEC 1") }
        #expect(syntax.message.contains("syntax error"))
        #expect(syntax.detailedDescription().contains("├─ SQL: SELEC 1"))
    }

    @Test func transactionsCommitOrRollBackAndSavepointsNest() throws {
        struct Failure: Error {}
        let connection = try Connection(path: ":memory:")
        try connection.execute(sql: "CREATE TABLE t (v INTEGER)")
        try connection.inTransaction(.immediate) {
            try connection.execute(sql: "INSERT INTO t VALUES (1)")
            #expect(connection.isInsideTransaction)
            try? connection.inSavepoint {
                try connection.execute(sql: "INSERT INTO t VALUES (2)")
                throw Failure()
            }
            try connection.inSavepoint { try connection.execute(sql: "INSERT INTO t VALUES (3)") }
        }
        #expect(throws: Failure.self) {
            try connection.inTransaction { () throws -> Void in
                try connection.execute(sql: "INSERT INTO t VALUES (4)")
                throw Failure()
            }
        }
        #expect(!connection.isInsideTransaction)
        #expect(try connection.rows(sql: "SELECT v FROM t ORDER BY v") == [[.integer(1)], [.integer(3)]])
    }

    /// SQL built from data must not grow the cache without bound; what is used often stays cached.
    @Test func theStatementCacheIsBoundedAndKeepsWhatIsUsed() throws {
        let connection = try Connection(path: ":memory:")
        let hot = try connection.cachedStatement(sql: "SELECT 0")
        for n in 1...(Connection.statementCacheLimit * 3) {
            let statement = try connection.cachedStatement(sql: "SELECT \(n)")
            #expect(try statement.step())
            #expect(statement.int64(at: 0) == Int64(n))
            if n.isMultiple(of: 50) { #expect(try connection.cachedStatement(sql: "SELECT 0") === hot) }
            #expect(connection.cachedStatementCount <= Connection.statementCacheLimit)
        }
        #expect(try connection.cachedStatement(sql: "SELECT 0") === hot)
        #expect(try hot.step())
    }

    @Test func cachedStatementsAreReusedAndTraceSeesEveryExecution() throws {
        let connection = try Connection(path: ":memory:")
        var traced: [String] = []
        connection.trace { traced.append($0) }
        let first = try connection.cachedStatement(sql: "SELECT 1")
        try first.execute()
        let second = try connection.cachedStatement(sql: "SELECT 1")
        try second.execute()
        #expect(first === second)
        #expect(traced == ["SELECT 1", "SELECT 1"])
        connection.trace(nil)
        try first.execute()
        #expect(traced.count == 2)
    }

    @Test func aProfileGetsEveryFinishedStatementWithItsTime() throws {
        let connection = try Connection(path: ":memory:")
        var started: [String] = []
        var finished: [(sql: String, nanoseconds: UInt64)] = []
        connection.trace(statements: { started.append($0) }, profile: { finished.append(($0, $1)) })
        try connection.execute(sql: "CREATE TABLE t (a)")
        let insert = try connection.cachedStatement(sql: "INSERT INTO t VALUES (?)")
        for value in 0..<3 {
            try insert.bind(Int64(value), at: 1)
            try insert.execute()
        }
        // A slow one: a recursive count to a million.
        _ = try connection.scalar(sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000) SELECT count(*) FROM n")
        #expect(started.count == 5)
        #expect(finished.map(\.sql) == started)
        #expect(finished.filter { $0.sql == "INSERT INTO t VALUES (?)" }.count == 3)
        #expect(finished.last!.nanoseconds > 1_000_000)  // well over a millisecond
        // Profile only, then nothing.
        connection.trace(statements: nil, profile: { finished.append(($0, $1)) })
        try connection.execute(sql: "SELECT 1")
        #expect(started.count == 5 && finished.count == 6)
        connection.trace(statements: nil, profile: nil)
        try connection.execute(sql: "SELECT 2")
        #expect(finished.count == 6)
    }

    /// With triggers off, a connection's statements fire none (another connection's still do); the trace reports each
    /// trigger program that runs, and each statement of its body, as SQLite writes them.
    @Test func triggersCanBeTurnedOffPerConnectionAndTheTraceNamesThem() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("triggers-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let connection = try Connection(path: path)
        try connection.execute(sql: "CREATE TABLE t (x INTEGER); CREATE TABLE log (x INTEGER)")
        try connection.execute(sql: "CREATE TRIGGER logged AFTER INSERT ON t BEGIN INSERT INTO log VALUES (NEW.x); END")
        var traced: [String] = []
        connection.trace { traced.append($0) }
        #expect(connection.firesTriggers)
        try connection.execute(sql: "INSERT INTO t VALUES (1)")
        #expect(traced == ["INSERT INTO t VALUES (1)", "-- TRIGGER logged", "-- INSERT INTO log VALUES (NEW.x)"])
        try connection.setTriggersEnabled(false)
        #expect(!connection.firesTriggers)
        try connection.execute(sql: "INSERT INTO t VALUES (2)")
        let other = try Connection(path: path)
        try other.execute(sql: "INSERT INTO t VALUES (3)")
        #expect(try connection.rows(sql: "SELECT x FROM log ORDER BY x") == [[.integer(1)], [.integer(3)]])
        try connection.setTriggersEnabled(true)
        try connection.execute(sql: "INSERT INTO t VALUES (4)")
        #expect(try connection.scalar(sql: "SELECT count(*) FROM log") == .integer(3))
        connection.trace(nil)
    }

    @Test func identifiersAreQuoted() {
        #expect(quoteIdentifier("a\"b") == "\"a\"\"b\"")
        #expect(SQLiteValue.text("it's").description == "'it''s'")
    }
}
