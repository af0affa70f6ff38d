import CodableStore
import CodableStorePostgres
import Foundation
import Testing

/// An import that may hold its tables alone (`ImportOptions.exclusiveAccess`), in one transaction into empty PostgreSQL
/// tables, drops their foreign keys and non-unique indexes and makes them again once its rows are in (`LoadDeferral`):
/// one check per key instead of one per row, one sorted build per index. Needs the server of `Scripts/with-postgres`.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs CODABLESTORE_POSTGRES_URL (Scripts/with-postgres)"))
struct PostgresBulkLoadTests {
    private let entities = ImportForeignKeyTests.entities
    private let alone = ImportOptions(exclusiveAccess: true)

    /// A store that records the SQL its connections run.
    private func observedStore() throws -> (Store, Locked<[String]>) {
        let statements = Locked<[String]>([])
        var options = Store.Options()
        options.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        return (try Backend.postgres.makeStore(entities: entities, options: options), statements)
    }

    /// The foreign keys of the store's tables, as the server describes them, and whether each was checked.
    private func foreignKeys(_ store: Store) throws -> [[String]] {
        try storedRows(
            store,
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), convalidated::int FROM pg_constraint "
                + "WHERE contype = 'f' AND connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                + "ORDER BY 1, 2")
    }

    private func books(_ store: Store) throws -> [[String]] {
        try storedRows(store, #"SELECT b.id, b.title, s.id FROM "RefBook" b LEFT JOIN "RefShelf" s ON s._pk = b.shelf ORDER BY b.id"#)
    }

    private func links(_ store: Store) throws -> [[String]] {
        try storedRows(store, """
            SELECT b.id, g.id FROM "RefBook_genres" j JOIN "RefBook" b ON b._pk = j.source JOIN "RefGenre" g ON g._pk = j.target
            ORDER BY 1, 2
            """)
    }

    private static let dump = #"""
        [{"id":100,"title":"a","shelf":{"id":1},"genres":[{"id":10},{"id":11}]},
         {"id":101,"title":"b","shelf":{"id":2},"genres":[10]},
         {"id":102,"title":"c","shelf":1,"genres":[11]}]
        """#

    @Test func anImportIntoEmptyTablesAddsTheirForeignKeysBackOnceItsRowsAreIn() throws {
        let (store, statements) = try observedStore()
        let declared = try foreignKeys(store)
        #expect(declared.count == 3)  // the book's shelf, and the join table's two columns
        #expect(declared.allSatisfy { $0[3] == "1" })
        statements.withLock { $0.removeAll() }
        let report = try store.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(Self.dump)), options: alone)
        #expect(report.recordsRead == 3)
        #expect(report.exclusiveAccess == true)
        let run = statements.withLock { $0 }
        #expect(run.contains { $0.hasPrefix(#"ALTER TABLE "RefBook" DROP CONSTRAINT"#) })
        #expect(run.contains { $0.hasPrefix(#"ALTER TABLE "RefBook_genres" DROP CONSTRAINT"#) })
        #expect(run.filter { $0.contains("ADD CONSTRAINT") }.count == 2)
        // The same keys, with the same names and definitions, checked.
        #expect(try foreignKeys(store) == declared)
        #expect(try books(store) == [["100", "a", "1"], ["101", "b", "2"], ["102", "c", "1"]])
        #expect(try links(store) == [["100", "10"], ["100", "11"], ["101", "10"], ["102", "11"]])
        // The keys act again: deleting a shelf clears the books' references to it (ON DELETE SET NULL).
        try store.write { context in try context.delete(try #require(try context.object(RefShelf.self, identity: 1))) }
        #expect(try books(store) == [["100", "a", "NULL"], ["101", "b", "2"], ["102", "c", "NULL"]])
    }

    /// Rows the import deletes while the keys are away: the import clears what refers to them itself, as the keys'
    /// ON DELETE actions would, and the store ends as the same import leaves a SQLite store (checked the same way).
    @Test func rowsDeletedDuringTheLoadLeaveNothingReferringToThem() throws {
        let dump = try ImportForeignKeyTests.dump(#"""
            [{"id":100,"title":"a","shelf":{"id":1},"genres":[{"id":10},{"id":11}]},
             {"id":101,"title":"b","shelf":{"id":2},"genres":[{"id":12}]},
             {"id":102,"title":"c","dropShelf":1,"dropGenre":10},
             {"id":103,"title":"d","shelf":2,"genres":[11, 12],"dropGenre":12}]
            """#)
        let (postgres, statements) = try observedStore()
        _ = try postgres.importJSON(RefBook.self, from: .file(dump), options: alone)
        #expect(statements.withLock { $0 }.contains { $0.contains("DROP CONSTRAINT") })
        let sqlite = try Backend.sqlite.makeStore(entities: entities)
        _ = try sqlite.importJSON(RefBook.self, from: .file(dump), options: alone)
        #expect(try books(postgres) == [["100", "a", "NULL"], ["101", "b", "2"], ["102", "c", "NULL"], ["103", "d", "2"]])
        #expect(try books(postgres) == books(sqlite))
        #expect(try links(postgres) == [["100", "11"], ["103", "11"]])
        #expect(try links(postgres) == links(sqlite))
        #expect(try storedRows(postgres, #"SELECT id FROM "RefGenre" ORDER BY id"#) == [["11"]])
        #expect(try foreignKeys(postgres).allSatisfy { $0[3] == "1" })
    }

    /// Without asking, an import never keeps others out of its tables: it checks its keys row by row, beside them.
    @Test func anImportThatDoesNotAskLeavesTheKeysInPlace() throws {
        let (store, statements) = try observedStore()
        statements.withLock { $0.removeAll() }  // the schema's creation alters tables too
        let report = try store.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(Self.dump)))
        #expect(report.exclusiveAccess == nil)
        #expect(!statements.withLock { $0 }.contains { $0.hasPrefix("LOCK TABLE") || $0.hasPrefix("ALTER TABLE") })
        #expect(try books(store) == [["100", "a", "1"], ["101", "b", "2"], ["102", "c", "1"]])
    }

    @Test func anImportIntoTablesThatHoldRowsChecksKeysRowByRow() throws {
        let (store, statements) = try observedStore()
        try store.write { _ = try StoreDecoder().decode([RefBook].self, from: Data(#"[{"id":1,"shelf":{"id":9},"genres":[{"id":5}]}]"#.utf8), into: $0) }
        statements.withLock { $0.removeAll() }
        _ = try store.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(Self.dump)), options: alone)
        #expect(!statements.withLock { $0 }.contains { $0.hasPrefix("ALTER TABLE") })
        #expect(try books(store).count == 4)
    }

    /// Another session reads a table the keys refer to: the import does not wait for it (nor make it wait), and checks
    /// its keys row by row.
    @Test func anImportBesideAReaderOfItsTablesLeavesTheKeysInPlace() throws {
        let (store, statements) = try observedStore()
        let other = try Backend.postgres.reopen(store, entities: entities)
        try other.withWriter { connection in
            try connection.beginReadTransaction()
            defer { connection.rollbackIgnoringErrors() }
            #expect(try connection.rows(sql: #"SELECT * FROM "RefShelf""#).isEmpty)
            _ = try store.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(Self.dump)), options: alone)
        }
        let run = statements.withLock { $0 }
        #expect(run.contains { $0.hasPrefix("LOCK TABLE") })
        #expect(!run.contains { $0.contains("DROP CONSTRAINT") })
        #expect(try books(store) == [["100", "a", "1"], ["101", "b", "2"], ["102", "c", "1"]])
    }

    /// An application's role may write the rows of tables it does not own, but not alter them: its import checks its
    /// keys row by row, and succeeds.
    @Test func aRoleThatMayNotAlterTheTablesChecksKeysRowByRow() throws {
        let (owner, _) = try observedStore()
        let schema = String(try #require(owner.path.split(separator: "schema=").last))
        let role = "app_" + UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(12)
        for sql in [
            "CREATE ROLE \(role) LOGIN", "GRANT USAGE ON SCHEMA \(schema) TO \(role)",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA \(schema) TO \(role)",
            "GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA \(schema) TO \(role)",
        ] {
            _ = try storedRows(owner, sql)
        }
        defer {
            _ = try? storedRows(owner, "DROP OWNED BY \(role)")
            _ = try? storedRows(owner, "DROP ROLE \(role)")
        }
        let url = try #require(Backend.postgresURL).replacingOccurrences(of: "://codablestore@", with: "://\(role)@")
        let statements = Locked<[String]>([])
        var options = Store.Options()
        options.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        try {
            let store = try Store.open(postgres: url + "?schema=" + schema, entities: entities, options: options)
            #expect(try storedRows(store, "SELECT current_user") == [[role]])
            _ = try store.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(Self.dump)), options: alone)
        }()
        // Tried (the server refused the role), rolled back to before the attempt, and not added back.
        #expect(statements.withLock { $0 }.contains { $0.contains("DROP CONSTRAINT") })
        #expect(!statements.withLock { $0 }.contains { $0.contains("ADD CONSTRAINT") })
        #expect(try books(owner) == [["100", "a", "1"], ["101", "b", "2"], ["102", "c", "1"]])
        #expect(try foreignKeys(owner).count == 3)
    }

    /// While a load holds its tables, a reader of them waits for the store's busy timeout, then is told the store is busy.
    @Test func aReaderOfTablesBeingLoadedWaitsForTheBusyTimeoutAtMost() throws {
        let (store, _) = try observedStore()
        var options = Store.Options()
        options.busyTimeout = 200
        let reader = try Backend.postgres.reopen(store, entities: entities, options: options)
        let seen = Locked<(any Error)?>(nil)
        var waited = Duration.zero
        try store.withWriter { connection in
            try connection.beginWriteTransaction()
            defer { connection.rollbackIgnoringErrors() }
            // What the import does at its start, on this connection: the keys dropped, the tables held.
            let deferral = try #require(try connection.deferBuildsOfEmptyTables(writing: ["RefBook", "RefBook_genres"], alone: true))
            #expect(deferral.suspendsForeignKeys)
            let start = ContinuousClock.now
            do {
                _ = try reader.read { context in try context.fetch(RefBook.self).count }
            } catch {
                seen.withLock { $0 = error }
            }
            waited = ContinuousClock.now - start
        }
        let error = try #require(seen.withLock { $0 } as? StoreError)
        #expect(error.code == .storeBusy)
        #expect(error.message.hasPrefix(
            "the store is being written by another session (a write of the same rows, an import loading its tables alone, "
                + "or a schema change); waited 0.2 s for it to finish"), "\(error.message)")
        #expect(waited >= .milliseconds(150) && waited < .seconds(5))
        // Rolled back: the keys are there, as declared.
        #expect(try foreignKeys(store).count == 3)
    }

    /// The store's indexes, as the server describes them (name and definition, in the schema of the moment).
    private func indexes(_ store: Store) throws -> [[String]] {
        try storedRows(store, "SELECT indexname, regexp_replace(indexdef, ' ON [^ ]+\\.', ' ON ') FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1")
    }

    private static let repeating = #"""
        [{"id":100,"title":"a","shelf":{"id":1},"genres":[{"id":10},{"id":11}]},
         {"id":101,"title":"b","shelf":{"id":2},"genres":[10]},
         {"id":102,"title":"c","shelf":1,"genres":[11]},
         {"id":100,"title":"a2","shelf":2,"genres":[11,12]},
         {"id":103,"title":"d","shelf":{"id":3},"genres":[12]},
         {"id":101,"title":"b2","genres":[]},
         {"id":102,"title":"c2","shelf":3,"genres":[10,11,12]}]
        """#

    /// The non-unique indexes of the empty tables (a foreign key's, the join table's reverse index) are dropped with
    /// the keys and made again, as they were, after the last row and before the keys come back: the import's own
    /// statements (identity lookups, updates by row id, a to-many's members by its owner, links by their pair) never
    /// need them earlier.
    @Test func nonUniqueIndexesAreMadeAgainOnceTheRowsAreIn() throws {
        let (store, statements) = try observedStore()
        let declared = try indexes(store)
        #expect(declared.contains { $0[0] == "RefBook_shelf" && !$0[1].contains("UNIQUE") })
        #expect(declared.contains { $0[0] == "RefBook_genres_target" && !$0[1].contains("UNIQUE") })
        statements.withLock { $0.removeAll() }
        var options = alone
        options.batchSize = 2  // records of stored books in later batches: lookups, updates, members, links and unlinks
        let report = try store.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(Self.repeating)), options: options)
        #expect(report.exclusiveAccess == true)
        let run = statements.withLock { $0 }
        let dropped = try #require(run.firstIndex { $0.hasPrefix("DROP INDEX") })
        #expect(run[dropped].contains(#""RefBook_shelf""#) && run[dropped].contains(#""RefBook_genres_target""#))
        let made = run.indices.filter { run[$0].hasPrefix("CREATE INDEX") }
        #expect(made.count == 2)
        // After every statement on the tables' rows, before the keys.
        let lastWrite = try #require(run.lastIndex { $0.hasPrefix("COPY ") || $0.hasPrefix("UPDATE ") || $0.hasPrefix("DELETE ") || $0.hasPrefix("INSERT ") })
        let firstKey = try #require(run.firstIndex { $0.contains("ADD CONSTRAINT") })
        #expect(made.allSatisfy { $0 > lastWrite && $0 < firstKey })
        #expect(run.contains { $0.contains(#"WHERE "source" = o."owner""#) })  // the members were loaded meanwhile
        #expect(try indexes(store) == declared)
        #expect(try books(store) == [["100", "a2", "2"], ["101", "b2", "2"], ["102", "c2", "3"], ["103", "d", "3"]])
        #expect(try links(store) == [["100", "11"], ["100", "12"], ["102", "10"], ["102", "11"], ["102", "12"], ["103", "12"]])
        #expect(try foreignKeys(store).allSatisfy { $0[3] == "1" })
    }

    /// A statement that reads a table by a column only a deferred index covers makes the indexes first: here a shelf's
    /// books, loaded by the books' foreign key when a stored shelf's record names them, and references cleared by a
    /// decoding hook's delete.
    @Test func aStatementThatWouldScanWithoutTheIndexesMakesThemFirst() throws {
        let (store, statements) = try observedStore()
        let declared = try indexes(store)
        statements.withLock { $0.removeAll() }
        let shelves = try ImportForeignKeyTests.dump(#"""
            [{"id":1,"books":[{"id":100},{"id":101}]},
             {"id":2,"books":[{"id":102}]},
             {"id":1,"books":[100,102]}]
            """#)
        var options = alone
        options.batchSize = 1
        _ = try store.importJSON(RefShelf.self, from: .file(shelves), options: options)
        let run = statements.withLock { $0 }
        let members = try #require(run.firstIndex { $0.contains(#"WHERE "shelf" = o."owner""#) })
        let made = run.indices.filter { run[$0].hasPrefix("CREATE INDEX") }
        #expect(made.count == 2)  // the books' shelf index, and the links' (the import may write links of books)
        #expect(made.allSatisfy { $0 < members })
        #expect(try indexes(store) == declared)
        #expect(try books(store) == [["100", "", "1"], ["101", "", "NULL"], ["102", "", "1"]])

        // The references to a deleted shelf, cleared by the import itself (the keys are away): the indexes come first.
        let other = try Backend.postgres.makeStore(entities: entities, options: {
            var options = Store.Options()
            options.statementObserver = { sql in statements.withLock { $0.append(sql) } }
            return options
        }())
        statements.withLock { $0.removeAll() }
        _ = try other.importJSON(RefBook.self, from: .file(try ImportForeignKeyTests.dump(#"""
            [{"id":100,"title":"a","shelf":{"id":1},"genres":[{"id":10}]},
             {"id":101,"title":"b","shelf":{"id":1},"dropShelf":1}]
            """#)), options: options)
        let cleared = statements.withLock { $0 }
        let clearing = try #require(cleared.firstIndex { $0.hasPrefix(#"UPDATE "RefBook" SET "shelf" = NULL"#) })
        #expect(cleared.indices.contains { cleared[$0].hasPrefix("CREATE INDEX") && $0 < clearing })
        #expect(try books(other) == [["100", "a", "NULL"], ["101", "b", "NULL"]])
        #expect(try indexes(other) == declared)
    }
}
