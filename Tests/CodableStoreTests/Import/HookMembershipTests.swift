import CodableStore
import Foundation
import Testing

/// A card that counts, while it is decoded, the cards its tags hold (summed over its tags): a decoding hook that loads
/// the inverse of a relationship the same record just set.
@Entity final class TaggedCard {
    var id: Int
    var tags: Set<CardTag> = []
    var peersWhenDecoded: Int = 0
    static let identity = Identity(\TaggedCard.id)
    init(id: Int) { self.id = id }
}

@Entity final class CardTag {
    var id: Int
    var name: String = ""
    var cards: Set<TaggedCard> = []
    static let identity = Identity(\CardTag.id)
    init(id: Int) { self.id = id }
}

extension TaggedCard: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder, skipping: ["peersWhenDecoded"])
        peersWhenDecoded = tags.sorted { $0.id < $1.id }.reduce(0) { $0 + $1.cards.count }
    }
}

/// A card whose hook saves first (under an import, the save hands the context's changes to the writer thread, the
/// record's own links included, and does not wait for them to be written), then counts the cards its tags hold.
@Entity final class FlushingCard {
    var id: Int
    var tags: Set<FlushingTag> = []
    var peersWhenDecoded: Int = 0
    static let identity = Identity(\FlushingCard.id)
    init(id: Int) { self.id = id }
}

@Entity final class FlushingTag {
    var id: Int
    var name: String = ""
    var cards: Set<FlushingCard> = []
    static let identity = Identity(\FlushingTag.id)
    init(id: Int) { self.id = id }
}

extension FlushingCard: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder, skipping: ["peersWhenDecoded"])
        try entityState.context?.save()
        peersWhenDecoded = tags.sorted { $0.id < $1.id }.reduce(0) { $0 + $1.cards.count }
    }
}

/// An import's writer thread writes the batch before the one being decoded while the next is looked up: a hook that
/// loads memberships in the middle of a record must still see every link the import made before it, including those
/// of the same batch that a save in the middle of the batch handed to the writer.
@Suite struct HookMembershipTests {
    static let entities: [any EntityObject.Type] = [TaggedCard.self, CardTag.self]

    /// Each card links the stored tag 1; the n-th card (1-based) then sees n cards on it: those before it and itself.
    @Test(arguments: [1, 3, 100], [false, true])
    func aHookLoadingAnInverseSeesTheLinksMadeBeforeIt(batchSize: Int, tagIsNew: Bool) throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        if !tagIsNew {
            try store.write { context in
                let tag = CardTag(id: 1)
                tag.name = "stored"
                try context.insert(tag)
            }
        }
        let count = 12
        let json = "[" + (1...count).map { #"{"id": \#($0), "tags": [{"id": 1, "name": "t"}]}"# }.joined(separator: ",") + "]"
        let dump = try WriteBehindTests.write(json)
        let report = try store.importJSON(TaggedCard.self, from: .file(dump), options: ImportOptions(batchSize: batchSize))
        #expect(report.recordsRead == count)
        let raw = try RawDatabase(path)
        let seen = try raw.rows("SELECT id, peersWhenDecoded FROM TaggedCard ORDER BY id")
        #expect(seen == (1...count).map { ["\($0)", "\($0)"] })
        #expect(try raw.value("SELECT count(*) FROM CardTag_cards") == "\(count)")
    }

    /// A save in the middle of a record hands the links made so far to the writer, the record's own included; a
    /// membership load after it, of a tag first used in the batch, must wait until the writer wrote them. (Fails when
    /// the writer forgets the links handed over: the n-th card then counts n-1.)
    @Test(arguments: [1, 3, 100])
    func aLoadAfterASaveInTheSameRecordSeesTheLinksItHandedOver(batchSize: Int) throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [FlushingCard.self, FlushingTag.self])
        try store.write { context in try context.insert(FlushingTag(id: 1)) }
        let count = 12
        let json = "[" + (1...count).map { #"{"id": \#($0), "tags": [{"id": 1}]}"# }.joined(separator: ",") + "]"
        let dump = try WriteBehindTests.write(json)
        _ = try store.importJSON(FlushingCard.self, from: .file(dump), options: ImportOptions(batchSize: batchSize))
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, peersWhenDecoded FROM FlushingCard ORDER BY id") == (1...count).map { ["\($0)", "\($0)"] })
        #expect(try raw.value("SELECT count(*) FROM FlushingCard_tags") == "\(count)")
    }

    /// The first tag's load saves the record's links to both tags, and hands them to the writer; the second tag's
    /// load, of another object, must wait for them too.
    @Test(arguments: [1, 100])
    func theSecondLoadOfARecordSeesTheLinksTheFirstOneSaved(batchSize: Int) throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: Self.entities)
        let json = #"[{"id": 1, "tags": [{"id": 1}, {"id": 2}]}, {"id": 2, "tags": [{"id": 2}]}, {"id": 3, "tags": [{"id": 3}, {"id": 1}]}]"#
        let dump = try WriteBehindTests.write(json)
        _ = try store.importJSON(TaggedCard.self, from: .file(dump), options: ImportOptions(batchSize: batchSize))
        let raw = try RawDatabase(path)
        // Card 1: tags 1 and 2 hold it; card 2: tag 2 holds cards 1 and 2; card 3: tag 1 holds 1 and 3, tag 3 holds 3.
        #expect(try raw.rows("SELECT id, peersWhenDecoded FROM TaggedCard ORDER BY id") == [["1", "2"], ["2", "2"], ["3", "3"]])
        #expect(try raw.value("SELECT count(*) FROM CardTag_cards") == "5")
    }
}
