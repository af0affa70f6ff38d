import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

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

@Suite struct RowIDSetTests {
    @Test func denseAndSparseRowIDsAreKeptExactly() {
        var set = RowIDSet()
        var reference = Set<Int64>()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // Mostly dense row ids, some far apart (a chunk each), a few at the ends of the range.
            let rowID: Int64 =
                switch Int.random(in: 0..<10, using: &generator) {
                case 0: Int64.random(in: 1...Int64.max, using: &generator)
                case 1: [1, 65_535, 65_536, 65_537, Int64.max][Int.random(in: 0..<5, using: &generator)]
                default: Int64.random(in: 1...100_000, using: &generator)
                }
            #expect(set.insert(rowID) == reference.insert(rowID).inserted)
        }
        #expect(set.count == reference.count)
        for rowID in reference { #expect(set.contains(rowID)) }
        for rowID: Int64 in [0, 100_001, 1 << 40] where !reference.contains(rowID) { #expect(!set.contains(rowID)) }
        var visited: [Int64] = []
        set.forEach { visited.append($0) }
        #expect(visited == reference.sorted())
    }

    @Test func aMillionDenseRowIDsTakeSixteenChunks() {
        var set = RowIDSet()
        for rowID in Int64(1)...1_000_000 { set.insert(rowID) }
        #expect(set.count == 1_000_000)
        #expect(set.byteCount == 16 * 8_192)
        #expect(!set.contains(1_000_001))
    }
}
