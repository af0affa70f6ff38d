import Foundation
import IssuesModel
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// The rows an import's writer thread keeps of the entities records refer to (`RowCache`): answered until their row
/// changes, within a budget, and never in place of a row something else may have changed.
@Suite struct RowCacheTests {
    @Test func packedValuesReadBackAsTheyWere() {
        var random = SyncOracleTests.SeededGenerator(seed: 5)
        var values: [DatabaseValue] = [
            .null, .integer(0), .integer(-1), .integer(.min), .integer(.max), .integer(63), .integer(-64), .integer(64),
            .real(0), .real(-0.0), .real(.infinity), .real(-.greatestFiniteMagnitude), .real(.nan),
            .text(""), .text("é😀\u{0}x"), .text(String(repeating: "long ", count: 100)), .blob(Data()), .blob(Data([0, 255, 128])),
        ]
        for _ in 0..<2_000 {
            switch random.next() % 4 {
            case 0: values.append(.integer(Int64(bitPattern: random.next()) >> (random.next() % 64)))
            case 1: values.append(.real(Double(bitPattern: random.next())))
            case 2: values.append(.text(String((0..<(random.next() % 40)).map { _ in Character(Unicode.Scalar(UInt8(32 + random.next() % 90))) })))
            default: values.append(.blob(Data((0..<(random.next() % 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) })))
            }
        }
        var bytes: [UInt8] = []
        for value in values { RowCache.pack(value, into: &bytes) }
        let read = bytes.withUnsafeBufferPointer { buffer in
            var reader = RowCache.Reader(bytes: buffer, position: 0)
            let read = values.map { _ in reader.value() }
            #expect(reader.position == buffer.count)
            return read
        }
        for (value, back) in zip(values, read) {
            if case .real(let real) = value, case .real(let other) = back {
                #expect(real.bitPattern == other.bitPattern)  // NaN too
            } else {
                #expect(value == back)
            }
        }
    }

    /// The cache of a store of the test model, with the index of Tag (an integer identity) and Country (a text one).
    static func withCache(budget: Int = 1 << 20, _ body: (RowCache, _ tag: Int, _ country: Int, _ person: Int) throws -> Void) throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        let model = store.model
        let person = try model.mapping(for: Person.self).index
        try body(
            RowCache(model: model, excluding: person, budget: budget), try model.mapping(for: Tag.self).index,
            try model.mapping(for: Country.self).index, person)
    }

    static func tagRow(_ rowID: Int64, _ id: Int64, _ label: String) -> [DatabaseValue] { [.integer(rowID), .integer(id), .text(label)] }
    static func key(_ id: Int64) -> Context.IdentityKey { Context.IdentityKey(single: .integer(id)) }

    static func cached(_ cache: RowCache, _ entity: Int, _ key: Context.IdentityKey) -> [DatabaseValue]? {
        var values: [DatabaseValue] = [.null]  // appended after what is there
        guard cache.appendRow(entity: entity, key: key, to: &values) else {
            #expect(values == [.null])
            return nil
        }
        return Array(values.dropFirst())
    }

    @Test func rowsAreAnsweredUntilTheyChange() throws {
        try Self.withCache { cache, tag, country, person in
            #expect(cache.caches(tag) && cache.caches(country))
            #expect(!cache.caches(person))  // the records' own entity
            cache.store(entity: tag, rows: ArraySlice(Self.tagRow(1, 10, "a") + Self.tagRow(2, 20, "b") + Self.tagRow(3, 30, "c")))
            cache.store(entity: country, rows: [.integer(1), .text("uk"), .text("United Kingdom")])
            #expect(Self.cached(cache, tag, Self.key(20)) == Self.tagRow(2, 20, "b"))
            #expect(Self.cached(cache, tag, Self.key(40)) == nil)
            #expect(Self.cached(cache, country, Context.IdentityKey(single: .text("uk"))) == [.integer(1), .text("uk"), .text("United Kingdom")])
            // An identity of another type is another key (as the lookup would have asked).
            #expect(Self.cached(cache, tag, Context.IdentityKey(single: .text("20"))) == nil)
            #expect(cache.hits == 2 && cache.misses == 2)

            // An update of a row's other values: that row is read again, the others are answered.
            let label = try #require(Tag.entityDescription.field(named: "label")).index
            cache.willWrite(.update(entity: tag, fields: [label], values: [.text("B"), .integer(2)]))
            #expect(Self.cached(cache, tag, Self.key(20)) == nil)
            #expect(Self.cached(cache, tag, Self.key(10)) == Self.tagRow(1, 10, "a"))
            cache.store(entity: tag, rows: ArraySlice(Self.tagRow(2, 20, "B")))
            #expect(Self.cached(cache, tag, Self.key(20)) == Self.tagRow(2, 20, "B"))
            // Inserts and links change no cached row.
            cache.willWrite(.insert(entity: tag, rows: 1, values: Self.tagRow(4, 40, "d")))
            cache.willWrite(.link(table: 0, rows: 1, values: [.integer(1), .integer(1)]))
            #expect(Self.cached(cache, tag, Self.key(10)) != nil)

            // An update of identity values: every row of the entity is forgotten (a key may name another row now).
            let id = try #require(Tag.entityDescription.field(named: "id")).index
            cache.willWrite(.update(entity: tag, fields: [id], values: [.integer(11), .integer(1)]))
            #expect(Self.cached(cache, tag, Self.key(10)) == nil)
            #expect(Self.cached(cache, tag, Self.key(30)) == nil)
            #expect(Self.cached(cache, country, Context.IdentityKey(single: .text("uk"))) != nil)

            // A delete of any row forgets everything (without enforced foreign keys it also clears references).
            cache.store(entity: tag, rows: ArraySlice(Self.tagRow(3, 30, "c")))
            cache.willWrite(.delete(entity: person, rowID: 1))
            #expect(Self.cached(cache, tag, Self.key(30)) == nil)
            #expect(Self.cached(cache, country, Context.IdentityKey(single: .text("uk"))) == nil)
            #expect(cache.usedBytes == 0)
        }
    }

    @Test func manyUpdatedRowsForgetTheirEntity() throws {
        try Self.withCache { cache, tag, _, _ in
            let label = try #require(Tag.entityDescription.field(named: "label")).index
            cache.store(entity: tag, rows: ArraySlice((1...10).flatMap { Self.tagRow($0, $0 * 10, "t") }))
            for rowID in 1...Int64(RowCache.staleLimit) {
                cache.willWrite(.update(entity: tag, fields: [label], values: [.text("x"), .integer(rowID + 100)]))
            }
            #expect(Self.cached(cache, tag, Self.key(10)) != nil)
            cache.willWrite(.update(entity: tag, fields: [label], values: [.text("x"), .integer(5_000)]))
            #expect(Self.cached(cache, tag, Self.key(10)) == nil)
            #expect(cache.usedBytes == 0)
        }
    }

    @Test func aFullCacheStartsAgain() throws {
        try Self.withCache(budget: 2_000) { cache, tag, _, _ in
            var stored = 0
            var rowID: Int64 = 1
            // Rows until the cache started again.
            while true {
                cache.store(entity: tag, rows: ArraySlice(Self.tagRow(rowID, rowID * 10, "label \(rowID)")))
                #expect(cache.usedBytes <= 2_000)
                if Self.cached(cache, tag, Self.key(10)) == nil { break }
                stored += 1
                rowID += 1
            }
            // About 2,000 / (24 + 17) rows fit; the row stored when it was full is there, the earlier ones are not.
            #expect(stored > 30 && stored < 60, "\(stored)")
            #expect(Self.cached(cache, tag, Self.key(rowID * 10)) == Self.tagRow(rowID, rowID * 10, "label \(rowID)"))
            #expect(Self.cached(cache, tag, Self.key((rowID - 1) * 10)) == nil)
        }
    }

    /// With no object retained, users mentioned again are answered from their cached rows instead of a query per
    /// batch, and the store and the report end as without the cache.
    @Test(arguments: [1, 3])
    func repeatedUsersAreAnsweredFromCachedRowsAndTheStoreEndsTheSame(batchSize: Int) throws {
        let dump = try ImportTests.dump(count: 600, duplicates: 0.3)
        var contents: [Int: [[String]]] = [:]
        var lookups: [Int: Int] = [:]
        var counts: [Int: [String]] = [:]
        for kibibytes in [0, 1_024] {
            let profiled = try ProfiledStore()
            let (path, store) = (profiled.path, profiled.store)
            var options = ImportTests.options(batchSize: batchSize)
            options.retainedObjectLimit = 0
            options.rowCacheKiB = kibibytes
            let first = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
            let again = try store.importJSON(GitIssue.self, from: .file(dump), options: options)  // everything stored
            contents[kibibytes] = try ImportTests.contents(path)
            lookups[kibibytes] = profiled.userLookups
            counts[kibibytes] = [first, again].flatMap { report in
                report.entities.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.inserted) \($0.value.updated)" }
            }
            #expect(try RawDatabase(path).value("SELECT count(*) FROM User") == "40")
        }
        #expect(contents[1_024] == contents[0])
        #expect(counts[1_024] == counts[0])
        let without = try #require(lookups[0])
        let with = try #require(lookups[1_024])
        #expect(without > 100 / batchSize)
        #expect(with * 4 < without, "lookups of users: \(with) with cached rows, \(without) without")
    }

    /// A user whose login changes and changes back, with other users between its mentions (so that its object is let
    /// go): each mention must compare with the row as last written, not as first cached.
    @Test func aCachedRowChangedByTheImportIsReadAgain() throws {
        var records: [String] = []
        for (index, login) in ["a", "a", "b", "a", "a", nil].enumerated() {
            let user = login.map { #"{"id": 5, "login": "\#($0)"}"# } ?? #"{"id": 5}"#
            records.append(#"{"id": \#(index * 3 + 1), "number": 1, "title": "t", "user": \#(user)}"#)
            records.append(#"{"id": \#(index * 3 + 2), "number": 2, "title": "t", "user": {"id": 6, "login": "six"}}"#)
            records.append(#"{"id": \#(index * 3 + 3), "number": 3, "title": "t", "user": {"id": 7, "login": "seven"}}"#)
        }
        let dump = try WriteBehindTests.write("[" + records.joined(separator: ",\n") + "]")
        var updates: [Int] = []
        var lookups: [Int] = []
        for kibibytes in [1_024, 0] {
            let profiled = try ProfiledStore()
            let (path, store) = (profiled.path, profiled.store)
            var options = ImportTests.options(batchSize: 1)
            options.retainedObjectLimit = 0
            options.rowCacheKiB = kibibytes
            let report = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
            #expect(try RawDatabase(path).rows("SELECT id, login FROM User ORDER BY id") == [["5", "a"], ["6", "six"], ["7", "seven"]])
            updates.append(report.entities["User"]?.updated ?? -1)
            lookups.append(profiled.userLookups)
        }
        // "a" to "b", and back.
        #expect(updates == [2, 2])
        // Without the cache, each of the 18 batches looks its user up (the one before used another). With it: each
        // user's first mention (not stored yet) and second (cached then), and user 5 after each of its two updates.
        #expect(lookups == [8, 18])
    }

    /// Rows the context changes on the connection itself, while the writer is idle, are forgotten.
    @Test func rowsAreForgottenWhenTheContextUsesTheConnectionItself() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            for id in 1...3 { try context.insert(Tag(id: id, label: "t\(id)")) }
            try context.save()
            let tag = try context.model.mapping(for: Tag.self).index
            let person = try context.model.mapping(for: Person.self).index
            let cache = RowCache(model: context.model, excluding: person, budget: 1 << 20)
            let writer = WriteBehind(connection: context.storeConnection, storage: context.storage, rowCache: cache)
            try writer.start()
            defer { writer.finish() }
            func lookUp(_ id: Int64) throws -> [DatabaseValue] {
                let lookup = Lookahead(keys: [(tag, [Self.key(id)])], memberships: [])
                try writer.requestLookup(lookup)
                try writer.waitForLookup(lookup)
                return lookup.rows[0].values
            }
            #expect(try lookUp(2).dropFirst() == [.integer(2), .text("t2")])
            #expect(try lookUp(2).dropFirst() == [.integer(2), .text("t2")])
            #expect(cache.hits == 1)
            writer.waitUntilIdle()
            try context.storeConnection.execute(sql: "UPDATE Tag SET label = 'changed' WHERE id = 2")
            #expect(try lookUp(2).dropFirst() == [.integer(2), .text("changed")])
            #expect(cache.hits == 1)
        }
    }

    /// A trigger changes rows no step of the import names: a store with one keeps no rows.
    @Test func aStoreWithTriggersKeepsNoRows() throws {
        let dump = try ImportTests.dump(count: 300, duplicates: 0.3)
        var lookups: [Int] = []
        var contents: [[[String]]] = []
        for trigger in [false, true] {
            let profiled = try ProfiledStore()
            let (path, store) = (profiled.path, profiled.store)
            if trigger {
                try RawDatabase(path).execute(
                    "CREATE TRIGGER topic_named AFTER INSERT ON Topic BEGIN UPDATE Topic SET name = name WHERE _pk = NEW._pk; END")
            }
            var options = ImportTests.options(batchSize: 3)
            options.retainedObjectLimit = 0
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
            lookups.append(profiled.userLookups)
            contents.append(try ImportTests.contents(path))
        }
        #expect(contents[1] == contents[0])
        #expect(lookups[1] > lookups[0] * 3, "\(lookups)")
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            #expect(try !context.storeConnection.hasTriggers())
            // A TEMP trigger (this connection's own) counts too.
            try context.storeConnection.execute(sql: "CREATE TEMP TRIGGER t AFTER DELETE ON main.Tag BEGIN SELECT 1; END")
            #expect(try context.storeConnection.hasTriggers())
            try context.storeConnection.execute(sql: "DROP TRIGGER temp.t")
            #expect(try !context.storeConnection.hasTriggers())
            try context.storeConnection.execute(sql: "CREATE TRIGGER t AFTER DELETE ON Tag BEGIN SELECT 1; END")
            #expect(try context.storeConnection.hasTriggers())
        }
    }
}
