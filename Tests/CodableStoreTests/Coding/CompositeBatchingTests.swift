import CodableStore
import Foundation
import Testing

/// Lookups of composite identities are batched whatever the model around them.
@Suite struct CompositeBatchingTests {
    /// 200 memberships as JSON, with teams and users mixed.
    private func records(_ range: Range<Int>, role: String = "member") -> Data {
        Data(("[" + range.map { #"{"team": "t\#($0 % 7)", "user": \#($0), "role": "\#(role)"}"# }.joined(separator: ",") + "]").utf8)
    }

    /// The SELECTs a decode of `count` records runs into a store opened with `entities`, after a first write.
    private func lookups(entities: [any EntityObject.Type], count: Int) throws -> [String] {
        let log = StatementLog()
        let store = try Store(path: TestStore.temporaryPath(), entities: entities, options: .init(statementObserver: log.observer))
        // Some rows of every entity, so that no table is empty (an empty table needs no lookup at all).
        try store.write { context in
            _ = try StoreDecoder().decode([Membership].self, from: records(0..<10), into: context)
            if entities.count > 1 {
                try context.insert(Person(id: 1))
                try context.insert(Tag(id: 1, label: "a"))
                try context.insert(Country(code: "GB", name: "United Kingdom"))
            }
        }
        log.reset()
        try store.write { _ = try StoreDecoder().decode([Membership].self, from: records(0..<count, role: "owner"), into: $0) }
        return log.all.filter { $0.hasPrefix("SELECT") }
    }

    @Test(arguments: [200, 1_000])
    func theLookupsDependNeitherOnRegistrationOrderNorOnOtherEntities(count: Int) throws {
        let alone = try lookups(entities: [Membership.self], count: count)
        let last = try lookups(entities: TestStore.entities + [Membership.self], count: count)
        let first = try lookups(entities: [Membership.self] + TestStore.entities.reversed(), count: count)
        #expect(alone.count == last.count, "\(alone) vs \(last)")
        #expect(alone.count == first.count, "\(alone) vs \(first)")
        // One identity lookup (the rest: the table's emptiness and its largest row id, once per write).
        #expect(alone.filter { $0.contains(" IN (VALUES ") }.count == 1, "\(alone)")
        #expect(alone.count == 3, "\(alone)")
        // Only the membership table is read.
        #expect(last.allSatisfy { $0.contains("\"Membership\"") }, "\(last)")
    }
}
