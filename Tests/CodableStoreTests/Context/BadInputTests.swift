import CodableStore
import Foundation
import Testing

@Suite struct BadInputTests {
    @Test func aFileThatIsNotADatabaseIsAClearErrorAndIsKept() throws {
        let path = TestStore.temporaryPath()
        let text = Data(repeating: UInt8(ascii: "x"), count: 4096)
        try text.write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: SQLiteError.self) {
            try Store(path: path, entities: TestStore.entities)
        }
        #expect(error.resultCode.primary == SQLiteError.notADatabase)
        #expect(error.description.contains("file is not a database"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == text)
    }

    @Test func aCorruptedFileIsAnErrorNotACrash() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: TestStore.entities)
            try store.write { context in
                for id in 0..<2_000 { try context.insert(Person(id: id, name: String(repeating: "n", count: 100))) }
            }
            _ = try store.withWriterConnection { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        // Overwrite pages in the middle of the file (after the header and schema).
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 8192)
        handle.write(Data(repeating: 0xA5, count: 16_384))
        try handle.close()
        let store = try? Store(path: path, entities: TestStore.entities)
        let error = try #require(throws: (any Error).self) {
            guard let store else { throw SQLiteError(resultCode: .SQLITE_CORRUPT, message: "open failed") }
            _ = try store.read { try $0.fetch(Person.self).map(\.name) }
        }
        let sqliteError = try #require(error as? SQLiteError)
        #expect(sqliteError.resultCode.primary == SQLiteError.corrupt)
    }

    @Test func aReadOnlyLocationIsAClearError() throws {
        guard getuid() != 0 else {
            // Root ignores permissions; use a path under a file instead, which no one can create.
            let blocker = TestStore.temporaryPath("blocker")
            _ = FileManager.default.createFile(atPath: blocker, contents: Data())
            let error = try #require(throws: SQLiteError.self) {
                try Store(path: blocker + "/store.sqlite", entities: TestStore.entities)
            }
            #expect(error.resultCode.primary == SQLiteError.cannotOpen)
            #expect(error.message.contains("cannot open"))
            return
        }
        let path = TestStore.temporaryPath()
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: directory)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory) }
        #expect(throws: SQLiteError.self) { try Store(path: path, entities: TestStore.entities) }
    }

    @Test func aReadOnlyFileIsAClearError() throws {
        let path = TestStore.temporaryPath()
        _ = try Store(path: path, entities: TestStore.entities)
        let error = try #require(throws: SQLiteError.self) {
            // A read-only URI: what SQLite also falls back to for files it cannot write.
            try Store(path: "file:\(path)?mode=ro", entities: TestStore.entities)
        }
        #expect(error.resultCode.primary == SQLiteError.readOnly)
        #expect(error.message.contains("read-only"))
    }

    @Test func aLockedDatabaseIsABusyErrorAndNothingIsLost() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(busyTimeout: 100))
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        let other = try RawDatabase(path)
        try other.execute("BEGIN EXCLUSIVE")
        let error = try #require(throws: StoreError.self) {
            try store.write { try $0.insert(Person(id: 2)) }
        }
        #expect(error.code == .storeBusy)
        #expect((error.cause as? SQLiteError)?.resultCode.primary == SQLiteError.busy)
        try other.execute("ROLLBACK")
        try store.write { try $0.insert(Person(id: 2)) }
        #expect(try RawDatabase(path).rows("SELECT id FROM Person ORDER BY id") == [["1"], ["2"]])
    }

    @Test func aDatabaseOfAnotherApplicationIsRefused() throws {
        let path = TestStore.temporaryPath()
        let raw = try Connection(path: path)
        try raw.execute(sql: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance REAL)")
        let error = try #require(throws: StoreError.self) { try Store(path: path, entities: TestStore.entities) }
        #expect(error.code == .schemaMismatch)
        #expect(error.message.contains("accounts"))
    }
}
