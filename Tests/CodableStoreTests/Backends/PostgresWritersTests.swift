import CodableStore
import CodableStorePostgres
import Foundation
import Testing

/// Writers of several processes in one PostgreSQL store at once (each a store of its own, as another process's would
/// be): row ids from the server, an identity both insert, a deadlock. Needs the server of `Scripts/with-postgres`.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs CODABLESTORE_POSTGRES_URL (Scripts/with-postgres)"))
struct PostgresWritersTests {
    private let entities: [any EntityObject.Type] = [Person.self, Country.self, Tag.self, PersonAttribute.self]

    private func decode(_ json: String, into context: Context) throws {
        _ = try StoreDecoder().decode([Person].self, from: Data(json.utf8), into: context)
    }

    /// Runs `body` on a thread of its own; the returned closure waits for it and rethrows its error.
    private func onThread(_ body: @escaping @Sendable () throws -> Void) -> () throws -> Void {
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Thread {
            do { try body() } catch { failure.withLock { $0 = error } }
            done.signal()
        }.start()
        return {
            done.wait()
            if let error = failure.withLock({ $0 }) { throw error }
        }
    }

    /// Writes `json` into `store` on a thread of its own and holds the transaction open, uncommitted, for `seconds`;
    /// returns once the rows are written (the returned closure waits for the commit and rethrows its error).
    private func holdingUncommitted(_ json: String, in store: Store, seconds: Double) throws -> () throws -> Void {
        let saved = DispatchSemaphore(value: 0)
        let done = onThread {
            do {
                try store.write { context in
                    try decode(json, into: context)
                    try context.save()
                    saved.signal()
                    Thread.sleep(forTimeInterval: seconds)
                }
            } catch {
                saved.signal()  // a write that failed before it saved: the caller goes on, and the closure throws it
                throw error
            }
        }
        saved.wait()
        return done
    }

    @Test func writersTakeRowIDsFromTheServerInBlocks() throws {
        let first = try Backend.postgres.makeStore(entities: entities)
        let second = try Backend.postgres.reopen(first, entities: entities)
        // Each store's writer reserves a block of its own: the rows of two writers never share a row id, and one
        // writer's next write goes on in its block.
        try first.write { try decode(#"[{"id": 1}]"#, into: $0) }
        try second.write { try decode(#"[{"id": 2}]"#, into: $0) }
        try first.write { try decode(#"[{"id": 3}]"#, into: $0) }
        let rows = try storedRows(first, #"SELECT "id", "_pk" FROM "Person" ORDER BY "id""#)
        #expect(rows == [["1", "1"], ["2", "1025"], ["3", "2"]])
        // The sequence is the column's identity, stepping by a block.
        #expect(
            try storedRows(first, #"SELECT attidentity FROM pg_attribute WHERE attrelid = '"Person"'::regclass AND attname = '_pk'"#)
                == [["d"]])
    }

    @Test func aStoreCreatedBeforeRowIDSequencesGetsThemAfterItsRows() throws {
        let store = try Backend.postgres.makeStore(entities: entities)
        try store.write { try decode(#"[{"id": 1}, {"id": 2}]"#, into: $0) }
        // As the table of an older version was: a plain bigint key, with a row far along.
        _ = try storedRows(store, #"ALTER TABLE "Person" ALTER COLUMN "_pk" DROP IDENTITY"#)
        _ = try storedRows(store, #"INSERT INTO "Person" ("_pk", "id", "age") VALUES (5000, 99, 0)"#)
        let reopened = try Backend.postgres.reopen(store, entities: entities)
        try reopened.write { try decode(#"[{"id": 3}]"#, into: $0) }
        #expect(try storedRows(store, #"SELECT "_pk" FROM "Person" WHERE "id" = 3"#) == [["5001"]])
    }

    /// Two writers insert the same identity at once: the second one's insert waits for the first's commit, fails, and
    /// the second write runs again alone, binding its object to the row the first committed.
    @Test func anIdentityBothInsertAtOnceIsOneRowAndTheSecondWriteUpdatesIt() throws {
        let first = try Backend.postgres.makeStore(entities: entities)
        let second = try Backend.postgres.reopen(first, entities: entities)
        let firstSaved = DispatchSemaphore(value: 0)
        let secondLookedUp = DispatchSemaphore(value: 0)
        let secondAttempts = Locked(0)
        let firstDone = onThread {
            try first.write { context in
                try decode(#"[{"id": 7, "name": "first", "tags": [{"id": 1, "label": "one"}]}]"#, into: context)
                try context.save()
                firstSaved.signal()
                // Commits once the second write has looked 7 up and not found it.
                secondLookedUp.wait()
            }
        }
        firstSaved.wait()
        try second.write { context in
            let attempt = secondAttempts.withLock { count in
                count += 1
                return count
            }
            try decode(#"[{"id": 7, "name": "second", "tags": [{"id": 2, "label": "two"}]}]"#, into: context)
            if attempt == 1 { secondLookedUp.signal() }
        }
        try firstDone()
        #expect(secondAttempts.withLock { $0 } == 2)
        #expect(try storedRows(first, #"SELECT "id", "name" FROM "Person""#) == [["7", "second"]])
        // The second write's links replaced the first's.
        #expect(
            try storedRows(
                first, #"SELECT t."id" FROM "Tag" t JOIN "Person_tags" j ON j."target" = t."_pk" ORDER BY t."id""#) == [["2"]])
        #expect(try storedRows(first, #"SELECT "id" FROM "Tag" ORDER BY "id""#) == [["1"], ["2"]])
    }

    /// Two writers that update the same two rows in opposite orders deadlock; the server ends one, and that write runs
    /// again after the other, so both commit.
    @Test func aDeadlockedWriteRunsAgainAndBothCommit() throws {
        let first = try Backend.postgres.makeStore(entities: entities)
        try first.write { try decode(#"[{"id": 1, "name": "-"}, {"id": 2, "name": "-"}]"#, into: $0) }
        let second = try Backend.postgres.reopen(first, entities: entities)
        let (firstHolds, secondHolds) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let attempts = Locked([0, 0])
        @Sendable func rename(_ store: Store, _ writer: Int, first one: Int, then other: Int) throws {
            try store.write { context in
                let attempt = attempts.withLock { counts in
                    counts[writer] += 1
                    return counts[writer]
                }
                let people = Dictionary(uniqueKeysWithValues: try context.fetch(Person.self).map { ($0.id, $0) })
                people[one]!.name = "writer \(writer)"
                try context.save()
                if attempt == 1 {
                    // Each holds its first row, then waits for the other's.
                    (writer == 0 ? firstHolds : secondHolds).signal()
                    (writer == 0 ? secondHolds : firstHolds).wait()
                }
                people[other]!.name = "writer \(writer)"
            }
        }
        let firstDone = onThread { try rename(first, 0, first: 1, then: 2) }
        try rename(second, 1, first: 2, then: 1)
        try firstDone()
        // One of them ran twice; the one that ran again committed last, so both rows have its name.
        let counts = attempts.withLock { $0 }
        #expect(counts.sorted() == [1, 2])
        let last = counts[0] == 2 ? 0 : 1
        #expect(
            try storedRows(first, #"SELECT "name" FROM "Person" ORDER BY "id""#) == [["writer \(last)"], ["writer \(last)"]])
    }

    /// A write whose identity still conflicts on every attempt (the caller inserted an object that is stored) ends
    /// with the identity conflict, after the attempts the options allow.
    @Test func anIdentityConflictOfTheCallersOwnIsThrownAfterTheLastAttempt() throws {
        let store = try Backend.postgres.makeStore(entities: entities, options: Store.Options(maximumWriteAttempts: 3))
        try store.write { try $0.insert(Person(id: 1)) }
        let attempts = Locked(0)
        let error = try #require(throws: StoreError.self) {
            try store.write { context in
                attempts.withLock { $0 += 1 }
                try context.insert(Person(id: 1))
            }
        }
        #expect(error.code == .identityConflict)
        #expect(attempts.withLock { $0 } == 3)
    }

    /// An import from a descriptor cannot run again from its start: meeting another writer's transaction, it says so
    /// (not as an identity conflict of the caller's own), and stores nothing.
    @Test func anImportFromADescriptorThatMeetsAnotherWriterSaysSo() throws {
        let first = try Backend.postgres.makeStore(entities: entities)
        let second = try Backend.postgres.reopen(first, entities: entities)
        let path = TestStore.temporaryPath() + ".json"
        try Data(#"[{"id": 7, "name": "imported"}]"#.utf8).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        // The import looks 7 up meanwhile (not committed: not found), and its insert waits for this commit.
        let firstDone = try holdingUncommitted(#"[{"id": 7, "name": "written"}]"#, in: first, seconds: 1)
        let error = try #require(throws: ImportError.self) {
            try second.importJSON(Person.self, from: .fileDescriptor(descriptor))
        }
        try firstDone()
        #expect(error.reason.hasPrefix("another writer's transaction met this import's, which was rolled back (Person with identity id = 7"), "\(error)")
        #expect(error.isStoreFailure)
        #expect((error.underlyingError as? StoreError)?.code == .writeConflict)
        #expect(try storedRows(first, #"SELECT "id", "name" FROM "Person""#) == [["7", "written"]])
    }

    /// An import meets an identity another writer inserted and has not committed yet: it waits for that writer for as
    /// long as it runs (here 1.5 s, the busy timeout 0.2 s), then runs again and binds the record to the row that writer
    /// committed. A write of the store's own still gives up after the busy timeout.
    @Test func anImportWaitsForAnotherWritersUncommittedIdentityBeyondTheBusyTimeout() throws {
        var options = Store.Options()
        options.busyTimeout = 200
        let importing = try Backend.postgres.makeStore(entities: entities, options: options)
        let other = try Backend.postgres.reopen(importing, entities: entities, options: options)
        let holding = try holdingUncommitted(#"[{"id": 7, "name": "other"}]"#, in: other, seconds: 1.5)
        let start = ContinuousClock.now
        // A plain write meets the same row, and is told the store is busy after 0.2 s.
        #expect {
            try importing.write { try decode(#"[{"id": 7, "name": "written"}]"#, into: $0) }
        } throws: { ($0 as? StoreError)?.code == .storeBusy }
        let dump = FileManager.default.temporaryDirectory.appendingPathComponent("people-\(UUID().uuidString).json").path
        try Data(#"[{"id": 7, "name": "imported"}, {"id": 8}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        let report = try importing.importJSON(Person.self, from: .file(dump))
        let waited = ContinuousClock.now - start
        try holding()
        #expect(waited >= .milliseconds(1_000))
        #expect(report.retries == 1)
        #expect(report.entities["Person"]?.updated == 1)
        #expect(report.entities["Person"]?.inserted == 1)
        #expect(try storedRows(importing, #"SELECT "id", "name" FROM "Person" ORDER BY "id""#) == [["7", "imported"], ["8", "NULL"]])
    }
}
