import CodableStore
import Foundation
import IssuesModel
import Testing

/// Runs the built `codable-store` binary and checks its output, exit code and the store it writes.
enum CLI {
    /// The products directory: the test bundle's folder, where SwiftPM also puts the executable.
    static let binary: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("codable-store")
    }()

    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        let outData = readToEnd(output.fileHandleForReading)
        let errData = readToEnd(error.fileHandleForReading)
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Everything a pipe gives until its end, read with read(2). Foundation's `readDataToEndOfFile()` once returned an
    /// export's output without 23 KB from its middle (a CI run, under load); a plain read loop keeps every byte.
    static func readToEnd(_ handle: FileHandle) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    /// The test process's own temporary directory, removed when the process exits: every test's files go under it.
    static let root: URL = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("codablestore-cli-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: CLI.root) }
        return directory
    }()

    static func temporaryDirectory() throws -> URL {
        let directory = root.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}

@Suite(.serialized) struct CLITests {
    @Test func importOfTheBundledFixturePrintsAReportAndFillsTheStore() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("issues.sqlite").path
        let result = try CLI.run(["import", "issues", CLI.fixtures.appendingPathComponent("issues-1k.json").path, "--store", store, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(result.stdout.utf8))
        #expect(report.recordsRead == 1_000)
        #expect(report.recordsImported == 1_000)
        #expect(result.stderr.contains("progress:"))  // not a terminal: plain progress lines
        let issues = report.entities["Issue"]?.inserted ?? 0
        #expect(issues > 800 && issues < 1_000)  // 10% of the records repeat an earlier id
        // Re-import: nothing inserted.
        let again = try CLI.run(["import", "issues", CLI.fixtures.appendingPathComponent("issues-1k.json").path, "--store", store, "--json"])
        let second = try JSONDecoder().decode(ImportReport.self, from: Data(again.stdout.utf8))
        #expect(second.entities["Issue"]?.inserted == 0)
    }

    @Test func syncDeletesTheIssuesADumpNoLongerHas() throws {
        let directory = try CLI.temporaryDirectory()
        let full = directory.appendingPathComponent("full.jsonl").path
        #expect(try CLI.run(["generate", "issues", "--count", "200", "--seed", "5", "--jsonl", "-o", full]).status == 0)
        let store = directory.appendingPathComponent("sync.sqlite").path
        #expect(try CLI.run(["import", "issues", full, "--jsonl", "--store", store]).status == 0)
        // The same dump without the records of every issue whose id is a multiple of 5.
        let lines = try String(contentsOfFile: full, encoding: .utf8).split(separator: "\n")
        struct Record: Decodable { let id: Int }
        let kept = try lines.filter { try JSONDecoder().decode(Record.self, from: Data($0.utf8)).id % 5 != 0 }
        let partial = directory.appendingPathComponent("partial.jsonl").path
        try (kept.joined(separator: "\n") + "\n").write(toFile: partial, atomically: true, encoding: .utf8)
        let before = try Connection(path: store).rows(sql: "SELECT id FROM Issue WHERE id % 5 <> 0 ORDER BY id")
        let missing = try Connection(path: store).scalar(sql: "SELECT count(*) FROM Issue WHERE id % 5 = 0")

        let result = try CLI.run(["import", "issues", partial, "--jsonl", "--sync", "--json", "--store", store])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(result.stdout.utf8))
        guard case .integer(let deleted)? = missing else { Issue.record("no count"); return }
        #expect(deleted > 0)
        #expect(report.sync?.deleted == Int(deleted))
        #expect(report.entities["Issue"]?.deleted == Int(deleted))
        #expect(try Connection(path: store).rows(sql: "SELECT id FROM Issue ORDER BY id") == before)
        #expect(try Connection(path: store).scalar(sql: "SELECT count(*) FROM Issue_labels WHERE source NOT IN (SELECT _pk FROM Issue)") == .integer(0))
    }

    /// How many users and labels the import keeps across batches, or the page cache it writes with, changes nothing
    /// in the store.
    @Test func memoryOptionsDoNotChangeWhatIsImported() throws {
        let directory = try CLI.temporaryDirectory()
        let dump = directory.appendingPathComponent("dump.json").path
        #expect(try CLI.run(["generate", "issues", "--count", "400", "--seed", "5", "-o", dump]).status == 0)
        var exports: [String] = []
        for retained in [
            [], ["--retained-objects", "0"], ["--retained-objects", "3"], ["--cache-size", "64"],
            ["--retained-objects", "0", "--row-cache", "0"], ["--exclusive"],
        ] {
            let store = directory.appendingPathComponent("r\(exports.count).sqlite").path
            let imported = try CLI.run(["import", "issues", dump, "--store", store, "--batch-size", "9"] + retained)
            #expect(imported.status == 0, "\(imported.stderr)")
            let exported = try CLI.run(["export", "issues", "--stable", "--store", store])
            #expect(exported.status == 0)
            exports.append(exported.stdout)
        }
        #expect(exports[0].count > 1_000)
        #expect(exports[1] == exports[0])
        #expect(exports[2] == exports[0])
        #expect(exports[3] == exports[0])
        #expect(exports[4] == exports[0])
        #expect(exports[5] == exports[0])
    }

    /// `--exclusive` takes the store for the import alone and says so; the store is in WAL mode again afterwards.
    @Test func anExclusiveImportSaysSoAndLeavesTheStoreInWALMode() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("x.sqlite").path
        let imported = try CLI.run(["import", "issues", CLI.fixture, "--store", store, "--exclusive"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("the store was held exclusively (SQLite: a rollback journal; PostgreSQL: its tables, indexes and keys made after the load)"))
        #expect(try Connection(path: store).scalar(sql: "PRAGMA journal_mode") == .text("wal"))
        // Refused while another connection has the store open: imported all the same, in WAL mode.
        let other = try Connection(path: store)
        #expect(try other.scalar(sql: "SELECT count(*) FROM Issue") != .integer(0))
        let again = try CLI.run(["import", "issues", CLI.fixture, "--store", store, "--exclusive", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(again.stdout.utf8))
        #expect(report.exclusiveAccess == false)
        #expect(report.recordsImported == 1_000)
        withExtendedLifetime(other) {}
    }

    /// A re-import skips the records stored as they are by default; `--no-skip-unchanged` decodes them all again.
    /// Either way the store holds the same.
    @Test func aReImportSkipsUnchangedRecordsUnlessToldNotTo() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        func importFixture(_ extra: [String]) throws -> ImportReport {
            let imported = try CLI.run(["import", "issues", CLI.fixture, "--store", store, "--json"] + extra)
            #expect(imported.status == 0, "\(imported.stderr)")
            return try JSONDecoder().decode(ImportReport.self, from: Data(imported.stdout.utf8))
        }
        #expect(try importFixture([]).unchangedRecordsSkipped == 0)
        let exported = try CLI.run(["export", "issues", "--stable", "--store", store]).stdout
        let skipping = try importFixture([])
        #expect(try #require(skipping.unchangedRecordsSkipped) > 500, "\(skipping)")
        #expect(try importFixture(["--no-skip-unchanged"]).unchangedRecordsSkipped == nil)
        #expect(try importFixture(["--skip-unchanged"]).unchangedRecordsSkipped == skipping.unchangedRecordsSkipped)
        #expect(try CLI.run(["export", "issues", "--stable", "--store", store]).stdout == exported)
    }

    @Test func generateImportFromStandardInputAndExportRoundTrip() throws {
        let directory = try CLI.temporaryDirectory()
        let dump = directory.appendingPathComponent("dump.jsonl").path
        #expect(try CLI.run(["generate", "issues", "--count", "120", "--seed", "3", "--jsonl", "-o", dump]).status == 0)
        let store = directory.appendingPathComponent("a.sqlite").path
        let imported = try CLI.run(["import", "issues", "-", "--jsonl", "--store", store, "--batch-size", "7"], stdin: try Data(contentsOf: URL(fileURLWithPath: dump)))
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("read 120 records"))
        let exported = directory.appendingPathComponent("export.json").path
        #expect(try CLI.run(["export", "issues", "--store", store, "-o", exported]).status == 0)
        // Importing the export into a new store and exporting again gives the same bytes.
        let second = directory.appendingPathComponent("b.sqlite").path
        #expect(try CLI.run(["import", "issues", exported, "--store", second]).status == 0)
        let again = try CLI.run(["export", "issues", "--store", second])
        let first = try Data(contentsOf: URL(fileURLWithPath: exported))
        #expect(again.stdout.utf8.count == first.count + 1)
        // The same records in the same order; labels are a set, which the plain export lists in the store's order of
        // rows, and the second store numbered its labels in another order.
        func labelsSorted(_ data: Data) throws -> NSArray {
            let records = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
            return records.map { record in
                var record = record
                if let labels = record["labels"] as? [[String: Any]] {
                    record["labels"] = labels.sorted { ($0["id"] as? Int ?? 0) < ($1["id"] as? Int ?? 0) }
                }
                return record as NSDictionary
            } as NSArray
        }
        #expect(try labelsSorted(Data(again.stdout.utf8)).isEqual(try labelsSorted(first)))
        // The stable export of both stores is the same too, and is Store.stableExport's.
        let stable = try CLI.run(["export", "issues", "--stable", "--store", store])
        #expect(stable.status == 0)
        #expect(try CLI.run(["export", "issues", "--stable", "--store", second]).stdout == stable.stdout)
        let expected = try Store(path: store, entities: ReferenceModel.entities).stableExport()
        #expect(stable.stdout == String(decoding: expected, as: UTF8.self) + "\n")
        let entities = try JSONSerialization.jsonObject(with: Data(stable.stdout.utf8)) as? [String: [Any]]
        #expect(entities?.keys.sorted() == ["Issue", "Label", "User"])
        let records = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: exported))) as? [Any]
        #expect(entities?["Issue"]?.count == records?.count)
        #expect((records?.count ?? 0) > 100)  // 120 records, some repeating an earlier id
    }

    @Test func aBadDumpIsAOneLineErrorWithItsLocationAndExitCode1() throws {
        let directory = try CLI.temporaryDirectory()
        let dump = directory.appendingPathComponent("bad.json")
        try Data("[{\"id\": 1, \"number\": 1, \"title\": \"a\", \"state\": \"open\"},\n {\"id\": 2,, }]".utf8).write(to: dump)
        let result = try CLI.run(["import", "issues", dump.path, "--store", directory.appendingPathComponent("s.sqlite").path])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("error: record 1 (line 2, column") == true, "\(result.stderr)")
    }

    @Test func skipPolicyWithJSONLinesListsALineThatIsNotJSONAndImportsTheRest() throws {
        let directory = try CLI.temporaryDirectory()
        let dump = directory.appendingPathComponent("dump.jsonl").path
        #expect(try CLI.run(["generate", "issues", "--count", "50", "--seed", "5", "--duplicates", "0", "--jsonl", "-o", dump]).status == 0)
        var lines = try String(contentsOfFile: dump, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[10] = String(lines[10].dropLast(20))  // cut off mid-record, as a killed writer leaves a line
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: dump))
        let store = directory.appendingPathComponent("s.sqlite").path
        let result = try CLI.run(["import", "issues", dump, "--jsonl", "--on-error", "skip", "--json", "--store", store])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(result.stdout.utf8))
        #expect(report.recordsRead == 50 && report.recordsImported == 49 && report.recordsSkipped == 1)
        let skipped = try #require(report.skippedRecords.first)
        #expect(skipped.index == 10 && skipped.line == 11, "\(skipped)")
        #expect(skipped.reason.hasPrefix("invalid JSON: "), "\(skipped)")
        #expect(report.entities["Issue"]?.inserted == 49)

        // With a limit of none, the same file fails with the line over the limit.
        let limited = try CLI.run(["import", "issues", dump, "--jsonl", "--on-error", "skip", "--max-skipped", "0", "--store", store])
        #expect(limited.status == 1)
        let lastLine = limited.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(lastLine.hasPrefix("error: record 10 (line 11, "), "\(limited.stderr)")
        #expect(lastLine.contains("more than 0 records skipped"), "\(limited.stderr)")
        #expect(try CLI.run(["import", "issues", dump, "--max-skipped", "1", "--store", store]).status == 64)
    }

    @Test func invalidOptionsAreUsageErrors() throws {
        let result = try CLI.run(["import", "issues", "x.json", "--store", "s.sqlite", "--jsonl", "--at", "data"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--at and --jsonl cannot be used together"))
    }

    /// An import killed mid-way (SIGKILL) leaves a database that passes `PRAGMA integrity_check`, and a rerun
    /// completes it.
    @Test func anImportKilledMidWayLeavesAConsistentStoreThatARerunCompletes() throws {
        let directory = try CLI.temporaryDirectory()
        let dump = directory.appendingPathComponent("big.json").path
        #expect(try CLI.run(["generate", "issues", "--count", "60000", "-o", dump]).status == 0)
        let store = directory.appendingPathComponent("killed.sqlite").path
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["import", "issues", dump, "--store", store, "--commit-every-batch", "--batch-size", "500"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Kill it once some batches are committed.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            usleep(50_000)
            if let size = try? FileManager.default.attributesOfItem(atPath: store + "-wal")[.size] as? Int, size > 2_000_000 { break }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let check = try Connection(path: store)
        #expect(try check.scalar(sql: "PRAGMA integrity_check") == .text("ok"))
        let partial = try check.scalar(sql: "SELECT count(*) FROM Issue")
        guard case .integer(let count)? = partial else { Issue.record("no count"); return }
        #expect(count > 0)
        let rerun = try CLI.run(["import", "issues", dump, "--store", store, "--commit-every-batch", "--json"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let complete = try CLI.run(["import", "issues", dump, "--store", store + "-fresh.sqlite", "--json"])
        let a = try Connection(path: store).rows(sql: "SELECT id, title, comments FROM Issue ORDER BY id")
        let b = try Connection(path: store + "-fresh.sqlite").rows(sql: "SELECT id, title, comments FROM Issue ORDER BY id")
        #expect(complete.status == 0)
        #expect(a == b)
    }
}
