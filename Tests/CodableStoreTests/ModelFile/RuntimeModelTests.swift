import CodableStore
import CodableStoreJSON
import CodableStoreModelFile
import Foundation
import IssuesModel
import Testing

/// Entities described at run time: a model file's entities run by the same context, decoder and importer as compiled
/// ones, and store what the compiled classes of the same model store, row by row.
@Suite struct RuntimeModelTests {
    static let fixtures = SwiftGenerationTests.fixtures

    static func modelFile(_ relative: String) throws -> ModelFile {
        let path = fixtures.appendingPathComponent(relative).path
        return try ModelFile.parse(String(contentsOfFile: path, encoding: .utf8), file: path)
    }

    /// The reference model as `codable-store model issues` prints it, read back from its text.
    static func referenceModel() throws -> ModelFile {
        try ModelFile.parse(ModelFile(compiled: ReferenceModel.entities).rendered(), file: "issues.yaml")
    }

    @Test func theReferenceModelFileStoresWhatTheCompiledModelStores() throws {
        let fixture = Self.fixtures.appendingPathComponent("issues-1k.json").path
        let compiledPath = TestStore.temporaryPath("compiled.sqlite")
        let runtimePath = TestStore.temporaryPath("runtime.sqlite")
        let compiled = try Store(path: compiledPath, entities: ReferenceModel.entities)
        let first = try compiled.importJSON(IssuesModel.Issue.self, from: .file(fixture), options: ImportOptions(decoder: ReferenceModel.decoder()))
        let runtime = try Store(path: runtimePath, entities: [], runtimeEntities: try Self.referenceModel().entityDescriptions())
        // No decoder options: each date attribute reads its own format.
        let second = try runtime.importJSON(entity: "Issue", from: .file(fixture))
        #expect(first.recordsImported == 1_000)
        #expect(second.recordsImported == first.recordsImported)
        #expect(second.entities == first.entities)
        let expected = try SwiftGenerationTests.contents(of: compiledPath)
        #expect(expected["Issue"]?.count == 898)
        let actual = try SwiftGenerationTests.contents(of: runtimePath)
        #expect(actual.keys.sorted() == expected.keys.sorted())
        for table in expected.keys.sorted() {
            #expect(actual[table] == expected[table], "table \(table)")
        }
        // Importing again changes nothing, and says so.
        let again = try runtime.importJSON(entity: "Issue", from: .file(fixture))
        #expect(again.entities["Issue"]?.inserted == 0)
        #expect(try SwiftGenerationTests.contents(of: runtimePath) == actual)
    }

    @Test func anInferredModelStoresWhatItsGeneratedClassesStore() throws {
        let dump = Self.fixtures.appendingPathComponent("apis/github-issues.json").path
        var inference = ModelInference(options: ModelInference.Options(rootName: "Issue"))
        try JSONRecordStream(mode: .array).read(contentsOfFile: dump) { inference.add($0) }
        let model = inference.model()
        let generatedPath = TestStore.temporaryPath("generated.sqlite")
        let generated = try Store(path: generatedPath, entities: GeneratedGitHub.entities)
        _ = try generated.importJSON(GeneratedGitHub.Issue.self, from: .file(dump), options: ImportOptions(decoder: GeneratedGitHub.decoder()))
        let runtimePath = TestStore.temporaryPath("runtime.sqlite")
        let runtime = try Store(path: runtimePath, entities: [], runtimeEntities: try model.entityDescriptions())
        let report = try runtime.importJSON(entity: "Issue", from: .file(dump))
        #expect(report.recordsImported == 3)
        let expected = try SwiftGenerationTests.contents(of: generatedPath)
        let actual = try SwiftGenerationTests.contents(of: runtimePath)
        #expect(actual.keys.sorted() == expected.keys.sorted())
        #expect(expected.keys.contains("Issue_assignees"))
        for table in expected.keys.sorted() {
            #expect(actual[table] == expected[table], "table \(table)")
        }
    }

    @Test func theOrdersModelFileStoresWhatItsGeneratedClassesStore() throws {
        let json = """
            [{"region": "eu", "shop": "north", "number": 7, "amount": {"total": 12.50}, "placed.at": 1700000000500,
              "lines": [{"sku": "b", "position": 2, "order": null}, {"sku": "a", "position": 1}], "tags": [{"name": "gift"}],
              "buyer": {"customer": 42}, "default": "x",
              "extra": {"b": [1, true, null, 2.5], "a": "x"}},
             {"region": "eu", "shop": "north", "number": 7, "amount": {"total": 13, "currency": "USD"}, "placed.at": 1700000000500,
              "buyer": {"customer": {"id": 42, "name": "Ada"}}},
             {"region": "us", "shop": "south", "number": 8, "amount": {"total": 1}, "placed.at": 1700000001000, "paid": true,
              "lines": [{"sku": "c", "position": 1, "quantity": 4}], "extra": [{"z": 1.50, "y": {"b": 2, "a": 100000000000000000001}}]}]
            """
        let generatedPath = TestStore.temporaryPath("generated.sqlite")
        let generated = try Store(path: generatedPath, entities: GeneratedOrders.entities)
        try generated.write { context in
            _ = try GeneratedOrders.decoder().decode([GeneratedOrders.Order].self, from: Data(json.utf8), into: context)
        }
        let runtimePath = TestStore.temporaryPath("runtime.sqlite")
        let runtime = try Store(path: runtimePath, entities: [], runtimeEntities: try Self.modelFile("models/orders.yaml").entityDescriptions())
        let decoded = try runtime.write { context in
            let orders = try StoreDecoder().decodeObjects(entity: "Order", from: Data(json.utf8), into: context)
            #expect(orders.count == 3)
            #expect(orders[0] === orders[1])  // one identity, (eu, 7): upserted
            return orders.count
        }
        #expect(decoded == 3)
        let expected = try SwiftGenerationTests.contents(of: generatedPath)
        let actual = try SwiftGenerationTests.contents(of: runtimePath)
        #expect(actual.keys.sorted() == expected.keys.sorted())
        for table in expected.keys.sorted() {
            #expect(actual[table] == expected[table], "table \(table)")
        }
        // Numbers in a json attribute as written (1.50, an integer beyond 64 bits), by the file and by the classes.
        let raw = try RawDatabase(runtimePath)
        #expect(try raw.rows("SELECT extra FROM \"Order\" ORDER BY number") == [[#"{"a":"x","b":[1,true,null,2.5]}"#], [#"[{"y":{"a":100000000000000000001,"b":2},"z":1.50}]"#]])
    }

    /// Ids that are numbers in some records and strings in others: the inferred model file reads them as text, and so
    /// do its generated classes (`Identity(…, numbersAsText: true)`), into the same rows, one owner for `"10"` and `10`.
    @Test func mixedIdsStoreAsTheirTextThroughTheModelFileAndItsGeneratedClasses() throws {
        let dump = Self.fixtures.appendingPathComponent("apis/mixed-ids.json").path
        var inference = ModelInference(options: ModelInference.Options(rootName: "Task"))
        try JSONRecordStream(mode: .array).read(contentsOfFile: dump) { inference.add($0) }
        let model = inference.model()
        // The classes compiled with the tests are what the generator writes for this model.
        let source = try model.swiftSource(namespace: "GeneratedMixedIDs", isPublic: false)
        #expect(source == (try SwiftGenerationTests.checkedIn("GeneratedMixedIDsModel.swift")))

        let generatedPath = TestStore.temporaryPath("generated.sqlite")
        let generated = try Store(path: generatedPath, entities: GeneratedMixedIDs.entities)
        let first = try generated.importJSON(GeneratedMixedIDs.Task.self, from: .file(dump), options: ImportOptions(decoder: GeneratedMixedIDs.decoder()))
        let runtimePath = TestStore.temporaryPath("runtime.sqlite")
        let runtime = try Store(path: runtimePath, entities: [], runtimeEntities: try model.entityDescriptions())
        let second = try runtime.importJSON(entity: "Task", from: .file(dump))
        #expect(first.recordsImported == 3)
        #expect(second.recordsImported == 3)
        let raw = try RawDatabase(generatedPath)
        #expect(try raw.rows("SELECT id, typeof(id), title FROM Task ORDER BY id") == [["1", "text", "first"], ["2", "text", "second"], ["3", "text", "third"]])
        #expect(try raw.rows("SELECT o.id, o.name, count(t._pk) FROM Owner o JOIN Task t ON t.owner = o._pk GROUP BY o._pk ORDER BY o.id") == [["10", "Ann", "2"], ["11", "Bob", "1"]])
        let expected = try SwiftGenerationTests.contents(of: generatedPath)
        let actual = try SwiftGenerationTests.contents(of: runtimePath)
        #expect(actual.keys.sorted() == ["Owner", "Task"])
        for table in expected.keys.sorted() {
            #expect(actual[table] == expected[table], "table \(table)")
        }
    }
}
