import CodableStore
import CodableStoreSQLite
import Foundation
import IssuesModel
import Testing

/// `ImportOptions.exclusiveAccess`: the import takes the store for itself (a rollback journal instead of the WAL) when
/// nobody else has it open, keeps everyone else out while it runs, and leaves the store in WAL mode.
@Suite struct ExclusiveImportTests {
    static func options(exclusive: Bool, batchSize: Int = 50) -> ImportOptions {
        var options = ImportTests.options(batchSize: batchSize)
        options.exclusiveAccess = exclusive
        return options
    }

    /// The journal mode the file is in, as a new connection finds it.
    static func journalMode(_ path: String) throws -> String {
        try RawDatabase(path).value("PRAGMA journal_mode")
    }

    /// What a connection of its own reads of the store's issues, without waiting for a lock: the count, or the
    /// result code it failed with.
    static func readOutside(_ path: String) -> String {
        do {
            let connection = try Connection(path: path, mode: .readOnly, busyTimeout: 0)
            return "\(try connection.scalar(sql: "SELECT count(*) FROM GitIssue")?.description ?? "nil")"
        } catch let error as SQLiteError {
            return error.resultCode.name
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [false, true])
    func anExclusiveImportStoresTheSameRowsAndLeavesTheStoreInWALMode(commitEveryBatch: Bool) throws {
        let dump = try ImportTests.dump(count: 400, duplicates: 0.3)
        var contents: [[[String]]] = []
        for exclusive in [false, true] {
            let path = TestStore.temporaryPath()
            let store = try Store(path: path, entities: issueEntities)
            var options = Self.options(exclusive: exclusive)
            options.commitEveryBatch = commitEveryBatch
            let first = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
            let again = try store.importJSON(GitIssue.self, from: .file(dump), options: options)  // every row stored
            #expect(first.exclusiveAccess == (exclusive ? true : nil))
            #expect(again.exclusiveAccess == (exclusive ? true : nil))
            #expect(first.summary.contains("held exclusively") == exclusive)
            #expect(again.entities["GitIssue"]?.inserted == 0)
            contents.append(try ImportTests.contents(path))
            #expect(try Self.journalMode(path) == "wal")
            #expect(!FileManager.default.fileExists(atPath: path + "-journal"))
            // The store goes on as before: its readers read what is stored.
            let stored = try RawDatabase(path).value("SELECT count(*) FROM GitIssue")
            #expect(try store.read { context in try context.fetch(GitIssue.self).count } == Int(stored))
        }
        #expect(contents[1] == contents[0])
        #expect(contents[0].count > 400)
    }

    /// While an exclusive import runs, another connection can read nothing (not even the rows committed before);
    /// during an import in WAL mode, it reads the store as it was before the import.
    @Test func nobodyElseReadsTheStoreDuringAnExclusiveImport() throws {
        let dump = try ImportTests.dump(count: 300)
        for exclusive in [false, true] {
            let path = TestStore.temporaryPath()
            let store = try Store(path: path, entities: issueEntities, options: .init(busyTimeout: 20))
            _ = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 10)), options: Self.options(exclusive: false))
            let before = try RawDatabase(path).value("SELECT count(*) FROM GitIssue")
            let outside = Locked<[String]>([])
            let storeReads = Locked<[String]>([])
            var options = Self.options(exclusive: exclusive, batchSize: 40)
            options.progress = { _ in
                outside.withLock { $0.append(Self.readOutside(path)) }
                let read = Result { try store.read { context in try context.fetch(GitIssue.self).count } }
                storeReads.withLock { $0.append((try? read.get()).map(String.init) ?? "failed") }
            }
            let report = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
            #expect(report.recordsImported == 300)
            let seen = outside.withLock { $0 }
            #expect(seen.count >= 7)
            if exclusive {
                #expect(Set(seen) == ["SQLITE_BUSY"])
                #expect(Set(storeReads.withLock { $0 }) == ["failed"])
            } else {
                // The last progress report comes once the import has committed.
                #expect(Set(seen.dropLast()) == [before])
                #expect(Set(storeReads.withLock { $0 }.dropLast()) == [before])
            }
            #expect(Self.readOutside(path) == (try RawDatabase(path).value("SELECT count(*) FROM GitIssue")))
            #expect(Self.readOutside(path) != before)
        }
    }

    /// Another connection that has the store open keeps the import in WAL mode, without waiting for it; the store's own
    /// readers, idle between reads, do not.
    @Test func anotherOpenConnectionKeepsTheImportInWALMode() throws {
        let dump = try ImportTests.dump(count: 200)
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        #expect(try store.read { context in try context.fetch(GitIssue.self).count } == 0)  // a reader now in the pool
        var stored = ""
        do {
            let other = try RawDatabase(path)
            #expect(try other.value("SELECT count(*) FROM GitIssue") == "0")
            let refused = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(exclusive: true))
            #expect(refused.exclusiveAccess == false)
            #expect(refused.summary.contains("exclusive access not granted"))
            #expect(refused.recordsImported == 200)
            stored = try other.value("SELECT count(*) FROM GitIssue")
            #expect(stored != "0")
            #expect(try Self.journalMode(path) == "wal")
        }
        // Once the other connection is closed, it is granted, though the store's reader was used in between.
        #expect(try store.read { context in try context.fetch(GitIssue.self).count } == Int(stored))
        let granted = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(exclusive: true))
        #expect(granted.exclusiveAccess == true)
        #expect(granted.entities["GitIssue"]?.inserted == 0)
    }

    /// A failed exclusive import rolls back as any other, and leaves the store in WAL mode, open to everyone.
    @Test func aFailedExclusiveImportLeavesTheStoreAsItWas() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        _ = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 50)), options: Self.options(exclusive: false))
        let before = try ImportTests.contents(path)
        let broken = try ImportTests.dumpWithASyntaxError(after: 300)
        #expect(throws: ImportError.self) {
            try store.importJSON(GitIssue.self, from: .file(broken), options: Self.options(exclusive: true))
        }
        #expect(try ImportTests.contents(path) == before)
        #expect(try Self.journalMode(path) == "wal")
        #expect(Self.readOutside(path) == before.count { $0.count == 8 }.description)
        #expect(!FileManager.default.fileExists(atPath: path + "-journal"))
    }

    /// An in-memory store has nobody to exclude: the import runs as usual and says it was not granted.
    @Test func anInMemoryStoreIsNotHeldExclusively() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let report = try store.importJSON(
            GitIssue.self, from: .file(try ImportTests.dump(count: 30)), options: Self.options(exclusive: true))
        #expect(report.exclusiveAccess == false)
        #expect(try store.read { context in try context.fetch(GitIssue.self).count } > 20)
    }
}
