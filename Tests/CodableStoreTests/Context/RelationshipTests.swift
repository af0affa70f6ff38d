import CodableStore
import Foundation
import Testing

@Suite struct RelationshipTests {
    /// Builds a small graph through every kind of relationship, reopens the store, and reads it back.
    @Test func relationshipsRoundTripThroughAReopen() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: TestStore.entities)
            try store.write { context in
                let france = Country(code: "FR", name: "France")
                let ada = Person(id: 1, name: "Ada")
                let grace = Person(id: 2, name: "Grace")
                let swift = Tag(id: 10, label: "swift")
                let sqlite = Tag(id: 11, label: "sqlite")
                try context.insert(ada)
                try context.insert(grace)
                ada.country = france  // inserts france too
                grace.country = france
                ada.tags = [swift, sqlite]
                grace.tags = [swift]
                ada.attributes = [
                    PersonAttribute(key: "b", value: "2"), PersonAttribute(key: "a", value: "1"),
                    PersonAttribute(key: "c", value: "3"),
                ]
                // Inverses are kept in memory on both sides.
                #expect(france.people == [ada, grace])
                #expect(swift.people == [ada, grace])
                #expect(ada.attributes.allSatisfy { $0.person === ada })
            }
        }
        let store = try Store(path: path, entities: TestStore.entities)
        try store.read { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            #expect(ada.country?.code == "FR")
            #expect(Set(ada.tags.map(\.label)) == ["swift", "sqlite"])
            #expect(ada.attributes.map(\.key) == ["b", "a", "c"])  // order kept
            let france = try #require(try context.object(Country.self, identity: "FR"))
            #expect(Set(france.people.map(\.id)) == [1, 2])
            #expect(france.people.contains(ada))  // same object: identity map
            let swift = try #require(try context.object(Tag.self, identity: 10))
            #expect(Set(swift.people.map(\.id)) == [1, 2])
            let attribute = try #require(ada.attributes.first)
            #expect(attribute.person === ada)
        }
        // And on disk: foreign keys, join rows, positions.
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT p.id, c.code FROM Person p JOIN Country c ON c._pk = p.country ORDER BY p.id")
            == [["1", "FR"], ["2", "FR"]])
        #expect(try raw.value("SELECT count(*) FROM Person_tags") == "3")
        #expect(try raw.rows("SELECT key, person_order FROM PersonAttribute ORDER BY person_order")
            == [["b", "0"], ["a", "1"], ["c", "2"]])
    }

    @Test func changingAToOneMovesTheObjectBetweenInverseSets() throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        try store.write { context in
            let france = Country(code: "FR", name: "France")
            let italy = Country(code: "IT", name: "Italy")
            let ada = Person(id: 1)
            try context.insert(ada)
            ada.country = france
            _ = italy.people
            try context.insert(italy)
            ada.country = italy
            #expect(france.people.isEmpty)
            #expect(italy.people == [ada])
            // From the to-many side: the to-one follows.
            france.people = [ada]
            #expect(ada.country === france)
            #expect(italy.people.isEmpty)
        }
        try store.read { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            #expect(ada.country?.code == "FR")
            #expect(try context.object(Country.self, identity: "IT")?.people.isEmpty == true)
        }
    }

    @Test func toManyChangesOnUnloadedSidesAreSeenAfterLoading() throws {
        let store = try Store.inMemory(entities: TestStore.entities)
        try store.write { context in
            let france = Country(code: "FR", name: "France")
            try context.insert(france)
            try context.insert(Person(id: 1))
        }
        try store.write { context in
            // Neither side loaded: set from the to-one side, then read the to-many side.
            let ada = try #require(try context.object(Person.self, identity: 1))
            let france = try #require(try context.object(Country.self, identity: "FR"))
            ada.country = france
            #expect(france.people == [ada])
        }
    }

    @Test func reorderingAnOrderedRelationshipRewritesPositions() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let ada = Person(id: 1)
            ada.attributes = ["x", "y", "z"].map { PersonAttribute(key: $0, value: "") }
            try context.insert(ada)
        }
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.attributes = ada.attributes.reversed()
        }
        let keys = try store.read { try $0.object(Person.self, identity: 1)?.attributes.map(\.key) }
        #expect(keys == ["z", "y", "x"])
    }

    @Test func deletingAnObjectClearsRelationshipsToIt() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let france = Country(code: "FR", name: "France")
            let ada = Person(id: 1)
            let grace = Person(id: 2)
            let swift = Tag(id: 10, label: "swift")
            try context.insert(ada)
            try context.insert(grace)
            ada.country = france
            grace.country = france
            ada.tags = [swift]
        }
        try store.write { context in
            let france = try #require(try context.object(Country.self, identity: "FR"))
            let ada = try #require(try context.object(Person.self, identity: 1))
            _ = ada.country  // loaded: must be cleared in memory too
            try context.delete(france)
            #expect(ada.country == nil)
            let swift = try #require(try context.object(Tag.self, identity: 10))
            try context.delete(swift)
            #expect(ada.tags.isEmpty)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, country FROM Person ORDER BY id") == [["1", "NULL"], ["2", "NULL"]])
        #expect(try raw.value("SELECT count(*) FROM Person_tags") == "0")
        #expect(try raw.value("SELECT count(*) FROM Country") == "0")
        #expect(try raw.rows("PRAGMA foreign_key_check").isEmpty)
    }

    @Test func settingToManyToEmptyRemovesJoinRowsButKeepsObjects() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let ada = Person(id: 1)
            ada.tags = [Tag(id: 1, label: "a"), Tag(id: 2, label: "b")]
            try context.insert(ada)
        }
        try store.write { context in
            try #require(try context.object(Person.self, identity: 1)).tags = []
        }
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT count(*) FROM Person_tags") == "0")
        #expect(try raw.value("SELECT count(*) FROM Tag") == "2")
    }

    /// A save writes only the last change of each link: unlinks first, then the links in multi-row INSERTs. So a
    /// link made and undone before the save writes nothing lasting, and one undone and made again stays.
    @Test func onlyTheLastChangeOfALinkInASaveCounts() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: log.observer))
        try store.write { context in
            let ada = Person(id: 1)
            ada.tags = [Tag(id: 1, label: "a"), Tag(id: 2, label: "b")]
            try context.insert(ada)
        }
        let raw = try RawDatabase(path)
        let links = "SELECT t.id FROM Person_tags j JOIN Tag t ON t._pk = j.target ORDER BY t.id"
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            let (a, b) = (try #require(try context.object(Tag.self, identity: 1)), try #require(try context.object(Tag.self, identity: 2)))
            let c = Tag(id: 3, label: "c")
            ada.tags = [a, c]  // unlink b, link c
            ada.tags = [a, b]  // link b again, unlink c: b stays, c was never there
        }
        #expect(try raw.rows(links) == [["1"], ["2"]])
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            let a = try #require(try context.object(Tag.self, identity: 1))
            let d = Tag(id: 4, label: "d")
            ada.tags = [a, d]  // unlink b, link d
            ada.tags = [a]  // unlink d: only b's unlink is left
        }
        #expect(try raw.rows(links) == [["1"]])
        #expect(try raw.value("SELECT count(*) FROM Tag") == "4")
        // Links interleaved with unlinks still go in INSERTs of 32 rows.
        try store.write { context in
            for id in 2...100 { try context.insert(Person(id: id)) }
        }
        try store.write { context in
            let tags = (10..<20).map { Tag(id: $0, label: "t\($0)") }
            for tag in tags { try context.insert(tag) }
            for id in 1...100 {
                let person = try #require(try context.object(Person.self, identity: id))
                person.tags = Set(tags[(id % 5)..<(id % 5 + 3)])
            }
        }
        log.reset()
        try store.write { context in
            // Loaded first (a load writes pending changes), then replaced: each replacement unlinks two tags and
            // links two, all in one save.
            let tags = try (10..<20).map { try #require(try context.object(Tag.self, identity: $0)) }
            let people = try (1...100).map { try #require(try context.object(Person.self, identity: $0)) }
            for person in people { _ = person.tags.count }
            for person in people { person.tags = Set(tags[(person.id % 5 + 2)..<(person.id % 5 + 5)]) }
        }
        let linkInserts = log.writes.filter { $0.hasPrefix("INSERT OR FAIL INTO \"Person_tags\"") }
        #expect(linkInserts.count <= 200 / 32 + 32, "\(linkInserts.count) link INSERTs for 200 links")
        #expect(try raw.value("SELECT count(*) FROM Person_tags") == "300")
        #expect(log.writes.filter { $0.hasPrefix("DELETE FROM \"Person_tags\"") }.count == 200)
        #expect(try raw.rows("SELECT count(*) FROM Person_tags j JOIN Person p ON p._pk = j.source WHERE p.id = 7") == [["3"]])
    }
}

@Entity final class Article {
    var id: Int
    /// Ordered many-to-many: owns the join table, which keeps positions.
    var labels: [Label] = []
    /// To-many without inverse: its own join table.
    var related: Set<Article> = []
    static let identity = Identity(\Article.id)
    init(id: Int) { self.id = id }
}

@Entity final class Label {
    var name: String
    var articles: Set<Article> = []
    static let identity = Identity(\Label.name)
    init(name: String) { self.name = name }
}

/// Assigning a to-one that was never loaded compares foreign keys instead of reading the old destination.
@Suite struct UnloadedToOneTests {
    private func makeStore(_ path: String, _ log: StatementLog) throws -> Store {
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: log.observer))
        try store.write { context in
            let (fr, de) = (Country(code: "FR", name: "France"), Country(code: "DE", name: "Germany"))
            for id in 1...2 {
                let person = Person(id: id)
                person.country = fr
                try context.insert(person)
            }
            try context.insert(de)
        }
        return store
    }

    @Test func theOldDestinationIsNotReadAndAnEqualOneWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try makeStore(path, log)
        try store.write { context in
            let germany = try #require(try context.object(Country.self, identity: "DE"))
            let one = try #require(try context.object(Person.self, identity: 1))
            log.reset()
            one.country = germany  // France, the stored destination, is not in memory: it is not read
            #expect(!log.all.contains { $0.contains("FROM \"Country\"") })
            let two = try #require(try context.object(Person.self, identity: 2))
            let france = try #require(try context.object(Country.self, identity: "FR"))
            log.reset()
            two.country = france  // what is stored already
            #expect(!two.entityState.hasChanges)
            try context.save()
            #expect(log.writes.isEmpty)  // person 1's update was flushed before the lookups above
        }
        #expect(try RawDatabase(path).rows("SELECT p.id, c.code FROM Person p JOIN Country c ON c._pk = p.country ORDER BY p.id") == [["1", "DE"], ["2", "FR"]])
    }

    @Test func assigningAnotherDestinationUpdatesTheKeyAndLoadedInverses() throws {
        let path = TestStore.temporaryPath()
        let store = try makeStore(path, StatementLog())
        try store.write { context in
            let france = try #require(try context.object(Country.self, identity: "FR"))
            #expect(france.people.count == 2)  // loaded: must lose person 1
            let germany = try #require(try context.object(Country.self, identity: "DE"))
            let one = try #require(try context.object(Person.self, identity: 1))
            one.country = germany
            #expect(france.people.map(\.id) == [2])
            #expect(germany.people.map(\.id) == [1])
            let two = try #require(try context.object(Person.self, identity: 2))
            two.country = nil
            #expect(france.people.isEmpty)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT p.id, c.code FROM Person p LEFT JOIN Country c ON c._pk = p.country ORDER BY p.id") == [["1", "DE"], ["2", "NULL"]])
    }
}

@Suite struct ManyToManyTests {
    @Test func orderedManyToManyKeepsOrderAndBothSides() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: [Article.self])
            try store.write { context in
                let one = Article(id: 1)
                let two = Article(id: 2)
                let (a, b, c) = (Label(name: "a"), Label(name: "b"), Label(name: "c"))
                one.labels = [c, a, b]
                two.labels = [b]
                try context.insert(one)
                try context.insert(two)
                #expect(b.articles == [one, two])
            }
            try store.write { context in
                let one = try #require(try context.object(Article.self, identity: 1))
                one.labels = [try b(context), one.labels[0]]  // [b, c]: a removed, reordered
            }
        }
        let store = try Store(path: path, entities: [Article.self])
        try store.read { context in
            let one = try #require(try context.object(Article.self, identity: 1))
            #expect(one.labels.map(\.name) == ["b", "c"])
            let a = try #require(try context.object(Label.self, identity: "a"))
            #expect(a.articles.isEmpty)
            let b = try #require(try context.object(Label.self, identity: "b"))
            #expect(Set(b.articles.map(\.id)) == [1, 2])
        }
        #expect(try RawDatabase(path).rows("SELECT l.name, j.position FROM Article_labels j JOIN Label l ON l._pk = j.target JOIN Article a ON a._pk = j.source WHERE a.id = 1 ORDER BY j.position") == [["b", "0"], ["c", "1"]])
    }

    /// Links are written 32 rows per statement: 70 links (two full statements and 6 single rows), then a
    /// reversal (every link re-positioned) with removals in between, must land with the right positions.
    @Test func manyLinksInOneSaveKeepTheirPositions() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Article.self])
        let names = (0..<70).map { "l\($0)" }
        try store.write { context in
            let article = Article(id: 1)
            article.labels = names.map { Label(name: $0) }
            try context.insert(article)
        }
        let raw = try RawDatabase(path)
        let query = "SELECT l.name, j.position FROM Article_labels j JOIN Label l ON l._pk = j.target ORDER BY j.position"
        #expect(try raw.rows(query) == names.enumerated().map { [$1, "\($0)"] })
        let kept = names.reversed().filter { !$0.hasSuffix("5") }
        try store.write { context in
            let article = try #require(try context.object(Article.self, identity: 1))
            article.labels = try kept.map { try #require(try context.object(Label.self, identity: $0)) }
        }
        #expect(try raw.rows(query) == kept.enumerated().map { [$1, "\($0)"] })
        #expect(try raw.value("SELECT count(*) FROM Label") == "70")
    }

    private func b(_ context: Context) throws -> Label { try #require(try context.object(Label.self, identity: "b")) }

    @Test func toManyWithoutInverseUsesItsOwnJoinTable() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Article.self])
        try store.write { context in
            let one = Article(id: 1)
            let two = Article(id: 2)
            try context.insert(one)
            one.related = [two, one]
            #expect(two.related.isEmpty)  // no inverse: nothing mirrored
        }
        let related = try store.read { try $0.object(Article.self, identity: 1)?.related.map(\.id).sorted() }
        #expect(related == [1, 2])
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Article_related") == "2")
    }
}

@Suite struct ObjectLifetimeTests {
    /// Inverse relationships form reference cycles (a country holds its people, each person its country); a
    /// context must break them when it ends, or every write would leak its graph.
    @Test func objectsInRelationshipCyclesAreFreedWhenTheWriteEnds() throws {
        final class Weak: @unchecked Sendable {
            weak var person: Person?
            weak var country: Country?
        }
        let references = Weak()
        let store = try Store.inMemory(entities: TestStore.entities)
        try store.write { context in
            let france = Country(code: "FR", name: "France")
            let ada = Person(id: 1)
            try context.insert(ada)
            ada.country = france
            ada.tags = [Tag(id: 1, label: "a")]
            #expect(france.people == [ada])
            references.person = ada
            references.country = france
        }
        #expect(references.person == nil)
        #expect(references.country == nil)
        // The data itself is intact.
        let code = try store.read { try $0.object(Person.self, identity: 1)?.country?.code }
        #expect(code == "FR")
    }

    /// Rows are inserted parents first (whatever the order of the entities in the model), so the deferred
    /// foreign-key checks never count a violation that a later insert must resolve by searching the children.
    @Test func savesInsertParentRowsBeforeTheRowsThatReferToThem() throws {
        let log = StatementLog()
        let store = try Store(path: TestStore.temporaryPath(), entities: TestStore.entities, options: .init(statementObserver: log.observer))
        try store.write { context in
            let ada = Person(id: 1, name: "Ada")
            try context.insert(ada)
            ada.country = Country(code: "FR", name: "France")
            ada.attributes = [PersonAttribute(key: "a", value: "1")]
            log.reset()
        }
        let tables = log.writes.filter { $0.hasPrefix("INSERT") }.compactMap { sql in
            ["\"Country\"", "\"PersonAttribute\"", "\"Person\""].first { sql.contains("INTO \($0)") }
        }
        #expect(tables == ["\"Country\"", "\"Person\"", "\"PersonAttribute\""], "\(log.writes)")
    }
}
