import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// The importer's filter of inserted identities may say "maybe" wrongly (a query follows), never "no" wrongly.
@Suite struct IdentityFilterTests {
    private func key(_ value: Int) -> Context.IdentityKey { Context.IdentityKey(single: .integer(Int64(value))) }

    @Test func noFalseNegativesAndFewFalsePositivesAcrossGrowth() {
        let filter = Context.IdentityFilter(expectedCount: 1 << 16)  // grows twice past its first layer
        let inserted = 200_000
        for value in 0..<inserted { filter.insert(key(value * 7)) }
        #expect((0..<inserted).allSatisfy { filter.mayContain(key($0 * 7)) })
        let probes = 100_000
        let falsePositives = (0..<probes).filter { filter.mayContain(key($0 * 7 + 3)) }.count
        #expect(Double(falsePositives) / Double(probes) < 0.05, "\(falsePositives) false positives")
    }

    @Test func compositeAndTextKeys() {
        let filter = Context.IdentityFilter(expectedCount: 1_000)
        let keys = (0..<1_000).map { Context.IdentityKey([.text("team-\($0)"), .integer(Int64($0))]) }
        for key in keys { filter.insert(key) }
        #expect(keys.allSatisfy(filter.mayContain))
        let absent = (0..<1_000).map { Context.IdentityKey([.text("other-\($0)"), .integer(Int64($0))]) }
        #expect(absent.filter(filter.mayContain).count < 50)
    }
}
