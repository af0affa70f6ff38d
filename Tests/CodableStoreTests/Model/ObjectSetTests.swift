import Testing

@testable import CodableStore

/// `ObjectSet`: the set of objects by address that an import's bookkeeping inserts every used object into.
@Suite struct ObjectSetTests {
    final class Thing {}

    @Test func insertsEachObjectOnceAndFindsOnlyThoseInserted() {
        let things = (0..<10_000).map { _ in Thing() }  // grows from 16 slots many times over
        var set = ObjectSet()
        #expect(set.isEmpty)
        let firstInserts = things.prefix(6_000).map { set.insert($0) }
        let secondInserts = things.prefix(6_000).map { set.insert($0) }
        #expect(firstInserts.allSatisfy { $0 })
        #expect(!secondInserts.contains(true))
        #expect(set.count == 6_000)
        #expect(things.prefix(6_000).allSatisfy { set.contains($0) })
        #expect(!things.dropFirst(6_000).contains { set.contains($0) })
        // Against the standard library's set, by identity.
        let reference = Set(things.prefix(6_000).map(ObjectIdentifier.init))
        #expect(things.allSatisfy { set.contains($0) == reference.contains(ObjectIdentifier($0)) })
    }

    @Test func removeAllEmptiesItAndItFillsAgain() {
        let things = (0..<100).map { _ in Thing() }
        var set = ObjectSet(minimumCapacity: 100)
        for thing in things { set.insert(thing) }
        set.removeAll()
        #expect(set.count == 0)
        #expect(!things.contains { set.contains($0) })
        let inserted = set.insert(things[42])
        #expect(inserted)
        #expect(set.contains(things[42]))
        #expect(set.count == 1)
    }

    @Test func aCopyIsIndependent() {
        let (a, b) = (Thing(), Thing())
        var first = ObjectSet()
        first.insert(a)
        var second = first
        second.insert(b)
        #expect(first.contains(a) && !first.contains(b))
        #expect(second.contains(a) && second.contains(b))
    }
}
