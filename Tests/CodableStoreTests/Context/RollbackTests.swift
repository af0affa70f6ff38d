import CodableStore
import Foundation
import Testing

/// `Context.rollback()` goes back to the last save, as Core Data's does: what was saved before stays, the changes
/// since are gone (in the store too, when a query wrote them), and the objects the caller holds stay usable with
/// their saved values.
@Suite struct RollbackTests {
    private func store(_ path: String, _ log: StatementLog? = nil) throws -> Store {
        try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: log?.observer))
    }

    @Test func aSavedChangeStaysAndTheUnsavedOneIsDiscarded() throws {
        let path = TestStore.temporaryPath()
        let store = try store(path)
        try store.write { try $0.insert(Person(id: 1, name: "stored", age: 30)) }
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.name = "saved"
            try context.save()
            ada.name = "unsaved"
            ada.age = 99
            try context.rollback()
            #expect(ada.name == "saved")
            #expect(ada.age == 30)
            #expect(!context.hasChanges)
            #expect(ada.entityState.context === context)  // still held, still usable
            #expect(ada.entityState.status == .persistent)
            #expect(try context.object(Person.self, identity: 1) === ada)
            #expect(try context.fetch(Person.self).map(\.name) == ["saved"])
            ada.age = 31  // tracked again
        }
        #expect(try RawDatabase(path).rows("SELECT id, name, age FROM Person") == [["1", "saved", "31"]])
    }

    @Test func changesAQueryWroteSinceTheSaveAreUndoneInTheStore() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try store(path, log)
        try store.write { try $0.insert(Person(id: 1, name: "stored")) }
        log.reset()
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.name = "saved"
            try context.save()
            ada.name = "flushed by a query"
            try context.insert(Person(id: 2, name: "inserted, flushed by a query"))
            #expect(try context.count(Person.self) == 2)  // writes what is pending first
            #expect(try context.count(Person.self, where: \.name == "flushed by a query") == 1)
            try context.rollback()
            #expect(ada.name == "saved")
            #expect(try context.count(Person.self) == 1)
            #expect(try context.count(Person.self, where: \.name == "saved") == 1)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "saved"]])
        // One savepoint held the query's writes, and the rollback went back to it.
        #expect(log.all.filter { $0.contains("codablestore_unsaved") }.count == 3, "\(log.all)")
        #expect(log.all.contains(#"ROLLBACK TO SAVEPOINT "codablestore_unsaved""#))
    }

    @Test func anObjectInsertedSinceTheSaveLeavesTheContextAndMayBeInsertedAgain() throws {
        let path = TestStore.temporaryPath()
        let store = try store(path)
        try store.write { context in
            try context.insert(Person(id: 1, name: "saved"))
            try context.save()
            let grace = Person(id: 2, name: "unsaved")
            try context.insert(grace)
            _ = try context.fetch(Person.self)  // written by the query
            try context.rollback()
            #expect(grace.entityState.status == .transient)
            #expect(grace.entityState.context == nil)
            #expect(try context.object(Person.self, identity: 2) == nil)
            #expect(context.registeredObjectCount == 1)
            grace.name = "inserted again"
            try context.insert(grace)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "saved"], ["2", "inserted again"]])
    }

    @Test func anObjectDeletedSinceTheSaveIsBackWithItsRelationships() throws {
        let path = TestStore.temporaryPath()
        let store = try store(path)
        try store.write { context in
            let france = Country(code: "fr", name: "France")
            let ada = Person(id: 1, name: "Ada")
            ada.country = france
            ada.tags = [Tag(id: 7, label: "math")]
            try context.insert(ada)
        }
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            let france = try #require(ada.country)
            try context.delete(ada)
            #expect(france.people.isEmpty)
            _ = try context.count(Person.self)  // the delete is written by the query
            try context.rollback()
            #expect(ada.entityState.status == .persistent)
            #expect(ada.entityState.context === context)
            #expect(ada.country === france)
            #expect(france.people.map(\.id) == [1])
            #expect(ada.tags.map(\.label) == ["math"])
            #expect(try context.object(Person.self, identity: 1) === ada)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT p.id, c.code FROM Person p JOIN Country c ON c._pk = p.country") == [["1", "fr"]])
        #expect(try raw.rows("SELECT count(*) FROM Person_tags") == [["1"]])
    }

    @Test func changedRelationshipsAreReadFromTheStoreAgain() throws {
        let path = TestStore.temporaryPath()
        let store = try store(path)
        try store.write { context in
            let ada = Person(id: 1, name: "Ada")
            ada.country = Country(code: "uk", name: "United Kingdom")
            ada.tags = [Tag(id: 1, label: "math")]
            try context.insert(ada)
            try context.insert(Country(code: "fr", name: "France"))
        }
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            let france = try #require(try context.object(Country.self, identity: "fr"))
            ada.country = france
            ada.tags.insert(Tag(id: 2, label: "poetry"))
            #expect(france.people.count == 1)
            try context.rollback()
            #expect(ada.country?.code == "uk")
            #expect(ada.tags.map(\.id) == [1])
            #expect(france.people.isEmpty)
            #expect(try context.object(Tag.self, identity: 2) == nil)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT c.code FROM Person p JOIN Country c ON c._pk = p.country") == [["uk"]])
        #expect(try raw.rows("SELECT id FROM Tag ORDER BY id") == [["1"]])
    }

    @Test func aDecodedPageAfterTheSaveIsDiscardedAndTheNextSaveIsTheNewPoint() throws {
        let path = TestStore.temporaryPath()
        let store = try store(path)
        let page1 = Data(#"[{"id": 1, "name": "one"}, {"id": 2, "name": "two"}]"#.utf8)
        let page2 = Data(#"[{"id": 2, "name": "TWO"}, {"id": 3, "name": "three"}]"#.utf8)
        let page3 = Data(#"[{"id": 4, "name": "four"}]"#.utf8)
        try store.write { context in
            let first = try StoreDecoder().decode([Person].self, from: page1, into: context)
            try context.save()
            _ = try StoreDecoder().decode([Person].self, from: page2, into: context)
            try context.rollback()
            #expect(first.map(\.name) == ["one", "two"])
            _ = try StoreDecoder().decode([Person].self, from: page3, into: context)
            try context.save()
            first[0].name = "ONE"
            try context.rollback()
            #expect(first[0].name == "one")
        }
        #expect(
            try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "one"], ["2", "two"], ["4", "four"]])
    }

    @Test func withNothingSinceTheSaveItChangesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try store(path, log)
        try store.write { context in
            try context.insert(Person(id: 1, name: "saved"))
            try context.save()
            log.reset()
            try context.rollback()
            #expect(try context.object(Person.self, identity: 1)?.name == "saved")
        }
        #expect(!log.all.contains { $0.hasPrefix("ROLLBACK") })
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person") == [["1", "saved"]])
    }

    @Test func aThrowOutOfTheWriteStillAbandonsEverything() throws {
        struct Abandon: Error {}
        let path = TestStore.temporaryPath()
        let store = try store(path)
        #expect(throws: Abandon.self) {
            try store.write { context in
                try context.insert(Person(id: 1, name: "saved"))
                try context.save()
                throw Abandon()
            }
        }
        #expect(try RawDatabase(path).rows("SELECT count(*) FROM Person") == [["0"]])
    }
}
