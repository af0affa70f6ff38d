import CodableStore
import CodableStoreModelFile
import Foundation
import IssuesModel
import Testing

/// `codable-store import --model FILE` and `export --model FILE`: any dump through a model file, with the options the
/// built-in model has.
@Suite struct ModelImportCommandTests {
    static func fixture(_ name: String) -> String { CLI.fixtures.appendingPathComponent(name).path }

    /// The store a model file describes, opened by the library, to read what the command wrote.
    static func open(_ store: String, model: String) throws -> Store {
        let file = try ModelFile.parse(String(contentsOfFile: model, encoding: .utf8), file: model)
        return try Store(path: store, entities: [], runtimeEntities: try file.entityDescriptions())
    }

    @Test func inferPipedIntoImportStoresTheDump() throws {
        let dump = Self.fixture("apis/github-issues.json")
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("github.sqlite").path
        let inferred = try CLI.run(["infer", dump, "--name", "Issue"])
        #expect(inferred.status == 0, "\(inferred.stderr)")
        // codable-store infer DUMP | codable-store import --model - DUMP --store STORE
        let imported = try CLI.run(["import", "--model", "-", dump, "--store", store, "--json"], stdin: Data(inferred.stdout.utf8))
        #expect(imported.status == 0, "\(imported.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(imported.stdout.utf8))
        #expect(report.recordsImported == 3)
        #expect(report.entities["User"]?.inserted == 3)  // five places, three people
        let model = directory.appendingPathComponent("github.yaml").path
        try inferred.stdout.write(toFile: model, atomically: true, encoding: .utf8)
        let database = try Self.open(store, model: model)
        let rows = try database.read { context in
            try context.fetch(entity: "Issue", orderBy: [.ascending("id")]).map { issue -> [String] in
                let number = try issue.value("number", as: Int.self)
                let login = try issue.object("user")?.value("login", as: String.self)
                let labels = try issue.objects("labels").count
                return [String(number), login ?? "-", String(labels)]
            }
        }
        #expect(rows == [["1347", "octocat", "1"], ["1348", "hubot", "2"], ["1349", "monalisa", "0"]])
    }

    @Test func theReferenceModelFileImportsAndExportsAsTheBuiltInModel() throws {
        let dump = Self.fixture("issues-1k.json")
        let directory = try CLI.temporaryDirectory()
        let model = directory.appendingPathComponent("issues.yaml").path
        #expect(try CLI.run(["model", "issues", "-o", model]).status == 0)
        let viaFile = directory.appendingPathComponent("file.sqlite").path
        let builtIn = directory.appendingPathComponent("builtin.sqlite").path
        let first = try CLI.run(["import", "--model", model, dump, "--store", viaFile, "--json"])
        let second = try CLI.run(["import", "issues", dump, "--store", builtIn, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(second.status == 0, "\(second.stderr)")
        let firstReport = try JSONDecoder().decode(ImportReport.self, from: Data(first.stdout.utf8))
        let secondReport = try JSONDecoder().decode(ImportReport.self, from: Data(second.stdout.utf8))
        #expect(firstReport.entities == secondReport.entities)
        let exportFile = try CLI.run(["export", "--model", model, "--store", viaFile])
        let exportBuiltIn = try CLI.run(["export", "issues", "--store", builtIn])
        #expect(exportFile.status == 0, "\(exportFile.stderr)")
        #expect(!exportFile.stdout.isEmpty)
        #expect(exportFile.stdout == exportBuiltIn.stdout)
        let stableFile = try CLI.run(["export", "--model", model, "--store", viaFile, "--stable"])
        let stableBuiltIn = try CLI.run(["export", "issues", "--store", builtIn, "--stable"])
        #expect(stableFile.stdout == stableBuiltIn.stdout)
        // A second import of the same dump skips every unchanged record, as the built-in model's does.
        let again = try CLI.run(["import", "--model", model, dump, "--store", viaFile, "--json"])
        let againBuiltIn = try CLI.run(["import", "issues", dump, "--store", builtIn, "--json"])
        let againReport = try JSONDecoder().decode(ImportReport.self, from: Data(again.stdout.utf8))
        let againBuiltInReport = try JSONDecoder().decode(ImportReport.self, from: Data(againBuiltIn.stdout.utf8))
        #expect(againReport.unchangedRecordsSkipped == 802)  // the records not repeated later in the dump
        #expect(againReport.unchangedRecordsSkipped == againBuiltInReport.unchangedRecordsSkipped)
        #expect(againReport.entities == againBuiltInReport.entities)
    }

    @Test func jsonLinesWrapperObjectsAndMixedIdsImportThroughTheirInferredModels() throws {
        let directory = try CLI.temporaryDirectory()
        func inferAndImport(_ dump: String, name: String, _ options: [String]) throws -> (store: Store, report: ImportReport) {
            let model = directory.appendingPathComponent("\(name).yaml").path
            let inferred = try CLI.run(["infer", dump, "--name", name, "-o", model] + options)
            #expect(inferred.status == 0, "\(inferred.stderr)")
            let store = directory.appendingPathComponent("\(name).sqlite").path
            let imported = try CLI.run(["import", "--model", model, dump, "--store", store, "--json"] + options)
            #expect(imported.status == 0, "\(imported.stderr)")
            return (try Self.open(store, model: model), try JSONDecoder().decode(ImportReport.self, from: Data(imported.stdout.utf8)))
        }
        // JSON Lines, a composite identity (stream, seq): the repeated event is one row.
        let (events, eventsReport) = try inferAndImport(Self.fixture("apis/events.jsonl"), name: "Event", ["--jsonl"])
        #expect(eventsReport.entities["Event"]?.inserted == eventsReport.recordsImported - 1)
        let paid = try events.read { context in try context.fetch(entity: "Event", where: .field("type") == "paid").count }
        #expect(paid == 1)
        // A list inside a wrapper object.
        let (charges, chargesReport) = try inferAndImport(Self.fixture("apis/stripe-charges.json"), name: "Charge", ["--at", "data"])
        #expect(chargesReport.recordsImported > 0)
        #expect(try charges.read { context in try context.count(entity: "Charge") } == chargesReport.entities["Charge"]?.inserted)
        // Ids that are numbers in some records and strings in others: one row per id.
        let (mixed, _) = try inferAndImport(Self.fixture("apis/mixed-ids.json"), name: "Item", [])
        let owners = try mixed.read { context in
            try context.fetch(entity: "Owner", orderBy: [.ascending("id")]).map { [try $0.value("id", as: String.self), try $0.value("name", as: String.self)] }
        }
        #expect(owners == [["10", "Ann"], ["11", "Bob"]])
        #expect(try mixed.read { context in try context.count(entity: "Item") } == 3)
    }

    @Test func aDumpThatContradictsTheModelNamesTheRecordThePathAndTheModelsLine() throws {
        let directory = try CLI.temporaryDirectory()
        let model = directory.appendingPathComponent("items.yaml").path
        try """
            version: 1
            entities:
              Item:
                identity: [id]
                attributes:
                  id: integer
                  title: string
                relationships:
                  owner: Owner
              Owner:
                identity: [id]
                attributes:
                  id: integer
                  since: {type: date, format: iso8601}
            """.write(toFile: model, atomically: true, encoding: .utf8)
        let store = directory.appendingPathComponent("items.sqlite").path
        func failure(_ json: String) throws -> String {
            let result = try CLI.run(["import", "--model", model, "-", "--store", store], stdin: Data(json.utf8))
            #expect(result.status == 1)
            return result.stderr
        }
        #expect(
            try failure(#"[{"id": 1, "title": "a"}, {"id": 2, "title": 5}]"#)
                == "error: record 1 (line 1, column 27, byte 26) at [1].title: Expected to decode String but found number instead; the model says Item.title: string (items.yaml:7:7)\n".replacingOccurrences(of: "items.yaml", with: model))
        #expect(
            try failure(#"[{"id": 1, "title": "a", "owner": {"id": 4, "since": "yesterday"}}]"#)
                == "error: record 0 (line 1, column 2, byte 1) at [0].owner.since: Expected date string to be ISO8601-formatted; the model says Owner.since: date (iso8601) (\(model):14:7)\n")
        #expect(
            try failure(#"[{"title": "a"}]"#)
                == "error: record 0 (line 1, column 2, byte 1) at [0]: Item at [0] has no identity: expected key 'id' but received keys 'title'; the model says Item.id: integer, its identity (\(model):6:7)\n")
        // Nothing of a failed import is kept.
        let database = try Self.open(store, model: model)
        #expect(try database.read { context in try context.count(entity: "Item") } == 0)
        // With --on-error skip, the rest is imported and the bad record listed; batches of one, each committed.
        let skipped = try CLI.run(
            ["import", "--model", model, "-", "--store", store, "--on-error", "skip", "--batch-size", "1", "--commit-every-batch", "--json"],
            stdin: Data(#"[{"id": 1, "title": "a"}, {"id": 2, "title": 5}, {"id": 3, "title": "c"}]"#.utf8))
        #expect(skipped.status == 0, "\(skipped.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(skipped.stdout.utf8))
        #expect(report.recordsImported == 2)
        #expect(report.skippedRecords.map(\.index) == [1])
        #expect(try database.read { context in try context.count(entity: "Item") } == 2)
    }

    @Test func badArgumentsAndModelsAreRefusedWithWhatToDo() throws {
        let dump = Self.fixture("apis/mixed-ids.json")
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        let twoArguments = try CLI.run(["import", "--model", "m.yaml", "issues", dump, "--store", store])
        #expect(twoArguments.status != 0)
        #expect(twoArguments.stderr.contains("with --model, give the dump alone"))
        let bothStdin = try CLI.run(["import", "--model", "-", "-", "--store", store])
        #expect(bothStdin.stderr.contains("the model and the dump cannot both be read from standard input"))
        let unknownBuiltIn = try CLI.run(["import", "orders", dump, "--store", store])
        #expect(unknownBuiltIn.stderr.contains("unknown model 'orders'"))
        #expect(unknownBuiltIn.stderr.contains("--model FILE"))
        let model = directory.appendingPathComponent("items.yaml").path
        #expect(try CLI.run(["infer", dump, "--name", "Item", "-o", model]).status == 0)
        let unknownEntity = try CLI.run(["import", "--model", model, "--entity", "Nope", dump, "--store", store])
        #expect(unknownEntity.status == 1)
        #expect(unknownEntity.stderr == "error: \(model) has no entity named Nope; its entities are Item, Owner\n")
        let badModel = try CLI.run(
            ["import", "--model", "-", dump, "--store", store], stdin: Data("version: 1\nentities:\n  Item:\n    attributes:\n      id: intger\n".utf8))
        #expect(badModel.status == 1)
        #expect(badModel.stderr.hasPrefix("error: <stdin>:5:11: entities.Item.attributes.id: unknown type 'intger'"))
        let neither = try CLI.run(["export", "--store", store])
        #expect(neither.stderr.contains("give a built-in model's name (issues) or --model FILE"))
    }

    @Test func syncDeletesWhatTheDumpNoLongerHas() throws {
        let directory = try CLI.temporaryDirectory()
        let model = directory.appendingPathComponent("items.yaml").path
        try "version: 1\nentities:\n  Item:\n    identity: [id]\n    attributes:\n      id: integer\n      title: string\n"
            .write(toFile: model, atomically: true, encoding: .utf8)
        let store = directory.appendingPathComponent("items.sqlite").path
        let full = try CLI.run(
            ["import", "--model", model, "-", "--store", store], stdin: Data(#"[{"id":1,"title":"a"},{"id":2,"title":"b"},{"id":3,"title":"c"}]"#.utf8))
        #expect(full.status == 0, "\(full.stderr)")
        let synced = try CLI.run(
            ["import", "--model", model, "-", "--store", store, "--sync", "--json"], stdin: Data(#"[{"id":2,"title":"B"}]"#.utf8))
        #expect(synced.status == 0, "\(synced.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(synced.stdout.utf8))
        #expect(report.entities["Item"]?.deleted == 2)
        let database = try Self.open(store, model: model)
        let titles = try database.read { context in try context.fetch(entity: "Item").map { try $0.value("title", as: String.self) } }
        #expect(titles == ["B"])
    }

    /// An edited model file says what changed (`migrations:`), and the next import into the store made with the old
    /// file keeps its rows: the renamed attribute keeps its values.
    @Test func aModelFilesMigrationsRunOnTheStoreItsEarlierVersionMade() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("items.sqlite").path
        let first = directory.appendingPathComponent("v1.yaml").path
        let second = directory.appendingPathComponent("v2.yaml").path
        let dump = directory.appendingPathComponent("items.json").path
        try "version: 1\nentities:\n  Item:\n    identity: [id]\n    attributes:\n      id: integer\n      title: string\n"
            .write(toFile: first, atomically: true, encoding: .utf8)
        try """
            version: 1
            entities:
              Item:
                identity: [id]
                attributes:
                  id: integer
                  heading: {type: string, key: title}
            migrations:
              - name: heading instead of title
                steps:
                  - renameAttribute: {entity: Item, from: title, to: heading}

            """.write(toFile: second, atomically: true, encoding: .utf8)
        try #"[{"id": 1, "title": "one"}, {"id": 2, "title": "two"}]"#.write(toFile: dump, atomically: true, encoding: .utf8)
        let before = try CLI.run(["import", "--model", first, dump, "--store", store])
        #expect(before.status == 0, "\(before.stderr)")
        // Without the migration, the store refuses the edited model, naming the difference.
        let unmigrated = directory.appendingPathComponent("unmigrated.yaml").path
        try String(contentsOfFile: second, encoding: .utf8).components(separatedBy: "migrations:")[0].write(toFile: unmigrated, atomically: true, encoding: .utf8)
        let refused = try CLI.run(["import", "--model", unmigrated, dump, "--store", store])
        #expect(refused.status == 1)
        #expect(
            refused.stderr
                == "error: store: the store was made with another version of the model: Item.title: attribute was removed; Item.heading: new non-optional attribute without a default value. Say what changed in the model file's 'migrations:' (renameAttribute, renameEntity, changeIdentity, sql), or import into a new store\n")

        let check = try CLI.run(["model", "--check", second])
        #expect(check.stdout == "\(second): 1 entity, 2 fields, 1 migration: ok\n")
        try #"[{"id": 3, "title": "three"}]"#.write(toFile: dump, atomically: true, encoding: .utf8)
        let after = try CLI.run(["import", "--model", second, dump, "--store", store, "--json"])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(
            try Connection(path: store).rows(sql: "SELECT id, heading FROM Item ORDER BY id")
                == [[.integer(1), .text("one")], [.integer(2), .text("two")], [.integer(3), .text("three")]])
        let exported = try CLI.run(["export", "--model", second, "--store", store])
        #expect(exported.stdout.contains(#"{"id":2,"title":"two"}"#), "\(exported.stdout)")
    }
}
