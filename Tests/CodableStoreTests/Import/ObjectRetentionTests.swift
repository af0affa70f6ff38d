import Foundation
import Testing

@testable import CodableStore

/// What an import writing behind keeps between batches: the objects used since the last eviction.
@Suite struct ObjectRetentionTests {
    @Test func retentionKeepsTheObjectsUsedSinceTheLastEvictionAndRemembersThem() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities)
        try store.write { context in
            let (ada, bob, country, tag) = try ContextEvictionTests.populate(context)
            let retention = ObjectRetention()
            retention.didUse(ada.entityState)
            retention.didUse(ada.entityState)
            retention.didUse(tag.entityState)
            retention.evict(from: context)
            #expect(context.registeredObjectCount == 2)
            #expect(bob.entityState.context == nil)
            #expect(country.entityState.context == nil)
            #expect(retention.wasKept(ada.entityState))
            #expect(retention.wasKept(tag.entityState))
            #expect(!retention.wasKept(bob.entityState))
            // Kept once, not used since: evicted at the next eviction, and no longer remembered as kept.
            retention.didUse(tag.entityState)
            retention.evict(from: context)
            #expect(context.registeredObjectCount == 1)
            #expect(ada.entityState.context == nil)
            #expect(!retention.wasKept(ada.entityState))
            #expect(retention.wasKept(tag.entityState))
        }
    }
}
