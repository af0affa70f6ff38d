import Foundation
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// `Context.inSavepoint(_:)`: what the two-thread decode and the importer's skip policy undo a failed attempt with.
@Suite struct ContextSavepointTests {
    struct Failure: Error {}

    @Test func aThrowingBodyLeavesTheRowsAndTheContextAsTheyWere() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        let (counts, held, touched) = try store.write { context in
            try context.insert(Person(id: 1, name: "kept"))
            try context.save()
            context.reset()  // a savepoint starts with no objects held
            let person = try context.model.mapping(for: Person.self).index
            let before = context.writeCounts[person]?.inserted
            #expect(before == 1)
            #expect(throws: Failure.self) {
                try context.inSavepoint {
                    try context.insert(Person(id: 2, name: "undone"))
                    try context.insert(Country(code: "x", name: "undone"))
                    try context.flush(usingSavepoint: false)
                    #expect(try context.count(Person.self) == 2)
                    throw Failure()
                }
            }
            return (before == context.writeCounts[person]?.inserted, context.registeredObjectCount, context.touchedEntities.count)
        }
        #expect(counts)
        #expect(held == 0)
        #expect(touched == 1)  // Person, by the save before the savepoint; not Country
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, name FROM Person") == [["1", "kept"]])
        #expect(try raw.rows("SELECT count(*) FROM Country") == [["0"]])
    }

    @Test func aReturningBodyKeepsWhatItWroteAndReturnsItsValue() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        let value = try store.write { context in
            try context.inSavepoint { () throws -> Int in
                try context.insert(Person(id: 3, name: "written"))
                try context.flush(usingSavepoint: false)
                return 42
            }
        }
        #expect(value == 42)
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person") == [["3", "written"]])
    }
}

/// The public sub-transaction (`inSavepoint`) and `rollback()`, on contexts holding objects and changes.
@Suite struct SubTransactionTests {
    struct Failure: Error {}

    @Test func aFailingSavepointUndoesOnlyItsOwnWorkAndTheWriteGoesOn() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "stored before")) }
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.name = "renamed before"  // unsaved when the savepoint starts: saved first, and kept
            try context.insert(Person(id: 2, name: "inserted before"))
            #expect(throws: Failure.self) {
                try context.inSavepoint {
                    ada.name = "renamed inside"
                    try context.insert(Person(id: 3, name: "inserted inside"))
                    #expect(try context.count(Person.self) == 3)  // flushed inside the savepoint
                    throw Failure()
                }
            }
            #expect(ada.entityState.context == nil)  // the context forgot its objects
            let again = try #require(try context.object(Person.self, identity: 1))
            #expect(again.name == "renamed before")
            try context.insert(Person(id: 4, name: "inserted after"))
        }
        #expect(
            try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id")
                == [["1", "renamed before"], ["2", "inserted before"], ["4", "inserted after"]])
    }

    @Test func savepointsNestAndASucceedingOneKeepsItsChanges() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        let value = try store.write { context in
            try context.inSavepoint { () throws -> Int in
                try context.insert(Person(id: 1, name: "outer"))
                _ = try? context.inSavepoint {
                    try context.insert(Person(id: 2, name: "inner, undone"))
                    throw Failure()
                }
                try context.insert(Person(id: 3, name: "outer again"))
                return 7
            }
        }
        #expect(value == 7)
        #expect(try RawDatabase(path).rows("SELECT id FROM Person ORDER BY id") == [["1"], ["3"]])
    }

    @Test func aSaveThatFailsAtTheEndOfASavepointIsUndoneToo() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "one")) }
        try store.write { context in
            _ = #expect(throws: StoreError.self) {
                try context.inSavepoint {
                    try context.insert(Person(id: 2, name: "two"))
                    try context.insert(Person(id: 1, name: "duplicate identity"))  // fails when saved
                }
            }
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "one"]])
    }

    @Test func aReadContextRefusesBoth() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.read { context in
            #expect(throws: StoreError.self) { try context.rollback() }
            #expect(throws: StoreError.self) { try context.inSavepoint {} }
        }
    }
}
