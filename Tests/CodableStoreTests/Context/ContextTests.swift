import CodableStore
import Foundation
import Testing

@Suite struct ContextTests {
    @Test func insertUpdateAndDeleteLandAsRows() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            try context.insert(Person(id: 1, name: "Ada", age: 36))
            try context.insert(Person(id: 2, name: "Grace", age: 85))
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, name, age FROM Person ORDER BY id") == [["1", "Ada", "36"], ["2", "Grace", "85"]])

        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.name = "Ada Lovelace"
            let grace = try #require(try context.object(Person.self, identity: 2))
            try context.delete(grace)
        }
        #expect(try raw.rows("SELECT id, name, age FROM Person ORDER BY id") == [["1", "Ada Lovelace", "36"]])
    }

    @Test func saveWritesOnlyChangedColumns() throws {
        let log = StatementLog()
        let store = try Store(
            path: TestStore.temporaryPath(), entities: TestStore.entities,
            options: .init(statementObserver: log.observer))
        try store.write { try $0.insert(Person(id: 1, name: "Ada", age: 36)) }
        log.reset()
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.age = 37
        }
        #expect(log.writes == ["UPDATE \"Person\" SET \"age\" = ?, \"_digest\" = ? WHERE \"_pk\" = ?"])
    }

    @Test func assigningAnUnchangedValueWritesNothing() throws {
        let log = StatementLog()
        let store = try Store(
            path: TestStore.temporaryPath(), entities: TestStore.entities,
            options: .init(statementObserver: log.observer))
        try store.write { try $0.insert(Person(id: 1, name: "Ada", age: 36)) }
        log.reset()
        let changed = try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.name = "Ada"
            ada.age = 36
            return ada.entityState.hasChanges || context.hasChanges
        }
        #expect(changed == false)
        #expect(log.writes.isEmpty)
    }

    @Test func identityMapReturnsOneObjectPerRow() throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        try store.write { context in
            try context.insert(Person(id: 1, name: "Ada"))
            let first = try #require(try context.object(Person.self, identity: 1))
            let second = try #require(try context.fetch(Person.self).first)
            #expect(first === second)
        }
    }

    /// An object whose identity attribute changes answers to its new identity only: decoding its old identity
    /// afterwards finds the store's row for it, or creates one, never the renamed object.
    @Test func changingAnIdentityMovesTheObjectToItsNewIdentity() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        let decoder = StoreDecoder()
        try store.write { context in
            let ada = try decoder.decode(Person.self, from: Data(#"{"id": 1, "name": "Ada L"}"#.utf8), into: context)
            ada.id = 2
            let grace = try decoder.decode(Person.self, from: Data(#"{"id": 1, "name": "Grace"}"#.utf8), into: context)
            #expect(grace !== ada)
            #expect(try decoder.decode(Person.self, from: Data(#"{"id": 2}"#.utf8), into: context) === ada)
            ada.id = 3  // again, after a flush wrote id 2
            #expect(try decoder.decode(Person.self, from: Data(#"{"id": 3}"#.utf8), into: context) === ada)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "Grace"], ["3", "Ada L"]])
    }

    /// Lookups do not write pending changes first, except those that change their answer: a deleted object's
    /// row is still stored until the save, and must not come back as that object.
    @Test func decodingTheIdentityOfAnObjectDeletedBeforeTheSaveCreatesANewOne() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        try store.write { context in
            let ada = try #require(try context.fetch(Person.self, where: \.id == 1).first)
            try context.delete(ada)
            let again = try StoreDecoder().decode([Person].self, from: Data(#"[{"id": 1, "name": "Alan"}]"#.utf8), into: context)
            #expect(again.first !== ada)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person") == [["1", "Alan"]])
    }

    /// A link made from the other side (a tag's people) before the person's tags are loaded: the batch load
    /// of the memberships a decode replaces must see it, or the replaced membership keeps it.
    @Test func aLinkMadeFromTheInverseSideIsReplacedByADecode() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            try context.insert(Person(id: 1, name: "Ada"))
            try context.insert(Tag(id: 1, label: "one"))
            try context.insert(Tag(id: 2, label: "two"))
        }
        try store.write { context in
            let ada = try #require(try context.fetch(Person.self, where: \.id == 1).first)
            let one = try #require(try context.fetch(Tag.self, where: \.id == 1).first)
            one.people.insert(ada)
            _ = try StoreDecoder().decode([Person].self, from: Data(#"[{"id": 1, "tags": [2]}]"#.utf8), into: context)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT t.id FROM Person_tags j JOIN Tag t ON t._pk = j.target") == [["2"]])
    }

    /// The same in an empty store, where the context answers identity lookups without asking the store.
    @Test func renamesAndDeletesInAnEmptyStoreKeepIdentitiesRight() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        let decoder = StoreDecoder()
        try store.write { context in
            let ada = try decoder.decode(Person.self, from: Data(#"{"id": 1, "name": "Ada"}"#.utf8), into: context)
            ada.id = 2
            let grace = try decoder.decode(Person.self, from: Data(#"{"id": 1, "name": "Grace"}"#.utf8), into: context)
            #expect(grace !== ada)
            #expect(try decoder.decode(Person.self, from: Data(#"{"id": 2}"#.utf8), into: context) === ada)
            try context.delete(ada)
            let again = try decoder.decode(Person.self, from: Data(#"{"id": 2, "name": "Alan"}"#.utf8), into: context)
            #expect(again !== ada)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "Grace"], ["2", "Alan"]])
    }

    @Test func identityStaysUniqueAcrossContexts() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        let error = try #require(throws: StoreError.self) {
            try store.write { try $0.insert(Person(id: 1, name: "Impostor")) }
        }
        #expect(error.code == .identityConflict)
        #expect(error.entity == "Person")
        #expect(error.message.contains("id = 1"))
        #expect(try RawDatabase(path).rows("SELECT name FROM Person") == [["Ada"]])
    }

    @Test func anIdentityConflictInsideAMultiRowInsertNamesTheRightObject() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1_010, name: "stored")) }
        let error = try #require(throws: StoreError.self) {
            try store.write { context in
                for id in 1_000..<1_040 { try context.insert(Person(id: id)) }  // rows are inserted 32 at a time
            }
        }
        #expect(error.code == .identityConflict)
        #expect(error.message.hasPrefix("Person with identity id = 1010 already exists"))
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person") == [["1010", "stored"]])
        // Without conflict, 40 rows land (one 32-row statement and 8 single rows).
        try store.write { context in
            for id in 2_000..<2_040 { try context.insert(Person(id: id, age: id)) }
        }
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Person WHERE id >= 2000 AND age = id") == "40")
    }

    @Test func aThrowInsideWriteLeavesTheFileUnchanged() throws {
        struct Abort: Error {}
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        #expect(throws: Abort.self) {
            try store.write { context in
                try context.insert(Person(id: 2, name: "Grace"))
                try context.object(Person.self, identity: 1)?.name = "Changed"
                try context.save()  // written inside the transaction, then rolled back
                throw Abort()
            }
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person") == [["1", "Ada"]])
    }

    @Test func reopeningFindsTheData() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: TestStore.entities)
            try store.write { try $0.insert(Person(id: 7, name: "Ada", age: 36)) }
        }
        let store = try Store(path: path, entities: TestStore.entities)
        let name = try store.read { try $0.object(Person.self, identity: 7)?.name }
        #expect(name == "Ada")
    }

    @Test func readContextRefusesChanges() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        let error = try #require(throws: StoreError.self) {
            try store.read { try $0.insert(Person(id: 1)) }
        }
        #expect(error.code == .readOnly)
        #expect(error.description == "StoreError.readOnly: cannot insert in a read-only context; use store.write { … }")
    }

    @Test func unknownEntityIsAStoreError() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: [Tag.self])
        // Tag reaches Person through Tag.people, so use an entity outside that graph.
        let error = try #require(throws: StoreError.self) {
            try store.write { try $0.insert(Membership(team: "a", user: 1, role: "x")) }
        }
        #expect(error.code == .unknownEntity)
    }

    @Test func compositeIdentityFetchesByAllValues() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Membership.self])
        try store.write { context in
            try context.insert(Membership(team: "red", user: 1, role: "owner"))
            try context.insert(Membership(team: "red", user: 2, role: "member"))
            try context.insert(Membership(team: "blue", user: 1, role: "member"))
        }
        let role = try store.read { try $0.object(Membership.self, identity: ["red", 2])?.role }
        #expect(role == "member")
        let missing = try store.read { try $0.object(Membership.self, identity: ["blue", 2]) == nil }
        #expect(missing)
        let arity = try #require(throws: StoreError.self) {
            try store.read { _ = try $0.object(Membership.self, identity: 1) }
        }
        #expect(arity.code == .invalidObject)
        #expect(try RawDatabase(path).value("SELECT group_concat(name) FROM pragma_index_info('Membership_identity')") == "team,user")
        let duplicate = try #require(throws: StoreError.self) {
            try store.write { try $0.insert(Membership(team: "red", user: 1, role: "again")) }
        }
        #expect(duplicate.code == .identityConflict)
    }
}

@Entity final class Membership {
    var team: String
    var user: Int
    var role: String
    static let identity = Identity(\Membership.team, \Membership.user)
    init(team: String, user: Int, role: String) {
        self.team = team
        self.user = user
        self.role = role
    }
}

@Suite struct ForgetObjectsTests {
    @Test func savingAndForgettingFreesObjectsAndKeepsTheData() throws {
        final class Weak: @unchecked Sendable { weak var person: Person? }
        let reference = Weak()
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            do {
                let ada = Person(id: 1, name: "Ada")
                try context.insert(ada)
                ada.country = Country(code: "GB", name: "United Kingdom")
                reference.person = ada
            }
            try context.saveAndForgetObjects()
            #expect(reference.person == nil)
            #expect(context.registeredObjectCount == 0)
            // Fetched again, with its relationship.
            #expect(try context.object(Person.self, identity: 1)?.country?.code == "GB")
        }
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Person") == "1")
    }
}
