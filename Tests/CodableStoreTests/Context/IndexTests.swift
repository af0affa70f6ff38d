import CodableStore
import Foundation
import Testing

enum IndexV1 {
    @Entity final class Gadget {
        var id: Int
        var kind: String
        var weight: Double = 0
        static let identity = Identity(\Gadget.id)
        init(id: Int, kind: String) {
            self.id = id
            self.kind = kind
        }
    }
}

enum IndexV2 {
    @Entity final class Gadget {
        var id: Int
        var kind: String
        var weight: Double = 0
        static let identity = Identity(\Gadget.id)
        static let indexes: [EntityIndex<Gadget>] = [EntityIndex(\.kind), EntityIndex(\.kind, \.weight)]
        init(id: Int, kind: String) {
            self.id = id
            self.kind = kind
        }
    }
}

@Suite struct IndexTests {
    @Test func declaredIndexesAreAddedAndDroppedOnOpenAndUsedByQueries() throws {
        let path = TestStore.temporaryPath()
        do {
            let store = try Store(path: path, entities: [IndexV1.Gadget.self])
            try store.write { context in
                for id in 0..<100 { try context.insert(IndexV1.Gadget(id: id, kind: id % 2 == 0 ? "even" : "odd")) }
            }
        }
        let indexes = { try RawDatabase(path).rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Gadget' AND name LIKE '%index%' ORDER BY name").map { $0[0] } }
        #expect(try indexes().isEmpty)
        do {
            let store = try Store(path: path, entities: [IndexV2.Gadget.self])
            #expect(try store.read { try $0.count(IndexV2.Gadget.self, where: \.kind == "odd") } == 50)
        }
        #expect(try indexes() == ["Gadget_index_kind", "Gadget_index_kind_weight"])
        let plan = try RawDatabase(path).rows("EXPLAIN QUERY PLAN SELECT * FROM Gadget WHERE kind = 'odd'").map { $0.last ?? "" }
        #expect(plan.contains { $0.contains("USING INDEX Gadget_index_kind") || $0.contains("USING COVERING INDEX Gadget_index_kind") })
        // Back to the first model: the indexes go, the data stays.
        _ = try Store(path: path, entities: [IndexV1.Gadget.self])
        #expect(try indexes().isEmpty)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Gadget") == "100")
    }
}
