import CodableStore
import Foundation
import Testing

/// The id arrives as a string; the identity is composed from two keys when `key` is missing.
@Entity final class Ticket {
    var id: Int
    var key: String = ""
    var summary: String = ""
    static let identity = Identity(\Ticket.id)
    init(id: Int) { self.id = id }
}

extension Ticket: EntityJSONPreparing {
    static func prepareForDecoding(_ json: inout JSONValue) throws {
        if let id = json["id"]?.stringValue, let number = Int(id) { json["id"] = .integer(number) }
        if json["key"] == nil, let project = json["project"]?.stringValue, let number = json["id"]?.numberText {
            json["key"] = .string("\(project)-\(number)")
        }
    }
}

@Entity final class Contact {
    var id: Int
    var name: String = ""
    var email: String?
    static let identity = Identity(\Contact.id)
    init(id: Int) { self.id = id }
}

extension Contact: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder, skipping: ["name"])
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        if container.contains("first_name") {
            let first = try container.decode(String.self, forKey: "first_name")
            let last = try container.decode(String.self, forKey: "last_name")
            name = "\(first) \(last)"
        }
    }
}

@Suite struct DecodingHooksTests {
    @Test func prepareRewritesTheJSONBeforeTheIdentityLookup() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Ticket.self])
        try store.write { context in
            _ = try StoreDecoder().decode(
                [Ticket].self, from: Data(#"[{"id": "7", "project": "CS", "summary": "a"}, {"id": 7, "summary": "b"}]"#.utf8),
                into: context)
        }
        #expect(try RawDatabase(path).rows("SELECT id, key, summary FROM Ticket") == [["7", "CS-7", "b"]])
    }

    @Test func customInitializationWrapsTheDefault() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Contact.self])
        try store.write { context in
            _ = try StoreDecoder().decode(
                [Contact].self,
                from: Data(#"[{"id": 1, "first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com", "name": "ignored"}]"#.utf8),
                into: context)
        }
        #expect(try RawDatabase(path).rows("SELECT id, name, email FROM Contact") == [["1", "Ada Lovelace", "ada@example.com"]])
        // Only the listed fields with `with:`.
        try store.write { context in
            let contact = try #require(try context.object(Contact.self, identity: 1))
            let impl = try StoreDecoder().decode(Contact.self, from: Data(#"{"id": 1, "email": null}"#.utf8), into: context)
            #expect(impl === contact)
        }
        #expect(try RawDatabase(path).rows("SELECT name, email FROM Contact") == [["Ada Lovelace", "NULL"]])
    }
}

/// A hook that converts a value the default decoding refuses ("20" → 20), keeps a locally edited field, and
/// decodes only some fields by default.
@Entity final class Counter {
    var id: Int
    var count: Int = 0
    var note: String = "local"
    var label: String?
    static let identity = Identity(\Counter.id)
    init(id: Int) { self.id = id }
}

extension Counter: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder, skipping: ["count", "note"])
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        if let text = try container.decodeIfPresent(String.self, forKey: "count") { count = Int(text) ?? -1 }
    }
}

@Entity final class Sparse {
    var id: Int
    var title: String = ""
    var body: String?
    static let identity = Identity(\Sparse.id)
    init(id: Int) { self.id = id }
}

extension Sparse: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder, with: ["id", "title"])
    }
}

@Entity final class Misspelt {
    var id: Int
    var title: String = ""
    static let identity = Identity(\Misspelt.id)
    init(id: Int) { self.id = id }
}

extension Misspelt: EntityCustomDecoding {
    func initialize(from decoder: any Decoder) throws {
        try defaultInitialization(from: decoder, skipping: ["titel"])
    }
}

/// Hooks run the same way whether the object is new or stored.
@Suite struct HooksOnInsertAndUpdateTests {
    @Test func aConvertedValueAndASkippedFieldBehaveAlikeOnInsertAndUpdate() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Counter.self])
        let json = Data(#"[{"id": 1, "count": "20", "note": "from the API", "label": "a"}]"#.utf8)
        // Insert: the hook converts "20", and "note" keeps its starting value.
        try store.write { _ = try StoreDecoder().decode([Counter].self, from: json, into: $0) }
        #expect(try RawDatabase(path).rows("SELECT id, count, note, label FROM Counter") == [["1", "20", "local", "a"]])
        // Update: the same.
        try store.write { context in
            let counter = try #require(try context.object(Counter.self, identity: 1))
            counter.note = "edited"
        }
        try store.write {
            _ = try StoreDecoder().decode([Counter].self, from: Data(#"[{"id": 1, "count": "21", "note": "x", "label": "b"}]"#.utf8), into: $0)
        }
        #expect(try RawDatabase(path).rows("SELECT id, count, note, label FROM Counter") == [["1", "21", "edited", "b"]])
        // The import takes the same way.
        let dump = TestStore.temporaryPath("dump.json")
        try #"[{"id": 2, "count": "5", "note": "x"}, {"id": 1, "count": "22"}]"#.write(toFile: dump, atomically: true, encoding: .utf8)
        _ = try store.importJSON(Counter.self, from: .file(dump))
        #expect(try RawDatabase(path).rows("SELECT id, count, note, label FROM Counter ORDER BY id") == [["1", "22", "edited", "b"], ["2", "5", "local", "NULL"]])
    }

    @Test func withDecodesOnlyTheNamedFieldsOnInsert() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Sparse.self])
        try store.write {
            _ = try StoreDecoder().decode(Sparse.self, from: Data(#"{"id": 1, "title": "t", "body": "not wanted"}"#.utf8), into: $0)
        }
        #expect(try RawDatabase(path).rows("SELECT id, title, body FROM Sparse") == [["1", "t", "NULL"]])
    }

    @Test func anUnknownFieldNameIsAnError() throws {
        let store = try Store.inMemory(entities: [Misspelt.self])
        let error = try #require(throws: StoreError.self) {
            try store.write { _ = try StoreDecoder().decode(Misspelt.self, from: Data(#"{"id": 1, "title": "t"}"#.utf8), into: $0) }
        }
        #expect(error.code == .invalidObject)
        #expect(error.message == "Misspelt has no field 'titel' (given to defaultInitialization(from:skipping:)); its fields are id, title")
    }
}
