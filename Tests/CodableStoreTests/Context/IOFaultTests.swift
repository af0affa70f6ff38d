import CSQLite
import CodableStore
import Foundation
import IssuesModel
import Testing

/// Faults inside SQLite's I/O: a read, write, sync or truncation that fails at a chosen call during a save or
/// an import (and while the store closes, which checkpoints the -wal file) ends in a clear error, or in
/// success when the call did not matter, and leaves a file that passes `integrity_check` with exactly the
/// old or the new contents (with committed batches, a prefix of whole batches), and a store that works on.
/// See ``FaultSweep`` for what is checked after each fault.
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
            #expect(error.description == "store: disk I/O error (SQLite error 266, SQLITE_IOERR_READ)")
            #expect(error.isStoreFailure)
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
    /// the error of a save as deep as the number of relationships read (50 here). The first failure is the one
    /// thrown, once.
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

    // MARK: - Sweeps

    @Test func aSaveOfManyChangesSurvivesAFaultAtAnyIOCall() throws {
        try sweep(Self.save())
    }

    @Test func anImportInOneTransactionSurvivesAFaultAtAnyIOCall() throws {
        try sweep(Self.importScenario(commitEveryBatch: false))
    }

    @Test func anImportCommittingEveryBatchKeepsWholeBatchesThroughAFaultAtAnyIOCall() throws {
        try sweep(Self.importScenario(commitEveryBatch: true))
    }

    private func sweep(_ scenario: FaultScenario) throws {
        let sweep = try FaultSweep(scenario)
        let counts = sweep.operationCounts
        // The operation writes and reads both files, and its commits checkpoint: faults reach all of it.
        for operation in [FaultInjectingVFS.Operation.read, .write] {
            #expect(counts.total(operation, .main) > 0, "\(scenario.name): \(counts)")
            #expect(counts.total(operation, .wal) > 0, "\(scenario.name): \(counts)")
        }
        #expect(counts.total(.sync, .main) > 0, "\(scenario.name): \(counts)")
        #expect(sweep.closeCounts.total(.write, .main) > 0, "\(scenario.name), closing: \(sweep.closeCounts)")

        let operation = try sweep.sweepOperation(FaultSweep.faults(for: counts, spread: 16))
        let closing = try sweep.sweepClose(FaultSweep.faults(for: sweep.closeCounts, spread: 5))
        // Faults that fail the operation, and faults it rides out (a failed checkpoint after its commit).
        #expect(operation.failed > 0 && operation.failed < operation.injected, "\(scenario.name): \(operation)")
        #expect(closing.injected == closing.faults, "\(scenario.name), closing: \(closing)")
        if ProcessInfo.processInfo.environment["CODABLE_STORE_FAULT_SUMMARY"] != nil {
            print("\(scenario.name): operation: \(counts) -> \(operation); closing: \(sweep.closeCounts) -> \(closing)")
        }
    }

    // MARK: - Scenarios

    /// A write with many changes: updates, relinks, deletes (nullifying the deleted people's attributes) and
    /// inserts with relationships, over 200 people.
    static func save() -> FaultScenario {
        FaultScenario(
            name: "save",
            entities: TestStore.entities,
            prepare: { store in
                try store.write { context in
                    let countries = (0..<5).map { Country(code: "C\($0)", name: "Country \($0)") }
                    let tags = (0..<10).map { Tag(id: $0, label: "tag \($0)") }
                    for id in 1...200 {
                        let person = Person(id: id, name: "person \(id)", age: id % 90)
                        try context.insert(person)
                        person.country = countries[id % 5]
                        person.tags = [tags[id % 10], tags[(id * 7) % 10]]
                        person.attributes = [PersonAttribute(key: "a", value: "\(id)"), PersonAttribute(key: "b", value: "x")]
                    }
                }
            },
            prepareInWAL: { store in
                try store.write { context in
                    for person in try context.fetch(Person.self, where: \.id <= 30) { person.age += 1 }
                }
            },
            walAutocheckpoint: 8,
            operation: { store, _ in
                try store.write { context in
                    let tags = try context.fetch(Tag.self)
                    // Only the people stored before: the operation, run again, changes nothing.
                    for person in try context.fetch(Person.self, where: \.id <= 200) {
                        if person.id % 10 == 0 {
                            try context.delete(person)
                        } else if person.id % 3 == 0 {
                            person.name = "renamed \(person.id)"
                            person.tags = [tags[person.id % tags.count]]
                        }
                    }
                    for id in 201...300 where try context.object(Person.self, identity: id) == nil {
                        let person = Person(id: id, name: "new \(id)", age: id % 90)
                        try context.insert(person)
                        person.country = try context.object(Country.self, identity: "C\(id % 5)")
                        person.tags = [tags[id % tags.count]]
                        person.attributes = [PersonAttribute(key: "n", value: "\(id)")]
                    }
                }
            })
    }

    /// 160 issues (with users and labels, some repeated) in 4 batches of 40 over 80 stored ones: updates and
    /// inserts. Committing every batch, each commit checkpoints.
    static func importScenario(commitEveryBatch: Bool) throws -> FaultScenario {
        let oldDump = try issueDump(seed: 3, count: 80)
        let newDump = try issueDump(seed: 7, count: 160)
        var options = ImportTests.options(batchSize: 40)
        options.commitEveryBatch = commitEveryBatch
        return FaultScenario(
            name: commitEveryBatch ? "import committing every batch" : "import",
            entities: issueEntities,
            prepare: { store in
                _ = try store.importJSON(GitIssue.self, from: .file(oldDump), options: ImportTests.options(batchSize: 100))
            },
            prepareInWAL: { store in
                try store.write { context in
                    for issue in try context.fetch(GitIssue.self, where: \.id <= 20) { issue.title = "edited \(issue.id)" }
                }
            },
            walAutocheckpoint: 8,
            operation: { store, committed in
                var options = options
                if let committed { options.progress = { _ in committed() } }
                _ = try store.importJSON(GitIssue.self, from: .file(newDump), options: options)
            })
    }

    private static func issueDump(seed: UInt64, count: Int) throws -> String {
        var generator = IssueDumpGenerator(seed: seed, duplicateFraction: 0.1)
        var bytes: [UInt8] = []
        generator.writeArray(count: count) { bytes += $0 }
        let path = TestStore.temporaryPath("dump-\(seed).json")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
