import CodableStore
import Foundation
import Testing

// A chain with cascades (board → columns → cards), a deny (a card with attachments cannot go), and a cycle of
// cascades (two linked notes).
@Entity final class Board {
    var id: Int
    var columns: [BoardColumn] = []
    var owner: BoardOwner?
    static let identity = Identity(\Board.id)
    static let deleteRules: [DeleteRule<Board>] = [.cascade(\.columns)]
    init(id: Int) { self.id = id }
}

@Entity final class BoardColumn {
    var id: Int
    var board: Board?
    var cards: Set<Card> = []
    static let identity = Identity(\BoardColumn.id)
    static let deleteRules: [DeleteRule<BoardColumn>] = [.cascade(\.cards)]
    init(id: Int) { self.id = id }
}

@Entity final class Card {
    var id: Int
    var column: BoardColumn?
    var attachments: Set<Attachment> = []
    static let identity = Identity(\Card.id)
    static let deleteRules: [DeleteRule<Card>] = [.deny(\.attachments)]
    init(id: Int) { self.id = id }
}

@Entity final class Attachment {
    var id: Int
    var card: Card?
    static let identity = Identity(\Attachment.id)
    init(id: Int) { self.id = id }
}

@Entity final class BoardOwner {
    var id: Int
    var boards: Set<Board> = []
    static let identity = Identity(\BoardOwner.id)
    init(id: Int) { self.id = id }
}

@Entity final class LinkedNote {
    var id: Int
    var next: LinkedNote?
    var previous: LinkedNote?
    static let inverses = [Inverse(\LinkedNote.next, \LinkedNote.previous)]
    static let identity = Identity(\LinkedNote.id)
    static let deleteRules: [DeleteRule<LinkedNote>] = [.cascade(\.next)]
    init(id: Int) { self.id = id }
}

@Suite struct DeleteRuleTests {
    static let entities: [any EntityObject.Type] = [Board.self, BoardColumn.self, Card.self, Attachment.self, BoardOwner.self, LinkedNote.self]

    /// Two boards of one owner, each with two columns of two cards; card 111 has an attachment.
    static func seeded() throws -> (Store, String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { context in
            let owner = BoardOwner(id: 1)
            try context.insert(owner)
            for b in 1...2 {
                let board = Board(id: b)
                try context.insert(board)
                board.owner = owner
                for c in 1...2 {
                    let column = BoardColumn(id: b * 10 + c)
                    board.columns.append(column)
                    column.cards = [Card(id: (b * 10 + c) * 10 + 1), Card(id: (b * 10 + c) * 10 + 2)]
                }
            }
            try #require(try context.object(Card.self, identity: 111)).attachments = [Attachment(id: 1)]
        }
        return (store, path)
    }

    static func counts(_ path: String) throws -> [String] {
        let raw = try RawDatabase(path)
        return try ["Board", "BoardColumn", "Card", "Attachment", "BoardOwner"].map { table in
            "\(table) \(try raw.value("SELECT count(*) FROM \(table)"))"
        }
    }

    @Test func aCascadeDeletesTheWholeChainAndNullifiesTheRest() throws {
        let (store, path) = try Self.seeded()
        try store.write { context in try context.delete(try #require(try context.object(Board.self, identity: 2))) }
        #expect(try Self.counts(path) == ["Board 1", "BoardColumn 2", "Card 4", "Attachment 1", "BoardOwner 1"])
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id FROM Card ORDER BY id") == [["111"], ["112"], ["121"], ["122"]])
        #expect(try raw.rows("PRAGMA foreign_key_check").isEmpty)
    }

    @Test func aDenyAnywhereInTheChainDeletesNothing() throws {
        let (store, path) = try Self.seeded()
        let error = try #require(throws: StoreError.self) {
            try store.write { context in try context.delete(try #require(try context.object(Board.self, identity: 1))) }
        }
        #expect(error.code == .deleteDenied)
        #expect(error.message == "cannot delete Card id = 111: its attachments still has 1 Attachment object (delete rule deny); nothing was deleted")
        #expect(error.entity == "Card" && error.field == "attachments")
        #expect(try Self.counts(path) == ["Board 2", "BoardColumn 4", "Card 8", "Attachment 1", "BoardOwner 1"])
        // The context is usable after a denied delete, in the same write: nothing was changed in it.
        try store.write { context in
            #expect(throws: StoreError.self) { try context.delete(try #require(try context.object(Card.self, identity: 111))) }
            try context.delete(try #require(try context.object(Card.self, identity: 112)))
        }
        #expect(try Self.counts(path) == ["Board 2", "BoardColumn 4", "Card 7", "Attachment 1", "BoardOwner 1"])
    }

    @Test func aDeniedRelationshipThatIsDeletedToo() throws {
        let (store, path) = try Self.seeded()
        try store.write { context in
            let attachment = try #require(try context.object(Attachment.self, identity: 1))
            try context.delete(attachment)  // the card has no attachment left: it may go
            try context.delete(try #require(try context.object(Board.self, identity: 1)))
        }
        #expect(try Self.counts(path) == ["Board 1", "BoardColumn 2", "Card 4", "Attachment 0", "BoardOwner 1"])
    }

    @Test func aCycleOfCascadesEnds() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        try store.write { context in
            let notes = (1...4).map { LinkedNote(id: $0) }
            for note in notes { try context.insert(note) }
            for (note, next) in zip(notes, notes.dropFirst() + [notes[0]]) { note.next = next }  // 1 → 2 → 3 → 4 → 1
            try context.insert(LinkedNote(id: 5))
        }
        try store.write { context in try context.delete(try #require(try context.object(LinkedNote.self, identity: 3))) }
        #expect(try RawDatabase(path).rows("SELECT id FROM LinkedNote") == [["5"]])
    }

    @Test func deleteAllAppliesTheRulesOfEveryMatch() throws {
        let (store, path) = try Self.seeded()
        let count = try store.write { context in try context.deleteAll(Board.self, where: \.id == 2) }
        #expect(count == 1)
        #expect(try Self.counts(path) == ["Board 1", "BoardColumn 2", "Card 4", "Attachment 1", "BoardOwner 1"])
        #expect(throws: StoreError.self) { try store.write { context in _ = try context.deleteAll(Board.self) } }
        #expect(try Self.counts(path) == ["Board 1", "BoardColumn 2", "Card 4", "Attachment 1", "BoardOwner 1"])
    }

    @Test func aRuleOnAKeyPathThatIsNotARelationshipIsAModelProblem() throws {
        let error = try #require(throws: StoreError.self) { _ = try Store.inMemory(entities: [BadRule.self]) }
        #expect(error.code == .invalidModel)
        #expect(error.message.contains("BadRule: a delete rule is declared for a key path that does not name a relationship"), "\(error)")
    }

    @Test func theRulesLoadEachRelationshipOnceForAllTheObjectsTheyReach() throws {
        let (_, path) = try Self.seeded()
        let statements = StatementLog()
        let store = try Store(
            path: path, entities: Self.entities, options: .init(statementObserver: statements.observer))
        try store.write { context in
            let board = try #require(try context.object(Board.self, identity: 2))
            statements.reset()
            try context.delete(board)
        }
        // The board's columns, the two columns' cards, the four cards' attachments: one query each, not 1 + 2 + 4.
        let memberships = statements.all.filter { $0.hasPrefix("SELECT") && $0.contains(" IN (") }
        #expect(memberships.count == 3, "\(memberships)")
        #expect(try Self.counts(path) == ["Board 1", "BoardColumn 2", "Card 4", "Attachment 1", "BoardOwner 1"])
    }

    @Test func deleteAllCountsWhatItsCascadesReachedOfTheEntity() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        try store.write { context in
            let notes = (1...4).map { LinkedNote(id: $0) }
            for note in notes { try context.insert(note) }
            for (note, next) in zip(notes, notes.dropFirst() + [notes[0]]) { note.next = next }
        }
        let count = try store.write { context in try context.deleteAll(LinkedNote.self, where: \.id == 3) }
        #expect(try RawDatabase(path).rows("SELECT count(*) FROM LinkedNote") == [["0"]])
        #expect(count == 4)
    }
}

@Entity final class BadRule {
    var id: Int
    static let deleteRules: [DeleteRule<BadRule>] = [.cascade(\.id)]
    init(id: Int) { self.id = id }
}
