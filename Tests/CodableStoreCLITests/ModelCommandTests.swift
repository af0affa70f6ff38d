import CodableStoreModelFile
import Foundation
import IssuesModel
import Testing

/// `codable-store model`: the reference model printed as a model file, and a model file checked.
@Suite struct ModelCommandTests {
    @Test func printsTheReferenceModelAsAFileThatReadsBack() throws {
        let result = try CLI.run(["model", "issues"])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout.hasPrefix("# The reference model of codable-store"))
        let parsed = try ModelFile.parse(result.stdout, file: "stdout")
        #expect(parsed == (try ModelFile(compiled: ReferenceModel.entities)))
        #expect(parsed.entities.map(\.name) == ["Issue", "User", "Label"])

        // --check reads what it printed, from a file and from standard input.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("model-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("issues.yaml").path
        let written = try CLI.run(["model", "issues", "-o", path])
        #expect(written.status == 0)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == result.stdout)
        let checked = try CLI.run(["model", "--check", path])
        #expect(checked.status == 0)
        #expect(checked.stdout == "\(path): 3 entities, 17 fields: ok\n")
        let piped = try CLI.run(["model", "--check", "-"], stdin: Data(result.stdout.utf8))
        #expect(piped.stdout == "<stdin>: 3 entities, 17 fields: ok\n")
    }

    @Test func checkReportsTheFileLineAndFieldOfAMistake() throws {
        let text = """
            version: 1
            entities:
              Issue:
                identity: [id]
                attributes:
                  id: integer
                  title: strng
            """
        let result = try CLI.run(["model", "--check", "-"], stdin: Data(text.utf8))
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr
                == "error: <stdin>:7:14: entities.Issue.attributes.title: unknown type 'strng' (types: integer, double, bool, string, date, decimal, uuid, url, data, json)\n")
        let missing = try CLI.run(["model", "--check", "/nonexistent/model.yaml"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "error: cannot read /nonexistent/model.yaml: No such file or directory\n")
        let folder = try CLI.run(["model", "--check", CLI.fixtures.path])
        #expect(folder.status == 1)
        #expect(folder.stderr == "error: cannot read \(CLI.fixtures.path): Is a directory\n")
        let neither = try CLI.run(["model"])
        #expect(neither.status != 0)
        #expect(neither.stderr.contains("give a built-in model to print, or --check FILE"))
    }

    /// `codable-store swift` writes what the tests compile (`GeneratedOrdersModel.swift`), and refuses what compiled
    /// entities cannot say with the field at fault.
    @Test func swiftWritesTheClassesOfAModelFile() throws {
        let orders = CLI.fixtures.appendingPathComponent("models/orders.yaml").path
        let result = try CLI.run(["swift", orders, "--namespace", "GeneratedOrders", "--internal"])
        #expect(result.status == 0)
        let compiled = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CodableStoreTests/ModelFile/GeneratedOrdersModel.swift")
        #expect(result.stdout == (try String(contentsOf: compiled, encoding: .utf8)))
        let dates = "version: 1\nentities:\n  Event:\n    attributes:\n      at: date\n      seen: {type: date, format: seconds}\n"
        let refused = try CLI.run(["swift", "-"], stdin: Data(dates.utf8))
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: <stdin>: entities.Event.attributes.seen: dates in two formats"))
    }

    /// `codable-store infer` writes a model file `model --check` accepts, names what it read, stops after
    /// `--sample` records, and says where the records are not.
    @Test func inferWritesAModelFileOfADump() throws {
        let github = CLI.fixtures.appendingPathComponent("apis/github-issues.json").path
        let result = try CLI.run(["infer", github, "--name", "Issue"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("# Inferred by codable-store infer from github-issues.json. Check it: the comments say what was seen.\nversion: 1\n"))
        let checked = try CLI.run(["model", "--check", "-"], stdin: Data(result.stdout.utf8))
        #expect(checked.stdout == "<stdin>: 4 entities, 41 fields: ok\n")
        let sampled = try CLI.run(["infer", github, "--sample", "1"])
        #expect(sampled.stdout.contains("  Record:\n    # 1 record\n"))
        let events = try String(contentsOf: CLI.fixtures.appendingPathComponent("apis/events.jsonl"), encoding: .utf8)
        let piped = try CLI.run(["infer", "-", "--jsonl", "--name", "Event"], stdin: Data(events.utf8))
        #expect(piped.stdout.contains("    identity: [stream, seq]\n"))
        let stripe = CLI.fixtures.appendingPathComponent("apis/stripe-charges.json").path
        let nowhere = try CLI.run(["infer", stripe])
        #expect(nowhere.status == 1)
        #expect(nowhere.stderr.contains("expected a top-level array of records, found an object"))
        // Counts are grouped by thousands; repeated ids with other values are updates of one record.
        var generator = IssueDumpGenerator()
        var dump: [UInt8] = []
        generator.writeArray(count: 1_500) { dump += $0 }
        let generated = try CLI.run(["infer", "-", "--name", "Issue"], stdin: Data(dump))
        #expect(generated.stdout.contains("    # 1,500 records\n    # identity id: 1,341 distinct, 159 repeated (159 with other values: updates)\n"))
        let reserved = try CLI.run(["infer", github, "--name", "_x"])
        #expect(reserved.status != 0)
        #expect(reserved.stderr.contains("--name: the entity name _x is reserved"))
        let values = try CLI.run(["infer", "-"], stdin: Data("[1, 2]".utf8))
        #expect(values.status == 1)
        #expect(values.stderr == "error: <stdin>: no record is an object with keys: a model describes objects\n")
        let empty = try CLI.run(["infer", "-"], stdin: Data("[]".utf8))
        #expect(empty.status == 1)
        #expect(empty.stderr == "error: <stdin>: no records (is the array elsewhere? --at PATH)\n")
    }
}
