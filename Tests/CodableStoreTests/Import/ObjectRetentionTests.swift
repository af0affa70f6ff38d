import Foundation
import IssuesModel
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// What an import writing behind keeps between batches: the objects used since the last eviction, and up to a limit
/// more of the entities records refer to, retained with their relationships unloaded.
@Suite struct ObjectRetentionTests {
    @Test func retentionKeepsTheObjectsUsedSinceTheLastEvictionAndRemembersThem() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            let (ada, bob, country, tag) = try ContextEvictionTests.populate(context)
            let retention = ObjectRetention()
            retention.didUse(ada, ada.entityState)
            retention.didUse(ada, ada.entityState)
            retention.didUse(tag, tag.entityState)
            retention.evict(from: context)
            #expect(context.registeredObjectCount == 2)
            #expect(bob.entityState.context == nil)
            #expect(country.entityState.context == nil)
            #expect(retention.wasKept(ada.entityState))
            #expect(retention.wasKept(tag.entityState))
            #expect(!retention.wasKept(bob.entityState))
            // Kept once, not used since: evicted at the next eviction, and no longer remembered as kept.
            retention.didUse(tag, tag.entityState)
            retention.evict(from: context)
            #expect(context.registeredObjectCount == 1)
            #expect(ada.entityState.context == nil)
            #expect(!retention.wasKept(ada.entityState))
            #expect(retention.wasKept(tag.entityState))
            #expect(retention.retainedCount == 0)
        }
    }

    static func use(_ objects: [any EntityObject], in retention: ObjectRetention) {
        for object in objects { retention.didUse(object, object.entityState) }
    }

    @Test func objectsOfReferredEntitiesNotUsedAgainAreRetainedWithTheirRelationshipsUnloaded() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            let (ada, bob, country, tag) = try ContextEvictionTests.populate(context)
            let person = try context.model.mapping(for: Person.self).index
            let retention = ObjectRetention(limit: 10, excluding: person)
            Self.use([ada, bob, country, tag], in: retention)
            retention.evict(from: context)
            #expect(context.registeredObjectCount == 4)

            Self.use([ada], in: retention)
            retention.evict(from: context)
            // Bob is of the records' own entity: let go. The country and the tag were not used, and are retained.
            #expect(bob.entityState.context == nil)
            #expect(country.entityState.context === context)
            #expect(tag.entityState.context === context)
            #expect(retention.retainedCount == 2)
            #expect(context.registeredObjectCount == 3)
            #expect(!retention.wasKept(country.entityState))
            // They reach no object any more: their relationships read the store again when used.
            let peopleOfCountry = try #require(Country.entityDescription.field(named: "people")).index
            let peopleOfTag = try #require(Tag.entityDescription.field(named: "people")).index
            #expect(country.entityState.unloadedRelationships.contains(peopleOfCountry))
            #expect(tag.entityState.unloadedRelationships.contains(peopleOfTag))
            // Ada's relationships reach retained objects: they stay as they were, without a read.
            let tagsOfPerson = try #require(Person.entityDescription.field(named: "tags")).index
            #expect(!ada.entityState.unloadedRelationships.contains(tagsOfPerson))
            #expect(ada.country === country)

            retention.evict(from: context)
            #expect(ada.entityState.context == nil)
            #expect(context.registeredObjectCount == 2)
            #expect(retention.retainedCount == 2)
            // A retained object answers its identity from memory; used again, it is kept as any used object (and
            // stays retained, in its place among the retained ones).
            #expect(try context.object(Tag.self, identity: 7) === tag)
            Self.use([tag], in: retention)
            retention.evict(from: context)
            #expect(retention.retainedCount == 2)
            #expect(retention.wasKept(tag.entityState))
            #expect(!retention.wasKept(country.entityState))
            #expect(context.registeredObjectCount == 2)
            // Its relationship reads the store, where Ada and Bob are (as new objects: they were let go).
            #expect(Set(tag.people.map(\.id)) == [1, 2])
            #expect(!tag.people.contains { $0 === ada })
        }
    }

    @Test func pastTheLimitTheObjectsRetainedLongestGoFirst() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            let (ada, bob, country, tag) = try ContextEvictionTests.populate(context)
            let retention = ObjectRetention(limit: 1, excluding: try context.model.mapping(for: Person.self).index)
            Self.use([ada, bob, country, tag], in: retention)
            retention.evict(from: context)
            Self.use([tag], in: retention)
            retention.evict(from: context)
            // The country, kept from the batch before, is retained.
            #expect(retention.retainedCount == 1)
            #expect(country.entityState.context === context)
            retention.evict(from: context)
            // Then the tag is too: one over the limit, and the country, retained first, goes.
            #expect(retention.retainedCount == 1)
            #expect(country.entityState.context == nil)
            #expect(tag.entityState.context === context)
            #expect(context.registeredObjectCount == 1)
            // Looked up again, the country is read from the store into a new object.
            let again = try #require(try context.object(Country.self, identity: "uk"))
            #expect(again !== country)
            #expect(again.name == "United Kingdom")
        }
    }

    @Test func anObjectWithUnsavedChangesIsNotRetained() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            let (_, _, country, tag) = try ContextEvictionTests.populate(context)
            tag.label = "changed"
            #expect(!context.prepareForRetention(tag, tag.entityState))
            let peopleOfTag = try #require(Tag.entityDescription.field(named: "people")).index
            #expect(!tag.entityState.unloadedRelationships.contains(peopleOfTag))
            #expect(context.prepareForRetention(country, country.entityState))
        }
    }

    /// Users recur across the dump: retained, they are looked up once or twice instead of in most batches, and the
    /// store ends the same whatever the limit (one forces an object out at almost every batch).
    @Test(arguments: [1, 3])
    func anImportRetainingUsersLooksThemUpLessAndEndsInTheSameStore(batchSize: Int) throws {
        let dump = try ImportTests.dump(count: 600, duplicates: 0.3)
        var contents: [Int: [[String]]] = [:]
        var userLookups: [Int: Int] = [:]
        for limit in [0, 1, 16_384] {
            let profiled = try ProfiledStore()
            let (path, store) = (profiled.path, profiled.store)
            var options = ImportTests.options(batchSize: batchSize)
            options.retainedObjectLimit = limit
            options.rowCacheKiB = 0  // every lookup a query (RowCacheTests covers the cache)
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)  // everything stored
            contents[limit] = try ImportTests.contents(path)
            userLookups[limit] = profiled.userLookups
            #expect(try RawDatabase(path).value("SELECT count(*) FROM User") == "40")
        }
        #expect(contents[1] == contents[0])
        #expect(contents[16_384] == contents[0])
        // 600 records of 40 users: without retention most batches look users up, with it only the first ones.
        let without = try #require(userLookups[0])
        let with = try #require(userLookups[16_384])
        #expect(without > 100 / batchSize)
        #expect(with * 4 < without, "lookups of users: \(with) retaining, \(without) not")
    }
}

/// The verdict on retaining an entity: kept while retained objects come back, given up when most are let go unused.
@Suite struct RetentionVerdictTests {
    /// `tagCount` tags (600), all used in a first batch unless not `warm`; each batch looks up 20 of them (`pick`) as
    /// an import would; returns whether retention of tags was given up, how many objects the context held at the end
    /// and at most, and how many of the tags `inUse` it held.
    static func run(
        batches: Int, limit: Int, tagCount: Int = 600, warm: Bool = true, inUse: Range<Int> = 0..<0,
        pick: (inout SyncOracleTests.SeededGenerator) -> Int
    ) throws -> (givenUp: Bool, held: Int, mostHeld: Int, heldInUse: Int) {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        return try store.write { context in
            let tags = (0..<tagCount).map { Tag(id: $0, label: "t\($0)") }
            for tag in tags { try context.insert(tag) }
            try context.save()
            let tagEntity = try context.model.mapping(for: Tag.self).index
            let retention = ObjectRetention(limit: limit, excluding: try context.model.mapping(for: Person.self).index)
            if warm { ObjectRetentionTests.use(tags, in: retention) }
            retention.evict(from: context)
            var random = SyncOracleTests.SeededGenerator(seed: 11)
            var mostHeld = 0
            for _ in 0..<batches {
                for _ in 0..<20 {
                    // As the decoder does: by the identity index, which answers retained objects from memory.
                    let key = Context.IdentityKey(single: .integer(Int64(pick(&random))))
                    let tag = try #require(try context.object(entity: tagEntity, identity: key))
                    retention.didUse(tag, tag.entityState)
                }
                retention.evict(from: context)
                #expect(context.registeredObjectCount <= limit + 20)
                mostHeld = max(mostHeld, context.registeredObjectCount)
            }
            let heldInUse = inUse.count { id in
                context.holdsObject(entity: tagEntity, key: Context.IdentityKey(single: .integer(Int64(id))))
            }
            return (retention.hasGivenUp(tagEntity), context.registeredObjectCount, mostHeld, heldInUse)
        }
    }

    @Test func objectsUsedAgainWithinTheLimitStayRetained() throws {
        // 40 tags in use, at random: all fit in the limit, and come back.
        let result = try Self.run(batches: 400, limit: 64, inUse: 0..<40) { Int($0.next() % 40) }
        #expect(!result.givenUp)
        #expect(result.heldInUse == 40)
    }

    @Test func objectsMostlyLetGoUnusedEndRetention() throws {
        // 600 tags at random for a limit of 64: a retained tag is let go unused nine times in ten.
        let result = try Self.run(batches: 400, limit: 64) { Int($0.next() % 600) }
        #expect(result.givenUp)
        // Given up: only the last batch's tags are held.
        #expect(result.held <= 20)
    }

    /// With a limit of 1,024, the early verdict watches 256 uses once 256 objects are retained: 20,000 tags at random
    /// (one in forty retained) are given up before the retained ones fill the limit.
    @Test func tooManyObjectsForTheLimitEndRetentionEarly() throws {
        let result = try Self.run(batches: 200, limit: 1_024, tagCount: 20_000, warm: false) { Int($0.next() % 20_000) }
        #expect(result.givenUp)
        #expect(result.mostHeld < 700, "held \(result.mostHeld) at most")
        #expect(result.held <= 20)
    }

    /// 1,500 tags at random for a limit of 1,024 (under twice the limit): retained past the early verdict, up to the
    /// limit.
    @Test func objectsThatMostlyFitPassTheEarlyVerdict() throws {
        let result = try Self.run(batches: 300, limit: 1_024, tagCount: 1_500, warm: false, inUse: 0..<1_500) {
            Int($0.next() % 1_500)
        }
        #expect(!result.givenUp)
        #expect(result.mostHeld > 1_000)
        #expect(result.heldInUse > 1_000)
    }
}

/// The retention's table of tickets by state (a hash table of its own, with deletion by moving entries back) against a
/// dictionary, over seeded random sequences of sets, overwrites and removals that make it grow and wrap around.
@Suite struct RetentionTicketsTests {
    @Test(arguments: 0..<16 as Range<UInt64>)
    func answersAsADictionaryWould(seed: UInt64) {
        var random = SyncOracleTests.SeededGenerator(seed: seed)
        // Few states, so that sets, overwrites and removals meet the same keys; up to all of them at once (growth).
        let states = (0..<Int.random(in: 8...300, using: &random)).map { _ in EntityState() }
        var tickets = ObjectRetention.Tickets()
        var expected: [ObjectIdentifier: UInt32] = [:]
        for step in 0..<4_000 {
            let state = states.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let ticket = UInt32.random(in: 1...UInt32.max, using: &random)
                tickets[state] = ticket
                expected[ObjectIdentifier(state)] = ticket
            case 5..<8:
                tickets[state] = 0
                expected[ObjectIdentifier(state)] = nil
            default:
                break
            }
            if step % 97 == 0 || step == 3_999 {
                for state in states where tickets[state] != expected[ObjectIdentifier(state)] ?? 0 {
                    Issue.record("seed \(seed), step \(step): \(tickets[state]) for a state whose ticket is \(expected[ObjectIdentifier(state)] ?? 0)")
                    return
                }
            }
        }
    }

    @Test func removingEveryEntryLeavesNone() {
        let states = (0..<1_000).map { _ in EntityState() }
        var tickets = ObjectRetention.Tickets()
        for (index, state) in states.enumerated() { tickets[state] = UInt32(index + 1) }
        #expect(states.enumerated().allSatisfy { tickets[$1] == UInt32($0 + 1) })
        for state in states.reversed() where Int(tickets[state]) % 2 == 0 { tickets[state] = 0 }
        #expect(states.enumerated().allSatisfy { tickets[$1] == ($0 % 2 == 0 ? UInt32($0 + 1) : 0) })
        for state in states { tickets[state] = 0 }
        #expect(states.allSatisfy { tickets[$0] == 0 })
    }
}
