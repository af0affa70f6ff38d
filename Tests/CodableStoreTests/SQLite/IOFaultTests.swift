import CSQLite
import CodableStore
import Foundation
import Testing

/// Faults inside SQLite's I/O, injected by a VFS of the tests' own (``FaultInjectingVFS``) that a store opens
/// with ``Store/Options/vfs``.
@Suite struct IOFaultTests {
    // MARK: - The VFS option

    @Test func everyConnectionOfAStoreOpensWithTheNamedVFS() throws {
        let vfs = FaultInjectingVFS()
        defer { vfs.unregister() }
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: TestStore.entities, options: .init(vfs: vfs.name))
            let opened = vfs.counts
            #expect(opened.total(.write, .wal) > 0)  // the schema, written by the writer connection
            try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
            let written = vfs.counts
            #expect((written - opened).total(.write, .wal) > 0)
            // A reader connection (a new one, with an empty cache) reads the pages through the VFS too.
            let name = try store.read { try $0.object(Person.self, identity: 1)?.name }
            #expect(name == "Ada")
            #expect((vfs.counts - written).total(.read) > 0)
            #expect((vfs.counts - written).total(.write) == 0)
        }
        #expect(try RawDatabase(path).value("SELECT name FROM Person") == "Ada")
    }

    @Test func aVFSThatIsNotRegisteredIsAnErrorNamingIt() throws {
        let path = TestStore.temporaryPath()
        let error = try #require(throws: SQLiteError.self) {
            _ = try Store(path: path, entities: TestStore.entities, options: .init(vfs: "no-such-vfs"))
        }
        #expect(error.resultCode == .SQLITE_ERROR)
        #expect(error.message == "no such vfs: no-such-vfs: cannot open '\(path)'")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func anArmedFaultFailsTheChosenCallWithItsResultCode() throws {
        let vfs = FaultInjectingVFS()
        defer { vfs.unregister() }
        let path = TestStore.temporaryPath()
        do {
            let connection = try Connection(path: path, vfs: vfs.name)
            #expect(connection.vfs == vfs.name)
            try connection.execute(sql: "CREATE TABLE t (a)")
            vfs.arm(.init(.write, nth: 1, resultCode: SQLITE_FULL))
            let full = try #require(throws: SQLiteError.self) { try connection.execute(sql: "INSERT INTO t VALUES (1)") }
            #expect(full.resultCode.primary == .SQLITE_FULL)
            #expect(full.message == "database or disk is full")
            #expect(vfs.injected == 1)
            // One-shot: the next write goes through.
            try connection.execute(sql: "INSERT INTO t VALUES (2)")
            vfs.arm(.init(.sync, nth: 1, persistent: true))
            let sync = try #require(throws: SQLiteError.self) { try connection.execute(sql: "INSERT INTO t VALUES (3)") }
            #expect(sync.resultCode.name == "SQLITE_IOERR_FSYNC")
            #expect(sync.message == "disk I/O error")
            #expect(throws: SQLiteError.self) { try connection.execute(sql: "INSERT INTO t VALUES (4)") }
            vfs.disarm()
            try connection.execute(sql: "INSERT INTO t VALUES (5)")
        }
        #expect(try RawDatabase(path).rows("SELECT a FROM t") == [["2"], ["5"]])
    }
}
