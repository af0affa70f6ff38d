import CodableStore
import Foundation
import Testing

/// An entity that conforms to `EntityObject` by hand, without the macro: the runtime depends only on the
/// protocol.
final class Note: EntityObject {
    let entityState = EntityState()
    private var _id: Int
    private var _text: String
    private var _tag: Tag?

    var id: Int {
        get { _$EntityAccess.get(self, 0, _id) { $0._id = $1 } }
        set { _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 } }
    }
    var text: String {
        get { _$EntityAccess.get(self, 1, _text) { $0._text = $1 } }
        set { _$EntityAccess.set(self, 1, _text, newValue) { $0._text = $1 } }
    }
    var tag: Tag? {
        get { _$EntityAccess.get(self, 2, _tag) { $0._tag = $1 } }
        set { _$EntityAccess.set(self, 2, _tag, newValue) { $0._tag = $1 } }
    }

    static let entityDescription: EntityDescription = {
        var builder = EntityDescriptionBuilder<Note>(name: "HandNote")
        builder.field("id", \Note.id, as: Int.self, get: { $0._id }, set: { $0._id = $1 })
        builder.field("text", \Note.text, as: String.self, get: { $0._text }, set: { $0._text = $1 })
        builder.field("tag", \Note.tag, as: Tag?.self, get: { $0._tag }, set: { $0._tag = $1 })
        return builder.build(identity: Identity(\Note.id))
    }()

    init(id: Int, text: String) {
        _id = id
        _text = text
    }

    init(row: EntityRow) throws {
        _id = try row.value(0, as: Int.self)
        _text = try row.value(1, as: String.self)
        _tag = try row.value(2, as: Tag?.self)
    }
}

@Suite struct HandWrittenEntityTests {
    @Test func aHandWrittenConformanceIsStoredTrackedAndFetched() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [Note.self], options: .init(statementObserver: log.observer))
        try store.write { context in
            let note = Note(id: 1, text: "hello")
            try context.insert(note)
            note.tag = Tag(id: 5, label: "greeting")
        }
        log.reset()
        try store.write { context in
            let note = try #require(try context.object(Note.self, identity: 1))
            #expect(note.tag?.label == "greeting")
            note.text = "hello"  // unchanged
            note.id = 1
        }
        #expect(log.writes.isEmpty)
        try store.write { try #require(try $0.object(Note.self, identity: 1)).text = "bye" }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT n.id, n.text, t.label FROM HandNote n JOIN Tag t ON t._pk = n.tag") == [["1", "bye", "greeting"]])
    }
}
