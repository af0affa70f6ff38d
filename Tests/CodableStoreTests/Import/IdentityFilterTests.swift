import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// The importer's filter of inserted identities may say "maybe" wrongly (a query follows), never "no" wrongly.
@Suite struct IdentityFilterTests {
    private func key(_ value: Int) -> Context.IdentityKey { Context.IdentityKey(single: .integer(Int64(value))) }

    @Test func noFalseNegativesAndFewFalsePositivesAcrossGrowth() {
        let filter = IdentityFilter(expectedCount: 1 << 16)  // grows twice past its first layer
        let inserted = 200_000
        // Integers too sparse for the bitmap (one in 7,919): the Bloom filter holds them.
        for value in 0..<inserted { filter.insert(key(value * 7_919)) }
        #expect(!filter.isExact)
        #expect((0..<inserted).allSatisfy { filter.mayContain(key($0 * 7_919)) })
        let probes = 100_000
        let falsePositives = (0..<probes).filter { filter.mayContain(key($0 * 7_919 + 3)) }.count
        #expect(Double(falsePositives) / Double(probes) < 0.05, "\(falsePositives) false positives")
    }

    /// Keys at both ends of Int64 (the fuzzer's `[{"id":-9223372036854775808},{"id":4},…]`): the offset of the second
    /// from the bitmap's first key overflows; the filter turns to its layers instead of indexing outside the bitmap.
    @Test func keysAtBothEndsOfTheIntegersTurnTheBitmapIntoLayers() {
        let filter = IdentityFilter(expectedCount: 0)
        let keys: [Int64] = [.min, 4, 5, .max, .min + 1, -1]
        for (position, value) in keys.enumerated() {
            filter.insert(Context.IdentityKey(single: .integer(value)))
            #expect(keys[...position].allSatisfy { filter.mayContain(Context.IdentityKey(single: .integer($0))) })
        }
        #expect(!filter.isExact)
        // Near one end only, the bitmap holds them exactly.
        let exact = IdentityFilter(expectedCount: 0)
        for value: Int64 in [.max, .max - 1, .max - 4_000] { exact.insert(Context.IdentityKey(single: .integer(value))) }
        #expect(exact.isExact)
        #expect(exact.mayContain(Context.IdentityKey(single: .integer(.max - 1))))
        #expect(!exact.mayContain(Context.IdentityKey(single: .integer(.max - 2))))
    }

    @Test func staysWithinItsBudgetWithoutFalseNegatives() {
        // From 80 KiB it would double to 560 KiB for 300,000 keys; 256 KiB holds 210,000 at ~1%.
        let budget = 256 << 10
        let filter = IdentityFilter(expectedCount: 0, maximumBytes: budget)
        // In no order, over the range of 32-bit integers: keys the bits answer, not the range of those inserted.
        let inserted = (0..<300_000).map { ($0 &* 0x9E37_79B1) & 0xFFFF_FFFF }
        for value in inserted { filter.insert(key(value)) }
        #expect(filter.byteCount <= budget)
        #expect(filter.byteCount > budget / 2, "\(filter.byteCount) bytes")
        #expect(inserted.allSatisfy { filter.mayContain(key($0)) })
        // Past its budget, false positives rise (about 11% here), but it still rules out most keys.
        let members = Set(inserted)
        let probes = (0..<100_000).map { ($0 &* 0x85EB_CA77 &+ 12_345) & 0xFFFF_FFFF }.filter { !members.contains($0) }
        let falsePositives = probes.filter { filter.mayContain(key($0)) }.count
        #expect(Double(falsePositives) / Double(probes.count) < 0.5, "\(falsePositives) false positives")
    }

    @Test func sizedFromTheExpectedCountWithinItsBudget() {
        // Made with the first key that is not an integer.
        func bytes(expecting count: Int, maximumBytes: Int = IdentityFilter.defaultMaximumBytes) -> Int {
            let filter = IdentityFilter(expectedCount: count, maximumBytes: maximumBytes)
            #expect(filter.byteCount == 0)
            filter.insert(Context.IdentityKey(single: .text("a")))
            return filter.byteCount
        }
        #expect(bytes(expecting: 200_000) == 250_048)
        #expect(bytes(expecting: 100_000_000) == IdentityFilter.defaultMaximumBytes)
        #expect(bytes(expecting: 100_000_000, maximumBytes: 1 << 20) == 1 << 20)
    }

    @Test func denseIntegersInAnyOrderAreExactInABitmap() {
        // 1...200,000 without every tenth, in a scrambled order (7,919 is prime to 200,000).
        let values = (0..<200_000).map { 1 + ($0 * 7_919) % 200_000 }.filter { $0 % 10 != 0 }
        let filter = IdentityFilter(expectedCount: 0)
        for value in values { filter.insert(key(value)) }
        #expect(filter.isExact)
        #expect(filter.byteCount <= 10 * 65_536 / 8, "\(filter.byteCount) bytes")  // at most the smallest layer
        #expect(values.allSatisfy { filter.mayContain(key($0)) })
        #expect(!(0...200_001).contains { $0 % 10 == 0 && filter.mayContain(key($0)) })
    }

    @Test func onlyTheRangesWithKeysTakeMemory() {
        let filter = IdentityFilter(expectedCount: 1_000_000)
        for value in 0..<100 {
            filter.insert(key(1_000_000 + value))
            filter.insert(key(value))
        }
        #expect(filter.isExact)
        // Two chunks of 512 bytes and a list of 245 places (0...1,000,099 in chunks of 4,096), where one array over
        // the range would take 125 KB.
        #expect(filter.byteCount == 2 * 512 + 245 * 8)
        #expect((0..<100).allSatisfy { filter.mayContain(key($0)) && filter.mayContain(key(1_000_000 + $0)) })
        #expect(![100, 4_096, 500_000, 999_999, 1_000_100].contains { filter.mayContain(key($0)) })
    }

    @Test(arguments: 0..<24)
    func answersAsASetOfTheKeysInsertedWould(seed: UInt64) {
        // Runs of keys of several shapes, in random order: dense around a random start (either side of zero), sparse,
        // now and then a text key; small budgets, so that the bitmap widens, fills and turns into the filter.
        // Deterministic (SplitMix64), so that a failing seed can be replayed.
        var random = SyncOracleTests.SeededGenerator(seed: seed)
        let filter = IdentityFilter(
            expectedCount: Int.random(in: 0...50_000, using: &random), maximumBytes: 1 << Int.random(in: 10...16, using: &random))
        var inserted = Set<Context.IdentityKey>()
        let start = Int64.random(in: -100_000...100_000, using: &random)
        for _ in 0..<Int.random(in: 1...8, using: &random) {
            let spread: Int64 = Bool.random(using: &random) ? 20_000 : 5_000_000
            for _ in 0..<Int.random(in: 1...5_000, using: &random) {
                let key = Int.random(in: 0..<50, using: &random) == 0
                    ? Context.IdentityKey(single: .text("k\(Int.random(in: 0..<1_000, using: &random))"))
                    : Context.IdentityKey(single: .integer(start &+ Int64.random(in: -spread...spread, using: &random)))
                filter.insert(key)
                inserted.insert(key)
            }
            #expect(filter.byteCount <= filter.maximumBytes, "seed \(seed): \(filter.byteCount) bytes")
        }
        #expect(inserted.allSatisfy { filter.mayContain($0) }, "seed \(seed): a key inserted is ruled out")
        let probes = (0..<20_000).map { _ in
            Context.IdentityKey(single: .integer(start &+ Int64.random(in: -6_000_000...6_000_000, using: &random)))
        }
        let wrong = probes.filter { !inserted.contains($0) && filter.mayContain($0) }.count
        if filter.isExact {
            #expect(wrong == 0, "seed \(seed): the bitmap said maybe for \(wrong) keys never inserted")
        }
    }

    @Test func integersInEitherOrderWidenTheBitmapWithinItsBudget() {
        let ascending = IdentityFilter(expectedCount: 0, maximumBytes: 64 << 10)
        let descending = IdentityFilter(expectedCount: 0, maximumBytes: 64 << 10)
        for value in 0..<500_000 {
            ascending.insert(key(value))
            descending.insert(key(-value))
        }
        for filter in [ascending, descending] {
            #expect(filter.isExact)
            #expect(filter.byteCount <= 64 << 10, "\(filter.byteCount) bytes")
        }
        #expect((0..<500_000).allSatisfy { ascending.mayContain(key($0)) && descending.mayContain(key(-$0)) })
        // 64 KiB holds 126 chunks of 4,096 integers (516,096): the next ones make the filter (which its budget then
        // bounds).
        for value in 500_000..<600_000 { ascending.insert(key(value)) }
        #expect(!ascending.isExact)
        #expect(ascending.byteCount <= 64 << 10, "\(ascending.byteCount) bytes")
        #expect((0..<600_000).allSatisfy { ascending.mayContain(key($0)) })
    }

    @Test func aKeyTheBitmapCannotHoldMakesTheFilterWithTheBitmapsKeys() {
        let text = IdentityFilter(expectedCount: 0)
        let sparse = IdentityFilter(expectedCount: 0)
        let extremes = IdentityFilter(expectedCount: 0)
        for value in 1...1_000 {
            text.insert(key(value))
            sparse.insert(key(value))
        }
        #expect(text.isExact && sparse.isExact)
        text.insert(Context.IdentityKey(single: .text("a")))
        sparse.insert(key(10_000_000_000))
        extremes.insert(Context.IdentityKey(single: .integer(.max)))
        #expect(extremes.isExact)
        #expect(extremes.mayContain(Context.IdentityKey(single: .integer(.max))))
        extremes.insert(Context.IdentityKey(single: .integer(.min)))
        #expect(!text.isExact && !sparse.isExact && !extremes.isExact)
        #expect((1...1_000).allSatisfy { text.mayContain(key($0)) && sparse.mayContain(key($0)) })
        #expect(text.mayContain(Context.IdentityKey(single: .text("a"))))
        #expect(sparse.mayContain(key(10_000_000_000)))
        #expect(extremes.mayContain(Context.IdentityKey(single: .integer(.max))))
        #expect(extremes.mayContain(Context.IdentityKey(single: .integer(.min))))
    }

    @Test func integersOutsideTheRangeInsertedAreRuledOutWithoutBits() {
        // A filter of one block: its bits say "maybe" for nearly every key once a few hundred are in.
        let filter = IdentityFilter(expectedCount: 0, maximumBytes: 64)
        #expect(!filter.mayContain(key(5)))  // nothing inserted
        for value in 1_000...2_000 { filter.insert(key(value)) }
        #expect((1_000...2_000).allSatisfy { filter.mayContain(key($0)) })
        #expect(!filter.mayContain(key(999)))
        #expect(!filter.mayContain(key(2_001)))
        #expect(!filter.mayContain(key(Int.min)))
        #expect(filter.mayContain(key(1_500)))
        // Only single integers: other keys are answered by the bits alone.
        filter.insert(Context.IdentityKey([.integer(1), .integer(2)]))
        #expect(filter.mayContain(Context.IdentityKey([.integer(1), .integer(2)])))
        #expect(!filter.mayContain(key(3_000)))
        let text = IdentityFilter(expectedCount: 0)
        text.insert(Context.IdentityKey(single: .text("a")))
        #expect(text.mayContain(Context.IdentityKey(single: .text("a"))))
        #expect(!text.mayContain(key(0)))
    }

    @Test func compositeAndTextKeys() {
        let filter = IdentityFilter(expectedCount: 1_000)
        let keys = (0..<1_000).map { Context.IdentityKey([.text("team-\($0)"), .integer(Int64($0))]) }
        for key in keys { filter.insert(key) }
        #expect(keys.allSatisfy(filter.mayContain))
        let absent = (0..<1_000).map { Context.IdentityKey([.text("other-\($0)"), .integer(Int64($0))]) }
        #expect(absent.filter(filter.mayContain).count < 50)
    }
}
