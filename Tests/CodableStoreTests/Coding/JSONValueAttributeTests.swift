import CodableStore
import Foundation
import Testing

/// A webhook event whose payload has no fixed shape.
@Entity final class HookEvent {
    var id: Int
    var payload: JSONValue?
    static let identity = Identity(\HookEvent.id)
    init(id: Int) { self.id = id }
}

/// `JSONValue` as an attribute: any JSON value, stored as its text with keys sorted and numbers as written.
@Suite struct JSONValueAttributeTests {
    @Test func numbersKeepTheirTextAndKeysAreStoredSorted() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [HookEvent.self], options: .init(statementObserver: log.observer))
        let first = #"[{"id": 1, "payload": {"z": 1.50, "a": [100000000000000000001, -0.0, 1e3, "x", null, true]}}]"#
        let payload = try store.write { context in
            try StoreDecoder().decode([HookEvent].self, from: Data(first.utf8), into: context)[0].payload
        }
        #expect(payload?["z"] == .number("1.50"))
        #expect(payload?["a"] == .array([.number("100000000000000000001"), .number("-0.0"), .number("1e3"), .string("x"), .null, .bool(true)]))
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT payload FROM HookEvent") == [[#"{"a":[100000000000000000001,-0.0,1e3,"x",null,true],"z":1.50}"#]])

        // The same value with its members in another order is no change: nothing is written.
        log.reset()
        let again = #"[{"id": 1, "payload": {"a": [100000000000000000001, -0.0, 1e3, "x", null, true], "z": 1.50}}]"#
        try store.write { context in
            let event = try StoreDecoder().decode([HookEvent].self, from: Data(again.utf8), into: context)[0]
            #expect(!event.entityState.hasChanges)
        }
        #expect(log.writes.isEmpty, "\(log.writes)")

        // Read back from the store as it was decoded (keys sorted).
        let read = try store.read { context in try context.object(HookEvent.self, identity: 1)?.payload }
        #expect(read == (try JSONValue(parsing: #"{"a":[100000000000000000001,-0.0,1e3,"x",null,true],"z":1.50}"#)))
        // A changed number is a change.
        try store.write { context in
            _ = try StoreDecoder().decode([HookEvent].self, from: Data(#"[{"id": 1, "payload": {"z": 1.5}}]"#.utf8), into: context)
        }
        #expect(try raw.rows("SELECT payload FROM HookEvent") == [[#"{"z":1.5}"#]])
    }

    @Test func storedTextThatIsNotJSONIsAnAttributeError() throws {
        #expect(throws: AttributeValueError.self) { _ = try JSONValue(databaseValue: .text("{not json")) }
        #expect(throws: AttributeValueError.self) { _ = try JSONValue(databaseValue: .integer(3)) }
        #expect(try JSONValue(databaseValue: .text("[1.0]")) == .array([.number("1.0")]))
    }
}
