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
