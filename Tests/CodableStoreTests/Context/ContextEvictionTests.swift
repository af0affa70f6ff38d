import Foundation
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// `Context.evictObjects(keeping:)`: what keeps an import with a writer thread flat in memory while the objects every
/// batch uses stay in memory (the import's `ObjectRetention` decides what is kept).
@Suite struct ContextEvictionTests {
    /// Ada (kept) and Bob (evicted) live in one country and share a tag; the country is kept, the tag is not.
    static func populate(_ context: Context) throws -> (ada: Person, bob: Person, country: Country, tag: Tag) {
        let country = Country(code: "uk", name: "United Kingdom")
        let tag = Tag(id: 7, label: "math")
        let ada = Person(id: 1, name: "Ada")
        let bob = Person(id: 2, name: "Bob")
        for object in [ada, bob] {
            try context.insert(object)
            object.country = country
            object.tags = [tag]
        }
        try context.save()
        return (ada, bob, country, tag)
    }

    @Test func evictedObjectsAreDetachedAndKeptOnesLoadWhatTheyLostFromTheStore() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            let (ada, bob, country, tag) = try Self.populate(context)
            let kept: Set<ObjectIdentifier> = [ObjectIdentifier(ada.entityState), ObjectIdentifier(country.entityState)]
            context.evictObjects { kept.contains(ObjectIdentifier($0)) }

            #expect(context.registeredObjectCount == 2)
            #expect(bob.entityState.context == nil)
            #expect(tag.entityState.context == nil)
            #expect(ada.entityState.context === context)
            // Among kept objects, relationships stay as they were, without a read.
            #expect(ada.country === country)
            // A relationship reaching an evicted object was unloaded: it reads the store again, into new objects.
            let tagsField = try #require(Person.entityDescription.field(named: "tags")).index
            #expect(ada.entityState.unloadedRelationships.contains(tagsField))
            let tags = ada.tags
            #expect(tags.map(\.id) == [7])
            #expect(tags.first !== tag)
            let people = country.people
            #expect(Set(people.map(\.id)) == [1, 2])
            #expect(people.contains { $0 === ada })
            #expect(!people.contains { $0 === bob })
            // An identity lookup of an evicted object goes to the store, and registers a new object.
            let bobAgain = try #require(try context.object(Person.self, identity: 2))
            #expect(bobAgain !== bob)
            #expect(bobAgain.name == "Bob")
            #expect(try context.object(Person.self, identity: 1) === ada)
        }
    }

    @Test func keptObjectsKeepTheirUnsavedChanges() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let (ada, bob, _, _) = try Self.populate(context)
            ada.name = "Ada Lovelace"
            let adaState = ObjectIdentifier(ada.entityState)
            context.evictObjects { ObjectIdentifier($0) == adaState }
            #expect(bob.entityState.context == nil)
            #expect(context.hasChanges)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Person ORDER BY id") == [["1", "Ada Lovelace"], ["2", "Bob"]])
    }
}
