import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// `Context.updateAll(_:where:set:)`: one statement for every matching row, with the identity map, identity lookups
/// and observers kept right.
@Suite struct BatchUpdateTests {
    static func seeded() throws -> (FixtureStore, String) {
        let fixture = try FixtureStore(entities: TestStore.entities, storage: .temporaryFile)
        try fixture.store.write { context in
            for id in 1...6 { try context.insert(Person(id: id, name: "P\(id)", age: id * 10)) }
        }
        return (fixture, fixture.store.path)
    }

    @Test func matchingRowsAreSetInOneStatementAndHeldObjectsFollow() throws {
        let (fixture, path) = try Self.seeded()
        try fixture.store.write { context in
            let held = try context.fetch(Person.self, orderBy: [.ascending(\.id)])
            let (count, statements) = try fixture.statements.statements {
                try context.updateAll(Person.self, where: \.age >= 40, set: [.set(\.name, to: "senior"), .set(\.age, to: 99)])
            }
            #expect(count == 3)
            #expect(statements.filter { StatementKind(sql: $0) == .update } == [#"UPDATE "Person" SET "name" = ?, "age" = ?, "_digest" = NULL WHERE "age" >= ?"#])
            #expect(held.map(\.name) == ["P1", "P2", "P3", "senior", "senior", "senior"])
            #expect(held.map(\.age) == [10, 20, 30, 99, 99, 99])
            #expect(!context.hasChanges)  // stored values, not changes to save again
            let (_, save) = try fixture.statements.statements { try context.save() }
            #expect(save.isEmpty)
        }
        #expect(
            try RawDatabase(path).rows("SELECT id, name, age FROM Person ORDER BY id")
                == [["1", "P1", "10"], ["2", "P2", "20"], ["3", "P3", "30"], ["4", "senior", "99"], ["5", "senior", "99"], ["6", "senior", "99"]])
    }

    @Test func pendingChangesAreSavedFirst() throws {
        let (fixture, path) = try Self.seeded()
        try fixture.store.write { context in
            let one = try #require(try context.object(Person.self, identity: 1))
            one.name = "renamed, unsaved"
            one.age = 50  // now matches
            #expect(try context.updateAll(Person.self, where: \.age == 50, set: [.set(\.age, to: 51)]) == 2)
            #expect(one.age == 51 && one.name == "renamed, unsaved")
        }
        #expect(try RawDatabase(path).rows("SELECT id, name, age FROM Person WHERE age = 51 ORDER BY id") == [["1", "renamed, unsaved", "51"], ["5", "P5", "51"]])
    }

    @Test func settingTheIdentityKeepsLookupsRight() throws {
        let (fixture, _) = try Self.seeded()
        try fixture.store.write { context in
            let six = try #require(try context.object(Person.self, identity: 6))
            #expect(try context.updateAll(Person.self, where: \.id == 6, set: [.set(\.id, to: 60)]) == 1)
            #expect(try context.object(Person.self, identity: 60) === six)
            #expect(try context.object(Person.self, identity: 6) == nil)
        }
    }

    @Test func aConflictChangesNothing() throws {
        let (fixture, path) = try Self.seeded()
        let error = try #require(throws: StoreError.self) {
            try fixture.store.write { context in _ = try context.updateAll(Person.self, where: \.id >= 5, set: [.set(\.id, to: 5)]) }
        }
        #expect(error.code == .identityConflict)
        #expect(error.message == "setting id on 2 Person objects would give two rows the same identity or unique value; nothing was changed")
        #expect(try RawDatabase(path).rows("SELECT count(*) FROM Person WHERE id = 5") == [["1"]])
    }

    @Test func aKeyPathThatIsNotStoredOrAnAttributeSetTwiceIsRefused() throws {
        let (fixture, _) = try Self.seeded()
        try fixture.store.write { context in
            // (Relationships do not compile: their values are not attribute values.)
            let computed = try #require(throws: StoreError.self) {
                try context.updateAll(Person.self, set: [.set(\.ageInMonths, to: 1)])
            }
            #expect(computed.code == .invalidQuery)
            #expect(computed.message.hasSuffix("is not a stored attribute of Person"), "\(computed)")
            let twice = try #require(throws: StoreError.self) {
                try context.updateAll(Person.self, set: [.set(\.age, to: 1), .set(\.age, to: 2)])
            }
            #expect(twice.message.hasSuffix("is set twice in one update of Person"), "\(twice)")
        }
    }

    @Test func observersSeeTheUpdate() async throws {
        let (fixture, _) = try Self.seeded()
        var changes = fixture.store.observe(Person.self, where: \.age >= 60).makeAsyncIterator()
        #expect(try #require(await changes.next()).rows.count == 1)
        try await fixture.store.write { context in _ = try context.updateAll(Person.self, where: \.id <= 2, set: [.set(\.age, to: 70)]) }
        let change = try #require(await changes.next())
        #expect(change.rows.count == 3)
        #expect(change.inserted.count == 2)
    }
}

extension Person {
    fileprivate var ageInMonths: Int { age * 12 }
}
