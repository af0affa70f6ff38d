import Foundation
import Testing

@testable import CodableStoreCore
import CodableStore

/// `TrackedObject`: an object with its state read once and held unretained beside it. What makes that sound is that
/// the pair holds the object and the object holds its state: these tests let go of every other reference.
@Suite struct TrackedObjectTests {
    @Entity final class Pin {
        var id: Int = 0
        var label: String = ""
        static let identity = Identity(\Pin.id)
    }

    /// `count` pins inserted into `context`, each as a pair, with a weak reference to its state.
    private func tracked(in context: Context, count: Int) throws -> (pairs: [TrackedObject], states: [() -> EntityState?]) {
        var pairs: [TrackedObject] = []
        var states: [() -> EntityState?] = []
        for index in 0..<count {
            let pin = Pin()
            pin.id = index
            pin.label = "pin \(index)"
            try context.insert(pin)
            weak let state = pin.entityState
            states.append { state }
            pairs.append(TrackedObject(pin, pin.entityState))
        }
        return (pairs, states)
    }

    @Test func thePairKeepsItsObjectAndStateAliveAndLendsTheObjectsOwnState() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: [Pin.self])
        try store.write { context in
            var (pairs, states) = try tracked(in: context, count: 3)
            // The context holds the pins too (its registry, and its inserted objects until they are written): the
            // pairs are all that is left once it has written them and let go of them.
            try context.save()
            context.evictObjects { _ in false }
            #expect(context.registeredObjectCount == 0)
            for (position, pair) in pairs.enumerated() {
                #expect(states[position]() != nil)
                let pin = try #require(pair.object as? Pin)
                #expect(pin.id == position)
                pair.withState { state in
                    #expect(state === pin.entityState)
                    #expect(state.rowID > 0)
                }
                #expect(pair.state === pin.entityState)
            }
            // Each state goes with its pair's object, not before.
            pairs.removeFirst()
            #expect(states[0]() == nil)
            #expect(states[1]() != nil && states[2]() != nil)
            var seen: [Int] = []
            pairs.forEachBorrowed { object, state in
                #expect(state === object.entityState)
                seen.append((object as? Pin)?.id ?? -1)
            }
            #expect(seen == [1, 2])
            pairs.removeAll()
            #expect(states.allSatisfy { $0() == nil })
            states.removeAll()
        }
    }

    @Test func evictedObjectsLeaveTheContextAndTheIdentityIndexWithTheirStates() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: [Pin.self])
        try store.write { context in
            let pins = (0..<4).map { index in
                let pin = Pin()
                pin.id = index
                return pin
            }
            for pin in pins { try context.insert(pin) }
            try context.save()
            var evicted = TrackedObjects()
            evicted.append(pins[0], pins[0].entityState)
            evicted.append(pins[2], pins[2].entityState)
            var kept = TrackedObjects()
            kept.append(pins[1], pins[1].entityState)
            kept.append(pins[3], pins[3].entityState)
            context.evict(evicted, keeping: kept)
            #expect(context.registeredObjectCount == 2)
            // The kept pins answer from memory; the evicted ones come back from the store as new objects.
            #expect(try context.fetch(Pin.self, where: \.id == 1).first === pins[1])
            let again = try #require(try context.fetch(Pin.self, where: \.id == 0).first)
            #expect(again !== pins[0])
            #expect(again.entityState.rowID == pins[0].entityState.rowID)
        }
    }
}
