import CodableStore
import CodableStoreTesting
import Foundation
import Synchronization
import Testing

/// Upsert and find-or-create for objects made in Swift, checked in the store's rows and its statements.
@Suite struct UpsertTests {
    static func store() throws -> (FixtureStore, String) {
        let fixture = try FixtureStore(entities: TestStore.entities + [Membership.self], storage: .temporaryFile)
        try fixture.store.write { context in
            let person = Person(id: 1, name: "Ada")
            person.age = 36
            try context.insert(person)
            person.country = Country(code: "uk", name: "United Kingdom")
        }
        return (fixture, fixture.store.path)
    }

    @Test func aNewIdentityIsInserted() throws {
        let (fixture, path) = try Self.store()
        let returned = try fixture.store.write { context in
            let made = Person(id: 2, name: "Grace")
            return try context.upsert(made) === made
        }
        #expect(returned)
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "Ada"], ["2", "Grace"]])
    }

    @Test func aStoredIdentityIsUpdatedColumnByColumnAndKeepsWhatTheNewObjectDoesNotHave() throws {
        let (fixture, path) = try Self.store()
        let (_, statements) = try fixture.statements.statements {
            try fixture.store.write { context in
                let made = Person(id: 1, name: "Ada Lovelace")
                made.age = 36  // as stored
                let kept = try context.upsert(made)
                #expect(kept !== made)
                #expect(kept.name == "Ada Lovelace")
                #expect(kept.country?.code == "uk")  // made has no country: the stored one stays
                #expect(made.entityState.status == .transient)
            }
        }
        let updates = statements.filter { StatementKind(sql: $0) == .update }
        #expect(updates == [#"UPDATE "Person" SET "name" = ?, "_digest" = ? WHERE "_pk" = ?"#])
        #expect(try RawDatabase(path).rows("SELECT id, name, age FROM Person") == [["1", "Ada Lovelace", "36"]])
    }

    @Test func anUpsertThatChangesNothingWritesNothing() throws {
        let (fixture, _) = try Self.store()
        let (_, statements) = try fixture.statements.statements {
            try fixture.store.write { context in
                let same = Person(id: 1, name: "Ada")
                same.age = 36
                try context.upsert(same)
            }
        }
        #expect(statements.map(StatementKind.init(sql:)).allSatisfy { $0 == .select || $0 == .transaction }, "\(statements)")
    }

    @Test func relationshipsTheNewObjectHasReplaceTheStoredOnesWithInverses() throws {
        let (fixture, path) = try Self.store()
        try fixture.store.write { context in
            let france = Country(code: "fr", name: "France")
            let made = Person(id: 1, name: "Ada")
            made.country = france
            made.tags = [Tag(id: 5, label: "math")]
            let kept = try context.upsert(made)
            #expect(kept.country === france)
            #expect(france.people.contains { $0 === kept })
            #expect(kept.tags.map(\.id) == [5])
            #expect(made.country == nil && made.tags.isEmpty)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT p.id, c.code FROM Person p JOIN Country c ON c._pk = p.country") == [["1", "fr"]])
        #expect(try raw.rows("SELECT t.id FROM Person_tags j JOIN Tag t ON t._pk = j.target") == [["5"]])
    }

    @Test func anObjectInsertedInThisContextIsTheOneUpdated() throws {
        let (fixture, path) = try Self.store()
        try fixture.store.write { context in
            let first = Person(id: 3, name: "Cy")
            try context.insert(first)
            let kept = try context.upsert(Person(id: 3, name: "Cyrus"))
            #expect(kept === first)
            #expect(first.name == "Cyrus")
        }
        #expect(try RawDatabase(path).rows("SELECT name FROM Person WHERE id = 3") == [["Cyrus"]])
    }

    @Test func aCompositeIdentityMatchesOnAllItsAttributes() throws {
        let (fixture, path) = try Self.store()
        try fixture.store.write { context in
            try context.insert(Membership(team: "a", user: 1, role: "member"))
            try context.insert(Membership(team: "b", user: 1, role: "member"))
        }
        try fixture.store.write { context in
            try context.upsert(Membership(team: "b", user: 1, role: "owner"))
            try context.upsert(Membership(team: "b", user: 2, role: "member"))
        }
        #expect(
            try RawDatabase(path).rows("SELECT team, user, role FROM Membership ORDER BY team, user")
                == [["a", "1", "member"], ["b", "1", "owner"], ["b", "2", "member"]])
    }

    @Test func findOrCreateMakesOnlyWhatIsMissing() throws {
        let (fixture, path) = try Self.store()
        try fixture.store.write { context in
            var made = 0
            let ada = try context.findOrCreate(Person.self, identity: 1) { made += 1; return Person(id: 1, name: "never") }
            #expect(ada.name == "Ada")
            let bob = try context.findOrCreate(Person.self, identity: 2) { made += 1; return Person(id: 2, name: "Bob") }
            #expect(bob.entityState.status == .inserted)
            #expect(try context.findOrCreate(Person.self, identity: 2) { made += 1; return Person(id: 2, name: "again") } === bob)
            #expect(made == 1)
            let error = try #require(throws: StoreError.self) {
                _ = try context.findOrCreate(Person.self, identity: 9) { Person(id: 8, name: "wrong") }
            }
            #expect(error.code == .invalidObject)
            #expect(error.message == "findOrCreate was asked for Person 9 but made one whose identity is 8")
        }
        #expect(try RawDatabase(path).rows("SELECT id FROM Person ORDER BY id") == [["1"], ["2"]])
    }

    @Test func aReadOnlyContextRefuses() throws {
        let (fixture, _) = try Self.store()
        let error = try #require(throws: StoreError.self) {
            try fixture.store.read { context in _ = try context.upsert(Person(id: 1, name: "x")) }
        }
        #expect(error.code == .readOnly)
    }

    @Test func relatedObjectsMadeInSwiftAreUpsertedToo() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let ada = Person(id: 1, name: "Ada")
            try context.insert(ada)
            ada.country = Country(code: "uk", name: "United Kingdom")
            ada.tags = [Tag(id: 5, label: "math")]
        }
        try store.write { context in
            // A new person whose country is stored, and the stored person with a stored tag and a new one.
            let grace = Person(id: 2, name: "Grace")
            grace.country = Country(code: "uk", name: "UK")
            let upsertedGrace = try context.upsert(grace)
            #expect(upsertedGrace === grace)
            let ada = Person(id: 1, name: "Ada")
            ada.tags = [Tag(id: 5, label: "mathematics"), Tag(id: 6, label: "logic")]
            let upsertedAda = try context.upsert(ada)
            #expect(upsertedAda !== ada)
            #expect(upsertedAda.tags.map(\.id).sorted() == [5, 6])
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT code, name FROM Country") == [["uk", "UK"]])
        #expect(try raw.rows("SELECT id, label FROM Tag ORDER BY id") == [["5", "mathematics"], ["6", "logic"]])
        #expect(try raw.rows("SELECT p.id, c.code FROM Person p JOIN Country c ON c._pk = p.country ORDER BY p.id") == [["1", "uk"], ["2", "uk"]])
        #expect(try raw.rows("SELECT count(*) FROM Person_tags") == [["2"]])
    }

    @Test func aLoopOfUpsertsDoesNotWriteAtEveryCall() throws {
        let statements = StatementLog()
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: statements.observer))
        try store.write { context in
            for id in 1...100 { try context.upsert(Person(id: id, name: "p\(id)")) }
            for id in 1...100 { try context.upsert(Person(id: id, name: "again \(id)")) }  // answered from memory
        }
        let all = statements.all
        // Inserted together at the end, 32 rows per statement; no lookups for the second loop.
        #expect(all.filter { $0.hasPrefix("INSERT") }.count <= 8, "\(all.filter { $0.hasPrefix("INSERT") })")
        #expect(all.filter { $0.hasPrefix("SELECT") && $0.contains("\"Person\"") }.count <= 100)
        #expect(try RawDatabase(path).rows("SELECT count(*), min(name) FROM Person") == [["100", "again 1"]])
    }

    @Test func findOrCreateTakesACompositeIdentity() throws {
        let (fixture, path) = try Self.store()
        try fixture.store.write { context in
            try context.insert(Membership(team: "a", user: 1, role: "owner"))
        }
        let made = Mutex(0)
        try fixture.store.write { context in
            let found = try context.findOrCreate(Membership.self, identity: ["a", 1]) {
                made.withLock { $0 += 1 }
                return Membership(team: "a", user: 1, role: "member")
            }
            #expect(found.role == "owner")
            let created = try context.findOrCreate(Membership.self, identity: ["b", 2]) {
                made.withLock { $0 += 1 }
                return Membership(team: "b", user: 2, role: "member")
            }
            #expect(created.role == "member")
            let error = try #require(throws: StoreError.self) {
                try context.findOrCreate(Membership.self, identity: ["c", 3]) { Membership(team: "c", user: 4, role: "x") }
            }
            #expect(error.message == "findOrCreate was asked for Membership 'c', 3 but made one whose identity is 'c', 4")
            #expect(throws: StoreError.self) { try context.findOrCreate(Membership.self, identity: ["a"]) { Membership(team: "a", user: 1, role: "x") } }
        }
        #expect(made.withLock { $0 } == 1)
        #expect(try RawDatabase(path).rows("SELECT team, user, role FROM Membership ORDER BY team") == [["a", "1", "owner"], ["b", "2", "member"]])
    }
}
