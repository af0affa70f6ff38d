import CodableStore
import CodableStoreTesting
import Foundation
import Testing

/// Prefetching relationships: one query per relationship for a list of objects, not one per object.
@Suite struct PrefetchTests {
    /// 40 people in 4 countries, each with 2 of 3 tags and 1 or 2 ordered attributes; person 40 has no country.
    static func seeded() throws -> FixtureStore {
        let fixture = try FixtureStore(entities: TestStore.entities)
        try fixture.store.write { context in
            let countries = (0..<4).map { Country(code: "c\($0)", name: "Country \($0)") }
            let tags = (0..<3).map { Tag(id: $0, label: "tag \($0)") }
            for id in 1...40 {
                let person = Person(id: id, name: "P\(id)")
                try context.insert(person)
                if id < 40 { person.country = countries[id % 4] }
                person.tags = [tags[id % 3], tags[(id + 1) % 3]]
                person.attributes = (0..<(1 + id % 2)).map { PersonAttribute(key: "k\($0)", value: "\(id)") }
            }
        }
        return fixture
    }

    /// What each person shows: country, sorted tags, attributes in order.
    static func rows(_ people: [Person]) -> [String] {
        people.map { person in
            "\(person.id) \(person.country?.code ?? "-") \(person.tags.map(\.id).sorted()) \(person.attributes.map(\.key))"
        }
    }

    @Test func aListWithThreeRelationshipsTakesFourQueries() throws {
        let fixture = try Self.seeded()
        let expected = try fixture.store.read { context in Self.rows(try context.fetch(Person.self, orderBy: [.ascending(\.id)])) }
        let rows = try fixture.statements.expectQueries(atMost: 4) {
            try fixture.store.read { context in
                let people = try context.fetch(Person.self, orderBy: [.ascending(\.id)], prefetching: [\.country, \.tags, \.attributes])
                return Self.rows(people)
            }
        }
        #expect(rows == expected)
        #expect(rows.count == 40)
        #expect(rows.last == "40 - [1, 2] [\"k0\"]")
        // Without prefetching, the same list reads each person's relationships one by one.
        let error = try #require(throws: FixtureError.self) {
            try fixture.statements.expectQueries(atMost: 4) {
                try fixture.store.read { context in Self.rows(try context.fetch(Person.self, orderBy: [.ascending(\.id)])) }
            }
        }
        // One for the list, one per country (each read once, then found in the context), and per person its tags
        // and its attributes: 1 + 4 + 40 + 40.
        #expect(error.message.hasPrefix("85 queries ran, over the budget of 4:"), "\(error.message.prefix(80))")
    }

    @Test func theInverseSideAndObjectsAlreadyInTheContextNeedNoExtraQueries() throws {
        let fixture = try Self.seeded()
        try fixture.store.read { context in
            let countries = try context.fetch(Country.self, orderBy: [.ascending(\.code)])
            let (_, statements) = try fixture.statements.statements {
                try context.prefetch([\Country.people], of: countries)
            }
            #expect(statements.count == 1)
            #expect(countries.map { $0.people.count } == [9, 10, 10, 10])
            // The people are in the context now: their country is the one already there, without a query.
            let (_, more) = try fixture.statements.statements {
                let people = countries.flatMap(\.people)
                try context.prefetch([\Person.country], of: people)
                #expect(people.allSatisfy { person in countries.contains { $0 === person.country } })
            }
            #expect(more.isEmpty)
        }
    }

    @Test func unsavedChangesWinAndAreSeenByThePrefetch() throws {
        let fixture = try Self.seeded()
        try fixture.store.write { context in
            let people = try context.fetch(Person.self, where: \.id <= 2, orderBy: [.ascending(\.id)])
            let elsewhere = Country(code: "new", name: "New")
            people[0].country = elsewhere  // loaded and changed in memory: left as it is
            try context.prefetch([\.country, \.tags], of: people)
            #expect(people[0].country === elsewhere)
            #expect(people[1].country?.code == "c2")
            #expect(people[1].tags.map(\.id).sorted() == [0, 2])
        }
    }

    @Test func aKeyPathThatIsNotARelationshipIsRefused() throws {
        let fixture = try Self.seeded()
        let error = try #require(throws: StoreError.self) {
            try fixture.store.read { context in _ = try context.fetch(Person.self, prefetching: [\.name]) }
        }
        #expect(error.code == .invalidQuery)
        #expect(error.message.hasPrefix("prefetching "), "\(error)")
        #expect(error.message.hasSuffix(", which is not a relationship of Person"), "\(error)")
    }
}
