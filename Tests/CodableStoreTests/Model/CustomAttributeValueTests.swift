import CodableStore
import Foundation
import Testing

/// The custom attribute type of `AttributeValue`'s documentation, as written there.
struct Cents: Hashable, AttributeValue {
    var amount: Int64
    init(_ amount: Int64) { self.amount = amount }

    static var attributeType: AttributeType { AttributeType(name: "Cents", affinity: "INTEGER") }
    var databaseValue: DatabaseValue { .integer(amount) }
    init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .integer(let amount) = databaseValue else {
            throw AttributeValueError(expected: "Cents", found: databaseValue)
        }
        self.amount = amount
    }
    static func decodeAttribute(from decoder: any Decoder) throws -> Cents {
        Cents(try decoder.singleValueContainer().decode(Int64.self))
    }
    func encodeAttribute(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(amount)
    }
}

@Entity final class PricedItem {
    var id: Int
    var price: Cents = Cents(0)
    var discount: Cents?
    static let identity = Identity(\PricedItem.id)
    init(id: Int) { self.id = id }
}

@Suite("A custom AttributeValue, as its documentation writes one")
struct CustomAttributeValueTests {
    @Test("decoded from bare numbers, stored as integers, fetched, compared and upserted")
    func roundTrip() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [PricedItem.self])
        try store.write { context in
            _ = try StoreDecoder().decodeAndSave([PricedItem].self, from: Data(#"[{"id": 1, "price": 1999}, {"id": 2, "price": 5, "discount": 1}]"#.utf8), into: context)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id, price, typeof(price), discount FROM PricedItem ORDER BY id") == [
            ["1", "1999", "integer", "NULL"], ["2", "5", "integer", "1"],
        ])
        try store.read { context in
            let cheap = try context.fetch(PricedItem.self, where: \PricedItem.price < Cents(100))
            #expect(cheap.map(\.id) == [2])
            #expect(cheap.first?.discount == Cents(1))
        }
        // The same price again leaves its row as it is; a new one updates it.
        try store.write { context in
            _ = try StoreDecoder().decodeAndSave([PricedItem].self, from: Data(#"[{"id": 1, "price": 1999}, {"id": 2, "price": 7}]"#.utf8), into: context)
        }
        #expect(try raw.rows("SELECT id, price, discount FROM PricedItem ORDER BY id") == [["1", "1999", "NULL"], ["2", "7", "1"]])
    }

    @Test("a stored value of another kind is a valueMismatch naming the entity, the field and what was found")
    func mismatch() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [PricedItem.self])
        try store.write { context in try context.insert(PricedItem(id: 1)) }
        try RawDatabase(path).execute("UPDATE PricedItem SET price = 'free' WHERE id = 1")
        let error = try #require(throws: StoreError.self) {
            try store.read { context in _ = try context.fetch(PricedItem.self) }
        }
        #expect(error.code == .valueMismatch)
        #expect("\(error)".contains("PricedItem"))
        #expect("\(error)".contains("price"))
        #expect("\(error)".contains("expected Cents, found text value 'free' instead"))
    }
}
