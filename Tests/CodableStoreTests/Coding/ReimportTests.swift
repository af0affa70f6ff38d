import CodableStore
import Foundation
import Testing

/// A GitHub label: page 2 of a label listing renames "bug" to "defect" (a label rename).
@Entity final class RepoLabel {
    var id: Int
    var name: String
    var color: String = ""
    var summary: String?
    static let identity = Identity(\RepoLabel.id)
    enum CodingKeys: String, EntityCodingKey {
        case id, name, color
        case summary = "description"
    }
    init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

/// Re-importing pages writes nothing when the store already holds what they say, even when a page in between
/// changed a value and a later page changed it back.
@Suite struct ReimportTests {
    @Test func reDecodingSeveralPagesInOneWriteWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [RepoLabel.self], options: .init(statementObserver: log.observer))
        let pages = try [SharedFixtures.data("github/labels-page-1.json"), SharedFixtures.data("github/labels-page-2.json")]
        try store.write { context in
            for page in pages { _ = try StoreDecoder().decode([RepoLabel].self, from: page, into: context) }
        }
        let rows = "SELECT id, name, color, summary FROM RepoLabel ORDER BY id"
        let expected = [
            ["71", "defect", "b60205", "Something is not working"], ["72", "pr-ready", "0e8a16", "NULL"],
            ["73", "docs", "0075ca", "Documentation"],
        ]
        #expect(try RawDatabase(path).rows(rows) == expected)

        // Both pages again, in one write: label 71 goes bug → defect in memory, as stored.
        log.reset()
        try store.write { context in
            for page in pages { _ = try StoreDecoder().decode([RepoLabel].self, from: page, into: context) }
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(try RawDatabase(path).rows(rows) == expected)

        // A real change among them is still written, and only its columns.
        log.reset()
        try store.write { context in
            // (Looked up first: a lookup saves what is pending.)
            let ready = try #require(try context.object(RepoLabel.self, identity: 72))
            let defect = try #require(try context.object(RepoLabel.self, identity: 71))
            for page in pages { _ = try StoreDecoder().decode([RepoLabel].self, from: page, into: context) }
            ready.color = "ffffff"
            defect.name = "bug"
            defect.name = "defect"
        }
        #expect(log.writes == [#"UPDATE "RepoLabel" SET "color" = ?, "_digest" = ? WHERE "_pk" = ?"#])
    }

    @Test func anImportOfBothPagesAgainWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: [RepoLabel.self], options: .init(statementObserver: log.observer))
        let dump = TestStore.temporaryPath("labels.json")
        let pages = try [SharedFixtures.data("github/labels-page-1.json"), SharedFixtures.data("github/labels-page-2.json")]
        let records = try pages.flatMap { try JSONSerialization.jsonObject(with: $0) as! [Any] }
        try JSONSerialization.data(withJSONObject: records).write(to: URL(fileURLWithPath: dump))
        _ = try store.importJSON(RepoLabel.self, from: .file(dump))
        log.reset()
        let report = try store.importJSON(RepoLabel.self, from: .file(dump))
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(report.entities["RepoLabel"]?.updated == 0)
        #expect(report.entities["RepoLabel"]?.inserted == 0)
    }
}

/// Found by the fuzzer: a to-one set back to its stored destination, and a row leaving an ordered relationship.
@Suite struct ToOneStoredValueTests {
    @Test func aToOneSetBackToItsStoredDestinationWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: log.observer))
        try store.write { context in
            let ada = Person(id: 1, name: "Ada")
            try context.insert(ada)
            ada.country = Country(code: "GB", name: "United Kingdom")
            try context.insert(Country(code: "FR", name: "France"))
        }
        log.reset()
        try store.write { context in
            _ = try StoreDecoder().decode(
                [Person].self, from: Data(#"[{"id": 1, "country": "FR"}, {"id": 1, "country": null}, {"id": 1, "country": "GB"}]"#.utf8),
                into: context)
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(try RawDatabase(path).value("SELECT c.code FROM Person p JOIN Country c ON c._pk = p.country") == "GB")
    }

    @Test func aRowThatLeavesAnOrderedRelationshipLeavesItsPosition() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let ada = Person(id: 1)
            try context.insert(ada)
            ada.attributes = [PersonAttribute(key: "a", value: "1"), PersonAttribute(key: "b", value: "2")]
        }
        #expect(try RawDatabase(path).rows("SELECT key, person IS NOT NULL, person_order FROM PersonAttribute ORDER BY key") == [["a", "1", "0"], ["b", "1", "1"]])
        // In a later write, from the attribute's side, without loading the person's list.
        try store.write { context in
            let b = try #require(try context.first(PersonAttribute.self, where: \.key == "b"))
            b.person = nil
        }
        let after = try RawDatabase(path).rows("SELECT key, person IS NOT NULL, person_order FROM PersonAttribute ORDER BY key")
        #expect(after == [["a", "1", "0"], ["b", "0", "NULL"]], "\(after)")
    }
}

/// Ordered to-many lists set back to their stored members write nothing (found by the fuzz target).
@Suite struct ToManyStoredMembersTests {
    @Test func anOrderedListChangedAndBackWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let decoder = StoreDecoder()
        func decode(_ labels: String, _ context: Context) throws {
            _ = try decoder.decode(GitIssue.self, from: Data(#"{"id": 1, "number": 1, "title": "t", "labels": \#(labels)}"#.utf8), into: context)
        }
        try store.write { context in
            _ = try decoder.decode([Topic].self, from: Data(#"[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]"#.utf8), into: context)
            try decode("[1, 2]", context)
        }
        let rows = "SELECT i.id, t.id, j.position FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY j.position"
        #expect(try RawDatabase(path).rows(rows) == [["1", "1", "0"], ["1", "2", "1"]])
        for detour in ["[2]", "[2, 1]", "[]", "[3, 1, 2]"] {
            log.reset()
            try store.write { context in
                try decode(detour, context)
                try decode("[1, 2]", context)
            }
            #expect(log.writes.filter { !$0.contains("\"Topic\"") }.isEmpty, "\(detour): \(log.writes)")
            #expect(try RawDatabase(path).rows(rows) == [["1", "1", "0"], ["1", "2", "1"]], "\(detour)")
        }
        // A real change is written.
        log.reset()
        try store.write { try decode("[2, 1]", $0) }
        #expect(!log.writes.isEmpty)
        #expect(try RawDatabase(path).rows(rows) == [["1", "2", "0"], ["1", "1", "1"]])
    }

    @Test func aForeignKeyOrderedListChangedAndBackWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: log.observer))
        try store.write { context in
            let ada = Person(id: 1)
            try context.insert(ada)
            ada.attributes = [PersonAttribute(key: "a", value: "1"), PersonAttribute(key: "b", value: "2")]
        }
        log.reset()
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            let original = ada.attributes
            ada.attributes = original.reversed()
            ada.attributes = original
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
    }
}

/// A foreign key changed through the other side of the relationship and back writes nothing either.
@Suite struct InverseStoredValueTests {
    @Test func aForeignKeySetThroughTheInverseAndBackWritesNothing() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: TestStore.entities, options: .init(statementObserver: log.observer))
        try store.write { context in
            try context.insert(Person(id: 1))
            try context.insert(PersonAttribute(key: "x", value: "1"))
        }
        log.reset()
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            let x = try #require(try context.first(PersonAttribute.self, where: \.key == "x"))
            ada.attributes = [x]  // sets x.person through the inverse
            x.person = nil
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(try RawDatabase(path).rows("SELECT key, person, person_order FROM PersonAttribute") == [["x", "NULL", "NULL"]])
    }
}
