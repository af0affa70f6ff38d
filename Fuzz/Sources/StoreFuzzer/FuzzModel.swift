import CodableStore

// The fuzz model: small, but with every kind of field the decoder treats differently. Items are the records
// (the top-level array's elements); owners and tags are reached through them, nested or as bare ids.
//
//     [{"id": 1, "name": "a", "score": 2.5, "count": 7, "meta": {"note": "n"},
//       "owner": {"id": 3, "name": "o", "items": [1, {"id": 2}]}, "tags": [5, {"id": 6, "label": "x"}]}]

@Entity final class FuzzItem {
    var id: Int
    var name: String?
    /// Non-optional with a default: a stub or a record without it gets 0.
    var score: Double = 0
    /// Integers reject fractions and out-of-range numbers.
    var count: Int?
    /// A keypath key: `"meta": {"note": …}`; `"meta": null` clears it.
    var note: String?
    /// To-one; inverse of FuzzOwner.items, stored as a foreign key.
    var owner: FuzzOwner?
    /// Ordered many-to-many; inverse of FuzzTag.items, stored in a join table with positions.
    var tags: [FuzzTag] = []

    static let identity = Identity(\FuzzItem.id)

    enum CodingKeys: String, EntityCodingKey {
        case id, name, score, count, owner, tags
        case note = "meta.note"
    }

    init(id: Int) { self.id = id }
}

@Entity final class FuzzOwner {
    var id: Int
    /// Non-optional without a default: an owner can't be a stub, and a new owner without a name is an error.
    var name: String
    /// Ordered one-to-many, stored by the items' foreign key and an order column.
    var items: [FuzzItem] = []

    static let identity = Identity(\FuzzOwner.id)

    init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

@Entity final class FuzzTag {
    var id: Int
    var label: String?
    var items: Set<FuzzItem> = []

    static let identity = Identity(\FuzzTag.id)

    init(id: Int) { self.id = id }
}

enum FuzzModel {
    static let entities: [any EntityObject.Type] = [FuzzItem.self, FuzzOwner.self, FuzzTag.self]
}
