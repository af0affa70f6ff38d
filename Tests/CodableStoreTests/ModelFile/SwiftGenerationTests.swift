import CodableStore
import CodableStoreJSON
import CodableStoreModelFile
import Foundation
import IssuesModel
import Testing

/// `ModelFile.swiftSource`: the generated classes of two models are checked in beside this file and compiled with the
/// tests (`GeneratedIssuesModel.swift`, `GeneratedOrdersModel.swift`); these tests check that they are exactly what
/// the generator writes now, and that they store what the models say.
@Suite struct SwiftGenerationTests {
    static let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let fixtures = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func checkedIn(_ name: String) throws -> String {
        try String(contentsOf: here.appendingPathComponent(name), encoding: .utf8)
    }

    static func ordersFile() throws -> ModelFile {
        let path = fixtures.appendingPathComponent("models/orders.yaml").path
        return try ModelFile.parse(String(contentsOfFile: path, encoding: .utf8), file: path)
    }

    @Test func theCompiledFilesAreWhatTheGeneratorWrites() throws {
        // Regenerate with: codable-store model issues | codable-store swift - --namespace GeneratedIssues --internal
        let issues = try ModelFile(compiled: ReferenceModel.entities).swiftSource(namespace: "GeneratedIssues", isPublic: false)
        #expect(issues == (try Self.checkedIn("GeneratedIssuesModel.swift")))
        // Regenerate with: codable-store swift Fixtures/models/orders.yaml --namespace GeneratedOrders --internal
        let orders = try Self.ordersFile().swiftSource(namespace: "GeneratedOrders", isPublic: false)
        #expect(orders == (try Self.checkedIn("GeneratedOrdersModel.swift")))
    }

    /// Every table and row, as the sqlite3 shell would print them, of the tables a model made (not the store's
    /// metadata, which records the Swift types).
    static func contents(of path: String) throws -> [String: [[String]]] {
        let raw = try RawDatabase(path)
        var tables: [String: [[String]]] = [:]
        for row in try raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name") {
            let name = row[0]
            // Not `_digest`: a keyed hash, with a key of each store's own.
            let columns = try raw.rows("SELECT name FROM pragma_table_info('\(name)') ORDER BY cid").map { $0[0] }.filter { $0 != "_digest" }
            let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
            // BINARY: decimal columns declare the store's collation, which this connection does not have.
            let order = columns.map { "\"\($0)\" COLLATE BINARY" }.joined(separator: ", ")
            tables[name] = [columns] + (try raw.rows("SELECT \(list) FROM \"\(name)\" ORDER BY \(order)"))
        }
        return tables
    }

    /// The generated classes of the reference model import the bundled fixture into the same tables, columns and
    /// rows as the compiled reference model.
    @Test func theGeneratedReferenceModelStoresWhatTheCompiledOneStores() throws {
        let fixture = Self.fixtures.appendingPathComponent("issues-1k.json").path
        let compiledPath = TestStore.temporaryPath("compiled.sqlite")
        let generatedPath = TestStore.temporaryPath("generated.sqlite")
        let compiled = try Store(path: compiledPath, entities: ReferenceModel.entities)
        let first = try compiled.importJSON(IssuesModel.Issue.self, from: .file(fixture), options: ImportOptions(decoder: ReferenceModel.decoder()))
        let generated = try Store(path: generatedPath, entities: GeneratedIssues.entities)
        let second = try generated.importJSON(
            GeneratedIssues.Issue.self, from: .file(fixture), options: ImportOptions(decoder: GeneratedIssues.decoder()))
        #expect(first.recordsImported == 1_000)
        #expect(second.recordsImported == first.recordsImported)
        let expected = try Self.contents(of: compiledPath)
        #expect(expected.keys.sorted() == ["Issue", "Issue_labels", "Label", "User"])
        #expect(expected["Issue"]?.count == 898)  // the columns, and the 897 distinct issues of the 1,000 records
        let actual = try Self.contents(of: generatedPath)
        #expect(actual.keys.sorted() == expected.keys.sorted())
        for table in expected.keys.sorted() {
            #expect(actual[table] == expected[table], "table \(table)")
        }
    }

    /// The richer generated model decodes what its file says: a composite identity, keys under another delimiter,
    /// defaults, millisecond dates, an ordered to-many with its inverse, and its reference policies.
    @Test func theGeneratedOrdersModelDecodesWhatItsFileSays() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: GeneratedOrders.entities)
        let json = """
            [{"region": "eu", "shop": "north", "number": 7, "amount": {"total": 12.50}, "placed.at": 1700000000500,
              "lines": [{"sku": "b", "position": 2, "order": null}, {"sku": "a", "position": 1}], "tags": [{"name": "gift"}],
              "buyer": {"customer": 42}, "default": "x",
              "extra": {"b": [1, true, null, 2.5], "a": "x"}},
             {"region": "eu", "shop": "north", "number": 7, "amount": {"total": 13, "currency": "USD"}, "placed.at": 1700000000500,
              "buyer": {"customer": {"id": 42, "name": "Ada"}}}]
            """
        try store.write { context in
            let orders = try GeneratedOrders.decoder().decode([GeneratedOrders.Order].self, from: Data(json.utf8), into: context)
            #expect(orders.count == 2)
            #expect(orders[0] === orders[1])  // one identity, (eu, 7): upserted
        }
        let raw = try RawDatabase(path)
        #expect(
            try raw.rows("SELECT number, total, currency, placedAt, paid, weight, attempts, \"default\" FROM \"Order\"")
                == [["7", "13", "USD", "1700000000.5", "0", "1.5", "3", "x"]])
        #expect(try raw.rows("SELECT id FROM Shop") == [["north"]])  // a stub made from the bare id
        // A json attribute: any JSON value, kept as its text with sorted keys.
        #expect(try raw.rows("SELECT extra FROM \"Order\"") == [[#"{"a":"x","b":[1,true,null,2.5]}"#]])
        // The first record's bare id was deferred, and resolved by the second's object (an object of only the
        // identity would have been a reference too).
        #expect(try raw.rows("SELECT c.id, c.name FROM Customer c JOIN \"Order\" o ON o.customer = c._pk") == [["42", "Ada"]])
        #expect(
            try raw.rows("SELECT l.sku, l.position, l.quantity, l.order_order FROM Line l ORDER BY l.order_order")
                == [["b", "2", "1", "0"], ["a", "1", "1", "1"]])
        #expect(try raw.rows("SELECT name FROM Tag") == [["gift"]])
        let indexes = try raw.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Order' AND sql IS NOT NULL ORDER BY name").map { $0[0] }
        #expect(indexes.count >= 3)  // the identity's, placedAt's and reference's
    }

    @Test func whatCompiledEntitiesCannotSayIsRefused() throws {
        func failure(_ attributes: [ModelFile.Attribute], name: String = "Event") -> String? {
            do {
                _ = try ModelFile(entities: [ModelFile.Entity(name: name, attributes: attributes)]).swiftSource()
                return nil
            } catch {
                return error.description
            }
        }
        #expect(
            failure([ModelFile.Attribute(name: "at", type: .date(.iso8601)), ModelFile.Attribute(name: "seen", type: .date(.seconds))])
                == "<model>: entities.Event.attributes.seen: dates in two formats (iso8601 at entities.Event.attributes.at, seconds here): a compiled model's decoder reads every date one way")
        #expect(
            failure([ModelFile.Attribute(name: "user-id", type: .integer)])
                == "<model>: entities.Event.attributes.user-id: user-id is not a Swift identifier: rename the field and give its JSON name as its key")
        #expect(failure([ModelFile.Attribute(name: "id", type: .integer)], name: "2fa") != nil)
        let plain = try ModelFile(entities: [ModelFile.Entity(name: "Event", attributes: [ModelFile.Attribute(name: "id", type: .integer)])])
            .swiftSource()
        #expect(plain.contains("@Entity public final class Event {\n    public var id: Int\n"))
        let json = try ModelFile(entities: [ModelFile.Entity(name: "Event", attributes: [ModelFile.Attribute(name: "payload", type: .json, isOptional: true)])])
            .swiftSource()
        // CodableStore's JSONValue, not a type of the generated file's own.
        #expect(!json.contains("enum JSONValue"))
        #expect(json.contains("    public var payload: JSONValue?\n"))
        #expect(plain.contains("public enum Model {\n    /// The entities, to open a store with.\n    public static let entities: [any EntityObject.Type] = [Event.self]\n"))
    }

    /// From a dump to a store without writing a line: `infer` on the GitHub issues page, `swift` on its model
    /// (`GeneratedGitHubModel.swift`, compiled with the tests), and an import of the page with the classes, checked
    /// row by row against the page.
    @Test func anInferredModelsClassesImportTheDumpItCameFrom() throws {
        let dump = Self.fixtures.appendingPathComponent("apis/github-issues.json").path
        var inference = ModelInference(options: ModelInference.Options(rootName: "Issue"))
        try JSONRecordStream(mode: .array).read(contentsOfFile: dump) { inference.add($0) }
        // Regenerate with: codable-store infer Fixtures/apis/github-issues.json --name Issue -o github.yaml
        //                  codable-store swift github.yaml --namespace GeneratedGitHub --internal
        let source = try inference.model().swiftSource(namespace: "GeneratedGitHub", isPublic: false)
        #expect(source == (try Self.checkedIn("GeneratedGitHubModel.swift")))

        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: GeneratedGitHub.entities)
        let report = try store.importJSON(GeneratedGitHub.Issue.self, from: .file(dump), options: ImportOptions(decoder: GeneratedGitHub.decoder()))
        #expect(report.recordsImported == 3)
        let raw = try RawDatabase(path)
        #expect(
            try raw.rows("SELECT id, number, state, locked, body, reactionsPlus1, pullRequestUrl FROM Issue ORDER BY id") == [
                ["1", "1347", "open", "0", "I'm having a problem with this.", "2", "https://api.github.com/repos/octo/hello/pulls/1347"],
                ["2", "1348", "closed", "0", "NULL", "0", "NULL"],
                ["3", "1349", "open", "1", "It crashes.", "1", "NULL"],
            ])
        // One User for the five places: each person once.
        #expect(try raw.rows("SELECT id, login, siteAdmin FROM User ORDER BY id") == [["1", "octocat", "0"], ["2", "hubot", "1"], ["3", "monalisa", "0"]])
        func login(_ column: String) throws -> [[String]] {
            try raw.rows("SELECT i.id, u.login FROM Issue i LEFT JOIN User u ON u._pk = i.\"\(column)\" ORDER BY i.id")
        }
        #expect(try login("user") == [["1", "octocat"], ["2", "hubot"], ["3", "monalisa"]])
        #expect(try login("assignee") == [["1", "hubot"], ["2", "NULL"], ["3", "octocat"]])
        #expect(try login("closedBy") == [["1", "NULL"], ["2", "octocat"], ["3", "NULL"]])
        #expect(
            try raw.rows("SELECT i.id, u.login FROM Issue_assignees j JOIN Issue i ON i._pk = j.source JOIN User u ON u._pk = j.target ORDER BY i.id, u.id")
                == [["1", "hubot"], ["3", "octocat"], ["3", "monalisa"]])
        #expect(
            try raw.rows("SELECT i.id, l.name FROM Issue_labels j JOIN Issue i ON i._pk = j.source JOIN Label l ON l._pk = j.target ORDER BY i.id, l.id")
                == [["1", "bug"], ["2", "bug"], ["2", "docs"]])
        #expect(try raw.rows("SELECT m.title, u.login FROM Milestone m JOIN User u ON u._pk = m.creator") == [["v1.0", "octocat"]])
    }

    /// The generated `migrations` (from the file's `migrations:`) take a store the earlier model made to the classes:
    /// the renamed attribute keeps its values, and the SQL step runs after it.
    @Test func theGeneratedMigrationsRunOnAStoreTheEarlierModelMade() throws {
        let path = TestStore.temporaryPath()
        var shop = RuntimeEntityBuilder(name: "Shop")
        shop.attribute("id", .string)
        shop.attribute("title", .string, optional: true)
        try Store(path: path, entities: [], runtimeEntities: [shop.build(identity: ["id"])]).write { context in
            _ = try StoreDecoder().decodeObjects(
                entity: "Shop", from: Data(#"[{"id": "north", "title": "North"}, {"id": "south", "title": ""}]"#.utf8), into: context)
        }
        let store = try Store(path: path, entities: GeneratedOrders.entities, options: .init(migrations: GeneratedOrders.migrations))
        #expect(try RawDatabase(path).rows("SELECT id, name FROM Shop ORDER BY id") == [["north", "North"], ["south", "NULL"]])
        #expect(try store.appliedMigrations().map(\.name) == ["shop names"])
    }
}
