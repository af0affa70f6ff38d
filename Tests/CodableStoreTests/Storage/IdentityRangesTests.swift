import Testing

@testable import CodableStoreCore

/// Which of a lookup's identities go by range (`IdentityRanges`): dense runs of integers, every other key one by one,
/// none lost or asked twice.
@Suite struct IdentityRangesTests {
    private func keys(_ values: [Int64]) -> [Context.IdentityKey] { values.map { Context.IdentityKey(single: .integer($0)) } }
    private func integers(_ keys: [Context.IdentityKey]) -> [Int64] { keys.map { $0.singleInteger! }.sorted() }

    @Test func aDenseRunGoesByRangeAndTheScatteredKeysOneByOne() throws {
        // 1,000-1,199 without every tenth (an API dump's new records, the repeated ones gone), in shuffled order, with
        // older ids repeated among them and a duplicate.
        let run = (1_000..<1_200).filter { $0 % 10 != 3 }.map(Int64.init)
        let scattered: [Int64] = [7, 450, 90_000, -5]
        let ranges = try #require(IdentityRanges(keys((run + scattered + [1_005]).shuffled())))
        #expect(ranges.runs.count == 1)
        #expect(ranges.runs[0].first == 1_000 && ranges.runs[0].last == 1_199)
        #expect(Array(ranges.runs[0].keys) == run)
        #expect(integers(ranges.others) == scattered.sorted())
        // The run passes over the rows of its range that were not asked for.
        #expect(ranges.runs[0].contains(sorted: 1_004))
        #expect(!ranges.runs[0].contains(sorted: 1_003))
        #expect(!ranges.runs[0].contains(sorted: 999) && !ranges.runs[0].contains(sorted: 1_200))
    }

    @Test func runsEndAtAWideGapOrWhenTooSparse() throws {
        // Two runs 100 apart; then keys 16 apart (each gap allowed, but the span would be 16 times the keys).
        let first = (0..<100).map(Int64.init)
        let second = (200..<300).map(Int64.init)
        let sparse = (0..<100).map { 10_000 + Int64($0) * 16 }
        let ranges = try #require(IdentityRanges(keys(first + second + sparse)))
        #expect(ranges.runs.map { [$0.first!, $0.last!] } == [[0, 99], [200, 299]])
        #expect(integers(ranges.others) == sparse)
        // A range returns at most one row not asked for per key asked.
        for run in ranges.runs { #expect(run.last! - run.first! + 1 <= 2 * Int64(run.keys.count)) }
    }

    @Test func fewKeysTextKeysAndNoRunGoOneByOne() {
        #expect(IdentityRanges(keys((0..<63).map(Int64.init))) == nil)  // under the shortest run
        #expect(IdentityRanges(keys((0..<1_000).map { Int64($0) * 1_000 })) == nil)  // no run
        let text = (0..<100).map { Context.IdentityKey(single: .text("\($0)")) }
        #expect(IdentityRanges(text) == nil)
        let composite = (0..<100).map { Context.IdentityKey([.integer(Int64($0)), .integer(1)]) }
        #expect(IdentityRanges(composite) == nil)
    }

    @Test func keysAtBothEndsOfTheIntegersMakeNoRangeAcrossThem() throws {
        let low = (0..<64).map { Int64.min + Int64($0) }
        let high = (0..<64).map { Int64.max - 63 + Int64($0) }
        let ranges = try #require(IdentityRanges(keys(high + low)))
        #expect(ranges.runs.map { [$0.first!, $0.last!] } == [[Int64.min, Int64.min + 63], [Int64.max - 63, Int64.max]])
        #expect(ranges.others.isEmpty)
    }
}
