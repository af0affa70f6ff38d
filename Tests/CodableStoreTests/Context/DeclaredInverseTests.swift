import CodableStore
import Foundation
import Testing

// Two relationships from a incident to an agent, and two back: the store cannot pair them by itself.
// `author` ↔ `authored` is declared (on one side); `assignee` ↔ `assigned` is then the only undeclared pair
// left and is found. `watchers` ↔ `watching` is a declared many-to-many next to an undeclared one (`reviewers`,
// which has no inverse since `Agent` has no second set of tickets left for it).
@Entity final class Incident {
    var id: Int
    var author: Agent?
    var assignee: Agent?
    var watchers: Set<Agent>
    static let identity = Identity(\Incident.id)
    static let inverses = [Inverse(\Incident.author, \Agent.authored), Inverse(\Incident.watchers, \Agent.watching)]
    init(id: Int) {
        self.id = id
        self.watchers = []
    }
}

@Entity final class Agent {
    var id: Int
    var authored: Set<Incident>
    var assigned: Set<Incident>
    var watching: Set<Incident>
    // Declared again from this side: allowed when both sides agree.
    static let identity = Identity(\Agent.id)
    static let inverses = [Inverse(\Agent.watching, \Incident.watchers)]
    init(id: Int) {
        self.id = id
        self.authored = []
        self.assigned = []
        self.watching = []
    }
}

// Wrong declarations, each reported when a store opens.
@Entity final class BadNote {
    var id: Int
    var writer: Agent?
    var reader: Agent?
    static let inverses = [Inverse(\BadNote.writer, \Incident.author)]  // the inverse must belong to Agent
}

@Entity final class SelfNote {
    var id: Int
    var next: SelfNote?
    static let inverses = [Inverse(\SelfNote.next, \SelfNote.next)]
}

@Entity final class PointsElsewhere {
    var id: Int
    var agent: Agent?
    static let inverses = [Inverse(\PointsElsewhere.agent, \Agent.id)]  // an attribute, not a relationship
}

@Entity final class Shelf {
    var id: Int
    var books: Set<Book>
    var spares: Set<Book>
    static let inverses = [Inverse(\Shelf.books, \Book.shelves)]
}

@Entity final class Book {
    var id: Int
    var shelves: Set<Shelf>
    static let inverses = [Inverse(\Book.shelves, \Shelf.spares)]  // disagrees with Shelf's declaration
}

@Suite struct DeclaredInverseTests {
    @Test func declaredPairsAndThePairLeftAreKeptConsistentAndShareStorage() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: [Incident.self, Agent.self])
            try store.write { context in
                let ada = Agent(id: 1)
                let bob = Agent(id: 2)
                let incident = Incident(id: 10)
                try context.insert(incident)
                incident.author = ada
                incident.assignee = bob
                incident.watchers = [ada, bob]
                // Each side follows the other, pair by pair.
                #expect(ada.authored == [incident])
                #expect(ada.assigned.isEmpty)
                #expect(bob.assigned == [incident])
                #expect(bob.authored.isEmpty)
                #expect(ada.watching == [incident])
                #expect(bob.watching == [incident])
                // And from the to-many side back to the to-one.
                let other = Incident(id: 11)
                bob.authored.insert(other)
                #expect(other.author === bob)
                #expect(other.assignee == nil)
            }
        }
        // Storage: the to-manys whose inverse is a to-one are those foreign keys (no join table of their own);
        // the many-to-many pair shares one join table.
        let raw = try RawDatabase(path)
        let tables = try raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map { $0[0] }
        #expect(tables == ["Agent", "Agent_watching", "Incident", "_codablestore_metadata"])
        #expect(try raw.rows("SELECT t.id, a.id, b.id FROM Incident t LEFT JOIN Agent a ON a._pk = t.author LEFT JOIN Agent b ON b._pk = t.assignee ORDER BY t.id")
            == [["10", "1", "2"], ["11", "2", "NULL"]])
        #expect(try raw.value("SELECT count(*) FROM Agent_watching") == "2")

        // Read back in a new store: loaded from storage, each relationship from its own column or table.
        let store = try Store(path: path, entities: [Incident.self, Agent.self])
        try store.read { context in
            let ada = try #require(try context.object(Agent.self, identity: 1))
            let bob = try #require(try context.object(Agent.self, identity: 2))
            #expect(ada.authored.map(\.id) == [10])
            #expect(Set(bob.authored.map(\.id)) == [11])
            #expect(bob.assigned.map(\.id) == [10])
            #expect(ada.assigned.isEmpty)
            #expect(Set(bob.watching.map(\.id)) == [10])
        }
    }

    @Test func wrongDeclarationsAreReportedWhenAStoreOpens() throws {
        let cases: [(any EntityObject.Type, String)] = [
            (BadNote.self, "BadNote.writer: its declared inverse must be a relationship of its destination Agent, not of Incident"),
            (SelfNote.self, "SelfNote.next cannot be its own inverse"),
            (PointsElsewhere.self, "PointsElsewhere.agent: its declared inverse is not a relationship of Agent"),
        ]
        for (entity, problem) in cases {
            let error = try #require(throws: StoreError.self) { _ = try Store.inMemory(entities: [entity]) }
            #expect(error.differences.contains(problem), "\(error.differences)")
        }
    }

    @Test func declarationsThatDisagreeAreReported() throws {
        let error = try #require(throws: StoreError.self) { _ = try Store.inMemory(entities: [Shelf.self]) }
        #expect(error.differences.contains("Book.shelves is declared with two inverses: books and spares"), "\(error.differences)")
    }

    @Test func anInverseDeclaredForAnAttributeIsAProblemOfTheDescription() {
        let description = EntityDescriptionBuilder<Incident>(name: "Incident")
            .build(identity: nil, inverses: [Inverse(\Incident.id, \Agent.authored)])
        #expect(description.problems == ["Incident: an inverse is declared for a key path that does not name a relationship"])
    }
}
