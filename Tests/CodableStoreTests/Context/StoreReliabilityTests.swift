import CodableStore
import Foundation
import Testing

/// An entity whose composite identity is reached through a key path, for null identities on the way.
@Entity final class OwnedRepository {
    var owner: String
    var name: String
    static let identity = Identity(\OwnedRepository.owner, \OwnedRepository.name)
    enum CodingKeys: String, EntityCodingKey {
        case owner = "owner.login"
        case name
    }
    init(owner: String, name: String) {
        self.owner = owner
        self.name = name
    }
}

/// Another writer, a full disk, a dropped identity index, a null identity: each says what happened.
@Suite struct StoreReliabilityTests {
    /// A store with one person, and a connection of "another process" holding its write lock.
    private func lockedStore(busyTimeout: Int32 = 200) throws -> (path: String, holder: RawDatabase) {
        let path = TestStore.temporaryPath()
        try Store(path: path, entities: TestStore.entities).write { try $0.insert(Person(id: 1, name: "Ada")) }
        let holder = try RawDatabase(path)
        try holder.execute("BEGIN IMMEDIATE TRANSACTION")
        return (path, holder)
    }

    /// A dump file with the given text.
    private func dump(_ text: String) throws -> ImportSource {
        let path = TestStore.temporaryPath("dump.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return .file(path)
    }

    @Test func aWriteWhileAnotherConnectionWritesSaysHowLongItWaited() throws {
        let (path, holder) = try lockedStore()
        defer { try? holder.execute("ROLLBACK") }
        // Opening does not wait: the model is current, and checking that is a read.
        let started = Date()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(busyTimeout: 250))
        #expect(Date().timeIntervalSince(started) < 0.2)
        #expect(try store.read { try $0.count(Person.self) } == 1)

        let writeStarted = Date()
        let error = try #require(throws: StoreError.self) {
            try store.write { try $0.insert(Person(id: 2)) }
        }
        #expect(Date().timeIntervalSince(writeStarted) >= 0.25)
        #expect(error.code == .storeBusy)
        #expect(
            error.message
                == "the store is being written by another process (or another Store of the same file); waited 0.25 s for it to finish. Wait longer with Store.Options.busyTimeout")
        #expect(!"\(error)".contains("BEGIN"))
        #expect((error.cause as? SQLiteError)?.resultCode.primary == .SQLITE_BUSY)
        #expect(throws: StoreError.self) { try store.scratch { _ in 0 } }

        // Once the other write ends, the same store writes.
        try holder.execute("COMMIT")
        try store.write { try $0.insert(Person(id: 2)) }
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Person") == "2")
    }

    @Test func creatingTheSchemaWhileAnotherConnectionWritesIsBusyToo() throws {
        let path = TestStore.temporaryPath()
        let holder = try Connection(path: path)
        _ = try holder.scalar(sql: "PRAGMA journal_mode = WAL")
        try holder.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        try holder.execute(sql: "CREATE TABLE other (x)")
        defer { try? holder.execute(sql: "ROLLBACK") }
        let error = try #require(throws: StoreError.self) {
            try Store(path: path, entities: TestStore.entities, options: .init(busyTimeout: 100))
        }
        #expect(error.code == .storeBusy)
        #expect(error.message.contains("waited 0.1 s"))
    }

    @Test(arguments: [false, true]) func anImportWhileAnotherConnectionWritesIsAStoreFailure(commitEveryBatch: Bool) throws {
        let (path, holder) = try lockedStore()
        defer { try? holder.execute("ROLLBACK") }
        let store = try Store(path: path, entities: TestStore.entities, options: .init(busyTimeout: 100))
        let error = try #require(throws: ImportError.self) {
            try store.importJSON(
                Person.self, from: try dump(#"[{"id": 3, "age": 1}]"#), options: .init(commitEveryBatch: commitEveryBatch))
        }
        #expect(error.isStoreFailure)
        #expect(error.recordIndex == nil)
        #expect((error.underlyingError as? StoreError)?.code == .storeBusy)
        #expect(
            error.description
                == "store: the store is being written by another process (or another Store of the same file); waited 0.1 s for it to finish. Wait longer with Store.Options.busyTimeout")
    }

    @Test func aFullStoreSaysSoWithoutItsSQL() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        // SQLite's own limit on the file's pages fails a write exactly as a full disk does (SQLITE_FULL).
        let pages = try store.withWriterConnection { try $0.scalar(sql: "PRAGMA page_count") }
        guard case .integer(let count)? = pages else { Testing.Issue.record("page_count: \(String(describing: pages))"); return }
        _ = try store.withWriterConnection { try $0.scalar(sql: "PRAGMA max_page_count = \(count + 3)") }
        let records = (1...3_000).map { #"{"id": \#($0), "name": "\#(String(repeating: "x", count: 200))", "age": 1}"# }
        let error = try #require(throws: ImportError.self) {
            try store.importJSON(Person.self, from: try dump("[" + records.joined(separator: ",") + "]"))
        }
        #expect(error.isStoreFailure)
        #expect(error.description == "store: database or disk is full (SQLite error 13, SQLITE_FULL)")
        #expect((error.underlyingError as? SQLiteError)?.sql?.contains("INSERT") == true)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Person") == "0")
        #expect(try RawDatabase(path).value("PRAGMA integrity_check") == "ok")
    }

    @Test func inputFailuresAreNotStoreFailures() throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        let syntax = try #require(throws: ImportError.self) { try store.importJSON(Person.self, from: try dump("[{")) }
        #expect(!syntax.isStoreFailure)
        #expect(syntax.description.hasPrefix("input (") || syntax.description.hasPrefix("record 0"), "\(syntax)")
        let decoding = try #require(throws: ImportError.self) {
            try store.importJSON(Person.self, from: try dump(#"[{"id": null}]"#))
        }
        #expect(!decoding.isStoreFailure)
        #expect(decoding.description == "record 0 (line 1, column 2, byte 1) at [0].id: Person at [0] has a null identity: 'id' is null")
    }

    // MARK: - The identity index

    @Test func aDroppedIdentityIndexIsRestoredAtOpen() throws {
        let path = TestStore.temporaryPath()
        try Store(path: path, entities: TestStore.entities).write { try $0.insert(Person(id: 1)) }
        let raw = try RawDatabase(path)
        try raw.execute("DROP INDEX Person_identity")
        try raw.execute("DROP INDEX Person_tags_target")
        // An index of the same name without its uniqueness is as good as none.
        try raw.execute("DROP INDEX Tag_identity")
        try raw.execute("CREATE INDEX Tag_identity ON Tag (id)")

        let store = try Store(path: path, entities: TestStore.entities)
        #expect(try raw.rows("SELECT name, \"unique\" FROM pragma_index_list('Person') WHERE name = 'Person_identity'") == [["Person_identity", "1"]])
        #expect(try raw.rows("SELECT name, \"unique\" FROM pragma_index_list('Tag') WHERE name = 'Tag_identity'") == [["Tag_identity", "1"]])
        #expect(try raw.rows("SELECT name FROM pragma_index_info('Person_identity')") == [["id"]])
        #expect(try raw.value("SELECT count(*) FROM sqlite_master WHERE name = 'Person_tags_target'") == "1")
        // Uniqueness holds again: a second row with the same identity is refused by SQLite itself.
        #expect(throws: (any Error).self) { try raw.execute("INSERT INTO Person (id, age) VALUES (1, 0)") }
        try store.write { try $0.insert(Person(id: 2)) }
    }

    @Test func aDroppedIdentityIndexOverDuplicatesIsAClearError() throws {
        let path = TestStore.temporaryPath()
        try Store(path: path, entities: TestStore.entities).write { try $0.insert(Person(id: 1)) }
        let raw = try RawDatabase(path)
        try raw.execute("DROP INDEX Person_identity")
        try raw.execute("INSERT INTO Person (id, age) VALUES (1, 5), (1, 6), (2, 0)")
        let error = try #require(throws: StoreError.self) { try Store(path: path, entities: TestStore.entities) }
        #expect(error.code == .schemaMismatch)
        #expect(
            error.message
                == "Person's unique index Person_identity is missing from the file and cannot be restored: Person holds rows with the same id, such as id = 1 (3 rows). Remove the duplicates, or open the store with schemaChangePolicy: .reset to recreate it")
        // The file is left as it was.
        #expect(try raw.value("SELECT count(*) FROM Person") == "4")
        #expect(try raw.value("SELECT count(*) FROM sqlite_master WHERE name = 'Person_identity'") == "0")
    }

    // MARK: - Null identities

    @Test func aNullIdentityKeyIsCalledNull() throws {
        let store = try Store.inMemory(entities: TestStore.entities + [OwnedRepository.self])
        let cases: [(String, String, [String])] = [
            (#"[{"id": 1}, {"id": null, "age": 1}]"#, "Person at [1] has a null identity: 'id' is null", ["Index 1", "id"]),
        ]
        for (json, message, path) in cases {
            let error = try #require(throws: StoreError.self) {
                try store.write { _ = try StoreDecoder().decode([Person].self, from: Data(json.utf8), into: $0) }
            }
            #expect(error.code == .missingIdentity)
            #expect(error.message == message)
            #expect(error.codingPath.map(\.stringValue) == path)
        }
        let keyPathCases: [(String, String, [String])] = [
            (#"{"owner": null, "name": "a"}"#, "OwnedRepository at <root> has a null identity: 'owner' is null", ["owner"]),
            (#"{"owner": {"login": null}, "name": "a"}"#, "OwnedRepository at <root> has a null identity: 'owner.login' is null", ["owner", "login"]),
            (#"{"owner": {"login": "x"}, "name": null}"#, "OwnedRepository at <root> has a null identity: 'name' is null", ["name"]),
            (#"{"owner": {}, "name": "a"}"#, "OwnedRepository at <root> has no identity: expected keys 'owner.login', 'name' but received keys 'owner', 'name'", []),
        ]
        for (json, message, path) in keyPathCases {
            let error = try #require(throws: StoreError.self) {
                try store.write { _ = try StoreDecoder().decode(OwnedRepository.self, from: Data(json.utf8), into: $0) }
            }
            #expect(error.message == message)
            #expect(error.codingPath.map(\.stringValue) == path)
        }
    }
}
