import Foundation
import Testing

@testable import CodableStore

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
