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

    @Test func identifiersAreQuoted() {
        #expect(quoteIdentifier("a\"b") == "\"a\"\"b\"")
        #expect(SQLiteValue.text("it's").description == "'it''s'")
    }
}
