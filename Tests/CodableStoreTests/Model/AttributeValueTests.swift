import CodableStore
import Foundation
import Testing

enum Priority: String, AttributeValue, Codable {
    case low, high
}

enum Level: Int, AttributeValue {
    case one = 1, two = 2
}

struct Money: Codable, Equatable, JSONAttributeValue {
    var amount: Decimal
    var currency: String
}

@Entity final class Sample {
    var id: Int
    var flag: Bool = false
    var int8: Int8 = 0
    var int16: Int16 = 0
    var int32: Int32 = 0
    var int64: Int64 = 0
    var uint8: UInt8 = 0
    var uint16: UInt16 = 0
    var uint32: UInt32 = 0
    var uint64: UInt64 = 0
    var uint: UInt = 0
    var double: Double = 0
    var float: Float = 0
    var decimal: Decimal = 0
    var text: String = ""
    var date: Date = Date(timeIntervalSince1970: 0)
    var data: Data = Data()
    var uuid: UUID?
    var url: URL?
    var priority: Priority = .low
    var level: Level?
    var words: [String] = []
    var counts: [String: Int] = [:]
    var money: Money?
    var optionalText: String?
    static let identity = Identity(\Sample.id)
    init(id: Int) { self.id = id }
}

@Suite struct AttributeValueTests {
    @Test func everyAttributeTypeRoundTripsWithItsDocumentedStorage() throws {
        let path = TestStore.temporaryPath()
        let uuid = UUID()
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        do {
            let store = try Store(path: path, entities: [Sample.self])
            try store.write { context in
                let sample = Sample(id: 1)
                sample.flag = true
                sample.int8 = -8
                sample.int16 = -16
                sample.int32 = -32
                sample.int64 = .min
                sample.uint8 = 255
                sample.uint16 = 65_535
                sample.uint32 = .max
                sample.uint64 = .max
                sample.uint = 42
                sample.double = 3.25
                sample.float = 1.5
                sample.decimal = Decimal(string: "12345678901234567890.123456789")!
                sample.text = "héllo 🌍 \u{0}end"
                sample.date = date
                sample.data = Data([0, 1, 2, 255])
                sample.uuid = uuid
                sample.url = URL(string: "https://example.com/a?b=c")
                sample.priority = .high
                sample.level = .two
                sample.words = ["a", "b"]
                sample.counts = ["z": 1, "a": 2]
                sample.money = Money(amount: Decimal(string: "9.99")!, currency: "EUR")
                try context.insert(sample)
            }
        }
        let store = try Store(path: path, entities: [Sample.self])
        try store.read { context in
            let sample = try #require(try context.object(Sample.self, identity: 1))
            #expect(sample.flag == true)
            #expect(sample.int8 == -8 && sample.int16 == -16 && sample.int32 == -32 && sample.int64 == .min)
            #expect(sample.uint8 == 255 && sample.uint16 == 65_535 && sample.uint32 == .max && sample.uint64 == .max)
            #expect(sample.uint == 42 && sample.double == 3.25 && sample.float == 1.5)
            #expect(sample.decimal == Decimal(string: "12345678901234567890.123456789")!)
            #expect(sample.text == "héllo 🌍 \u{0}end")
            #expect(sample.date == date)
            #expect(sample.data == Data([0, 1, 2, 255]))
            #expect(sample.uuid == uuid)
            #expect(sample.url == URL(string: "https://example.com/a?b=c"))
            #expect(sample.priority == .high && sample.level == .two)
            #expect(sample.words == ["a", "b"] && sample.counts == ["z": 1, "a": 2])
            #expect(sample.money == Money(amount: Decimal(string: "9.99")!, currency: "EUR"))
            #expect(sample.optionalText == nil)
        }
        let raw = try RawDatabase(path)
        let row = try raw.rows(
            "SELECT typeof(flag), flag, typeof(date), date, typeof(decimal), decimal, typeof(uuid), typeof(data), priority, level, words, counts, money, optionalText FROM Sample"
        )
        #expect(row == [[
            "integer", "1", "real", "1700000000.25", "text", "12345678901234567890.123456789", "text", "blob", "high",
            "2", "[\"a\",\"b\"]", "{\"a\":2,\"z\":1}", "{\"amount\":9.99,\"currency\":\"EUR\"}", "NULL",
        ]])
        #expect(try raw.value("SELECT uuid FROM Sample") == uuid.uuidString)
    }

    /// Texts compare as SQLite compares them, byte for byte: the same word precomposed and decomposed are two
    /// values (String's `==` calls them equal), so a decode that changes only the normalization writes it, and
    /// two such identities are two objects, as they are two rows under the UNIQUE index.
    @Test func textsAreEqualWhenTheirBytesAre() throws {
        let composed = DatabaseValue.text("caf\u{E9}")
        let decomposed = DatabaseValue.text("cafe\u{301}")
        #expect("caf\u{E9}" == "cafe\u{301}")  // String: canonical equivalence
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed, .text("caf\u{E9}")]).count == 2)
        #expect(composed == .text(String(decoding: Array("caf\u{E9}".utf8), as: UTF8.self)))
        #expect(DatabaseValue.text("") == .text(""))
        #expect(DatabaseValue.text("a") != .integer(1))

        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        let decoder = StoreDecoder()
        try store.write { _ = try decoder.decode(Person.self, from: Data(#"{"id": 1, "name": "caf\u00e9"}"#.utf8), into: $0) }
        try store.write { _ = try decoder.decode(Person.self, from: Data(#"{"id": 1, "name": "cafe\u0301"}"#.utf8), into: $0) }
        #expect(try RawDatabase(path).value("SELECT hex(name) FROM Person") == "63616665CC81")
        let distinct = try store.write { context in
            let countries = try decoder.decode(
                [Country].self, from: Data(#"[{"code": "caf\u00e9", "name": "a"}, {"code": "cafe\u0301", "name": "b"}]"#.utf8),
                into: context)
            return countries[0] !== countries[1]
        }
        #expect(distinct)
        #expect(try RawDatabase(path).rows("SELECT hex(code) FROM Country ORDER BY code") == [["63616665CC81"], ["636166C3A9"]])
    }

    @Test func aStoredValueThatDoesNotFitIsAStoreErrorNamingTheField() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Sample.self])
        try store.write { try $0.insert(Sample(id: 1)) }
        try RawDatabase(path).execute("UPDATE Sample SET int8 = 300, priority = 'medium'")
        let error = try #require(throws: StoreError.self) {
            try store.read { _ = try $0.object(Sample.self, identity: 1) }
        }
        #expect(error.code == .valueMismatch)
        #expect(error.entity == "Sample")
        #expect(error.field == "int8")
        #expect(error.message == "Sample.int8: stored value does not fit: expected Int8, 300 does not fit in Int8")
    }
}
