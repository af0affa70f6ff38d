import CodableStore
import Foundation
import Testing

@Entity final class PosItem {
    var id: Int
    var owner: PosOwner?
    var tags: [PosTag] = []
    static let identity = Identity(\PosItem.id)
    init(id: Int) { self.id = id }
}

@Entity final class PosOwner {
    var id: Int
    var name: String = ""
    var items: [PosItem] = []
    static let identity = Identity(\PosOwner.id)
    init(id: Int) { self.id = id }
}

@Entity final class PosTag {
    var id: Int
    var items: Set<PosItem> = []
    static let identity = Identity(\PosTag.id)
    init(id: Int) { self.id = id }
}

/// Found by the fuzz target: a link made from the unordered side of an ordered many-to-many still gets its
/// position in the ordered side's list, however the objects nest.
@Suite struct JoinPositionTests {
    static let nested = #"[{"id":3,"owner":{"id":4,"name":"","items":[{"id":3,"tags":[{"id":6,"items":[3]}]}]}}]"#

    @Test func aLinkMadeFromTheUnorderedSideHasItsPosition() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [PosItem.self, PosOwner.self, PosTag.self])
        try store.write { _ = try StoreDecoder().decode([PosItem].self, from: Data(Self.nested.utf8), into: $0) }
        let decoded = try RawDatabase(path).rows("SELECT source, target, position FROM PosItem_tags")
        #expect(decoded == [["1", "1", "0"]], "\(decoded)")
        let other = TestStore.temporaryPath()
        let imported = try Store(path: other, entities: [PosItem.self, PosOwner.self, PosTag.self])
        let dump = TestStore.temporaryPath("d.json")
        try Self.nested.write(toFile: dump, atomically: true, encoding: .utf8)
        _ = try imported.importJSON(PosItem.self, from: .file(dump))
        let importedRows = try RawDatabase(other).rows("SELECT source, target, position FROM PosItem_tags")
        #expect(importedRows == [["1", "1", "0"]], "\(importedRows)")
    }
}
