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

    // MARK: - Found by the sweeps

    /// A store of people with tags, closed, so that a store opened on it next starts with a cold page cache.
    private func storeOfTaggedPeople(_ vfs: FaultInjectingVFS) throws -> String {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(vfs: vfs.name))
        try store.write { context in
            let tags = (0..<10).map { Tag(id: $0, label: "tag \($0)") }
            for id in 1...50 {
                let person = Person(id: id, name: "person \(id)")
                try context.insert(person)
                person.tags = [tags[id % 10]]
            }
        }
        return path
    }

    /// After a read fails with an I/O error, SQLite rolls the whole transaction back. Reading whether a table is
    /// empty (to make an identity index) swallowed that error, so an import committing every batch wrote the
    /// batch statement by statement outside any transaction, then failed with "cannot commit - no transaction
    /// is active". The error now ends the batch, and names the I/O failure.
    @Test func aReadFailingWhileAnImportLooksUpIdentitiesEndsItWithThatError() throws {
        let vfs = FaultInjectingVFS()
        defer { vfs.unregister() }
        let path = try storeOfTaggedPeople(vfs)
        let dump = TestStore.temporaryPath("people.json")
        try Data(#"[{"id": 1, "name": "Ada"}, {"id": 51, "name": "Grace"}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        do {
            let store = try Store(path: path, entities: TestStore.entities, options: .init(vfs: vfs.name))
            vfs.arm(.init(.read, nth: 1))
            let error = try #require(throws: ImportError.self) {
                _ = try store.importJSON(Person.self, from: .file(dump), options: .init(commitEveryBatch: true))
            }
            vfs.disarm()
            let cause = try #require(error.underlyingError as? SQLiteError)
            #expect(cause.resultCode.name == "SQLITE_IOERR_READ")
            #expect(error.description.contains("SQLite error 266 (SQLITE_IOERR_READ): disk I/O error"))
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person WHERE id IN (1, 51)") == [["1", "person 1"]])
    }

    /// A write whose closure caught an I/O error and went on: SQLite rolled the transaction back under it, so the
    /// save must not write its changes one statement at a time outside it.
    @Test func aWriteThatCaughtAnIOErrorWritesNothingOutsideTheTransactionSQLiteRolledBack() throws {
        let vfs = FaultInjectingVFS()
        defer { vfs.unregister() }
        let path = try storeOfTaggedPeople(vfs)
        do {
            let store = try Store(path: path, entities: TestStore.entities, options: .init(vfs: vfs.name))
            let error = try #require(throws: SQLiteError.self) {
                try store.write { context in
                    vfs.arm(.init(.read, nth: 1))
                    #expect(throws: SQLiteError.self) { _ = try context.fetch(Person.self) }
                    vfs.disarm()
                    try context.insert(Person(id: 51, name: "Grace"))
                    try context.insert(Person(id: 52, name: "Linus"))
                }
            }
            #expect(error.resultCode == .SQLITE_ABORT_ROLLBACK)
            #expect(error.description.hasPrefix("SQLite error 516 (SQLITE_ABORT_ROLLBACK): the transaction was rolled back by SQLite after an earlier error"))
            // The store works on.
            try store.write { try $0.insert(Person(id: 53, name: "Barbara")) }
        }
        #expect(try RawDatabase(path).rows("SELECT id FROM Person WHERE id > 50") == [["53"]])
    }

    /// Each relationship that failed to load wrapped the failure of the one before it, so a failing disk made
    /// the error of a save as deep as the number of relationships read (the description of a deep enough one
    /// overflows the stack). The first failure is the one thrown, once.
    @Test func relationshipsThatFailToLoadThrowTheFirstFailureOnce() throws {
        let vfs = FaultInjectingVFS()
        defer { vfs.unregister() }
        let path = try storeOfTaggedPeople(vfs)
        do {
            let store = try Store(path: path, entities: TestStore.entities, options: .init(vfs: vfs.name))
            let error = try #require(throws: StoreError.self) {
                try store.write { context in
                    let people = try context.fetch(Person.self)
                    vfs.arm(.init(.read, nth: 1, persistent: true))
                    #expect(people.allSatisfy { $0.tags.isEmpty })  // each load fails; the error waits for the save
                    vfs.disarm()
                }
            }
            #expect(error.code == .relationshipLoad)
            let cause = try #require(error.cause as? SQLiteError)
            #expect(cause.resultCode.name == "SQLITE_IOERR_READ")
            #expect(
                error.description.hasPrefix(
                    "StoreError.relationshipLoad: Person.tags could not be loaded (cause: SQLite error 266 (SQLITE_IOERR_READ): disk I/O error"))
        }
    }
}
