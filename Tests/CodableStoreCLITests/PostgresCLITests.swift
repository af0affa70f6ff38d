import CodableStore
import CodableStorePostgres
import Foundation
import IssuesModel
import Testing

/// `--store postgres://…`: the same import and export as into a SQLite file (needs `CODABLESTORE_POSTGRES_URL`, set by
/// `Scripts/with-postgres`).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["CODABLESTORE_POSTGRES_URL"] != nil))
struct PostgresCLITests {
    let server = ProcessInfo.processInfo.environment["CODABLESTORE_POSTGRES_URL"] ?? ""

    @Test func importAndExportMatchTheSQLiteStore() throws {
        let fixture = CLI.fixtures.appendingPathComponent("issues-1k.json").path
        let database = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let file = try CLI.temporaryDirectory().appendingPathComponent("issues.sqlite").path

        // The same batches on both (their default sizes differ): which repeated identities are updates and which
        // are merged in memory depends on where batches end.
        let intoPostgres = try CLI.run(["import", "issues", fixture, "--store", database, "--json", "--batch-size", "500"])
        #expect(intoPostgres.status == 0, "\(intoPostgres.stderr)")
        let intoSQLite = try CLI.run(["import", "issues", fixture, "--store", file, "--json", "--batch-size", "500"])
        #expect(intoSQLite.status == 0, "\(intoSQLite.stderr)")
        let postgresReport = try JSONDecoder().decode(ImportReport.self, from: Data(intoPostgres.stdout.utf8))
        let sqliteReport = try JSONDecoder().decode(ImportReport.self, from: Data(intoSQLite.stdout.utf8))
        #expect(postgresReport.recordsImported == 1_000)
        #expect(postgresReport.entities == sqliteReport.entities)

        let fromPostgres = try CLI.run(["export", "issues", "--store", database])
        let fromSQLite = try CLI.run(["export", "issues", "--store", file])
        #expect(fromPostgres.status == 0, "\(fromPostgres.stderr)")
        #expect(!fromPostgres.stdout.isEmpty)
        // The same records with the same values; the members of a Set relationship come back in no particular order
        // (SQLite reads a WITHOUT ROWID join table in key order, PostgreSQL in insertion order), so labels are
        // compared sorted.
        #expect(try Self.labelsSorted(fromPostgres.stdout) == Self.labelsSorted(fromSQLite.stdout))
        let stablePostgres = try CLI.run(["export", "issues", "--store", database, "--stable"])
        let stableSQLite = try CLI.run(["export", "issues", "--store", file, "--stable"])
        #expect(stablePostgres.stdout == stableSQLite.stdout)
    }

    /// A model file's import into PostgreSQL stores what it stores in SQLite (and what the built-in model does).
    /// `--exclusive` into a new PostgreSQL store: granted (the tables are empty and nobody uses them), the same rows as
    /// an import without it, and the foreign keys there.
    @Test func exclusiveImportsIntoANewStoreAsAnImportWithoutIt() throws {
        let fixture = CLI.fixtures.appendingPathComponent("issues-1k.json").path
        let alone = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let beside = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let exclusive = try CLI.run(["import", "issues", fixture, "--store", alone, "--json", "--exclusive"])
        #expect(exclusive.status == 0, "\(exclusive.stderr)")
        let report = try JSONDecoder().decode(ImportReport.self, from: Data(exclusive.stdout.utf8))
        #expect(report.exclusiveAccess == true)
        #expect(try CLI.run(["import", "issues", fixture, "--store", beside]).status == 0)
        let exports = try [alone, beside].map { store in
            let export = try CLI.run(["export", "issues", "--store", store, "--stable"])
            #expect(export.status == 0, "\(export.stderr)")
            return export.stdout
        }
        #expect(exports[0] == exports[1])
        #expect(exports[0].count > 1_000)
        // Added back: a second import with --exclusive finds rows, is not granted, and checks row by row.
        let again = try CLI.run(["import", "issues", fixture, "--store", alone, "--json", "--exclusive"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try JSONDecoder().decode(ImportReport.self, from: Data(again.stdout.utf8)).exclusiveAccess == false)
    }

    @Test func aModelFileImportsIntoPostgreSQLAsIntoSQLite() throws {
        let dump = CLI.fixtures.appendingPathComponent("apis/github-issues.json").path
        let directory = try CLI.temporaryDirectory()
        let model = directory.appendingPathComponent("github.yaml").path
        #expect(try CLI.run(["infer", dump, "--name", "Issue", "-o", model]).status == 0)
        let database = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let file = directory.appendingPathComponent("github.sqlite").path
        let intoPostgres = try CLI.run(["import", "--model", model, dump, "--store", database, "--json"])
        #expect(intoPostgres.status == 0, "\(intoPostgres.stderr)")
        let intoSQLite = try CLI.run(["import", "--model", model, dump, "--store", file, "--json"])
        let postgresReport = try JSONDecoder().decode(ImportReport.self, from: Data(intoPostgres.stdout.utf8))
        let sqliteReport = try JSONDecoder().decode(ImportReport.self, from: Data(intoSQLite.stdout.utf8))
        #expect(postgresReport.entities == sqliteReport.entities)
        #expect(postgresReport.entities["User"]?.inserted == 3)
        let stablePostgres = try CLI.run(["export", "--model", model, "--store", database, "--stable"])
        let stableSQLite = try CLI.run(["export", "--model", model, "--store", file, "--stable"])
        #expect(stablePostgres.status == 0, "\(stablePostgres.stderr)")
        #expect(stablePostgres.stdout.contains("\"octocat\""))
        #expect(stablePostgres.stdout == stableSQLite.stdout)
    }

    /// An export's records with each record's labels sorted by id, as JSON with sorted keys.
    static func labelsSorted(_ export: String) throws -> String {
        var records = try #require(try JSONSerialization.jsonObject(with: Data(export.utf8)) as? [[String: Any]])
        for index in records.indices {
            guard let labels = records[index]["labels"] as? [[String: Any]] else { continue }
            records[index]["labels"] = labels.sorted { ($0["id"] as? Int ?? 0) < ($1["id"] as? Int ?? 0) }
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: records, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func twoProcessesImportingOverlappingDumpsAtOnceKeepOneRowPerIdentity() throws {
        let database = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let directory = try CLI.temporaryDirectory()
        func dump(_ ids: Range<Int>, title: String) throws -> String {
            let records = ids.map { id in
                #"{"id":\#(id),"number":\#(id),"title":"\#(title)","state":"open","created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-02T00:00:00Z","comments":0,"score":1.5,"user":{"id":\#(id % 50),"login":"u\#(id % 50)"},"labels":[{"id":\#(id % 5),"name":"l\#(id % 5)"}]}"#
            }
            let path = directory.appendingPathComponent("\(title).json").path
            try Data(("[" + records.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let (a, b) = (try dump(0..<3_000, title: "a"), try dump(1_500..<4_500, title: "b"))
        // Two processes at once (the second waits for the first's write lock).
        let results = try [a, b].map { path in
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["import", "issues", path, "--store", database, "--json", "--wait", "60"]
            let (output, errors) = (Pipe(), Pipe())
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            return (process, output, errors)
        }.map { process, output, errors in
            let data = output.fileHandleForReading.readDataToEndOfFile()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(message)")
            return (process.terminationStatus, try JSONDecoder().decode(ImportReport.self, from: data))
        }
        #expect(results.map(\.0) == [0, 0])
        let issues = results.map { try! #require($0.1.entities["Issue"]) }
        #expect(issues[0].inserted + issues[1].inserted == 4_500)
        #expect(issues[0].updated + issues[1].updated == 1_500)
        let winner = issues[0].updated == 1_500 ? "a" : "b"
        let store = try Store.open(postgres: database, entities: ReferenceModel.entities)
        let (count, titles, users) = try store.read { context in
            (try context.count(Issue.self),
             Set(try context.fetch(Issue.self).filter { (1_500..<3_000).contains($0.id) }.map(\.title)),
             try context.count(User.self))
        }
        #expect(count == 4_500)
        #expect(titles == [winner])
        #expect(users == 50)
    }

    /// Runs `codable-store import issues` on each dump at once, one process each, into `database`; returns each one's
    /// report, once every process ended (expecting each to succeed).
    private func importAtOnce(_ dumps: [String], into database: String, _ extra: [String] = []) throws -> [ImportReport] {
        let started = try dumps.map { path in
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["import", "issues", path, "--store", database, "--json", "--wait", "120"] + extra
            let (output, errors) = (Pipe(), Pipe())
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            return (process, output, errors)
        }
        return try started.map { process, output, errors in
            let data = CLI.readToEnd(output.fileHandleForReading)
            let message = String(decoding: CLI.readToEnd(errors.fileHandleForReading), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(message)")
            // Progress lines only: a conflict that ran again is no error of the user's.
            #expect(!message.contains("error"), "\(message)")
            return try JSONDecoder().decode(ImportReport.self, from: data)
        }
    }

    /// A dump of issues `ids` (in that order), titled `title`, each with a user of 50 and two labels of 18.
    private func issuesDump(_ ids: [Int], title: String, in directory: URL) throws -> String {
        let records = ids.map { id in
            #"{"id":\#(id),"number":\#(id),"title":"\#(title)","state":"open","created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-02T00:00:00Z","comments":0,"score":1.5,"user":{"id":\#(id % 50),"login":"u\#(id % 50)"},"labels":[{"id":\#(id % 7),"name":"l\#(id % 7)"},{"id":\#(7 + id % 11),"name":"l\#(7 + id % 11)"}]}"#
        }
        let path = directory.appendingPathComponent("\(title).json").path
        try Data(("[" + records.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// 4 and 8 processes import overlapping dumps (each overlapping the next by two thirds, in shuffled order) into
    /// one store at once, in one transaction each or a commit per batch: one row per identity, every link there,
    /// each issue as one of the dumps that had it wrote it, and an observer in this process hears the last commit.
    @Test(arguments: [4, 8], [false, true])
    func manyProcessesImportingOverlappingDumpsAtOnce(writers: Int, commitEveryBatch: Bool) async throws {
        let database = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let directory = try CLI.temporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        let windows = (0..<writers).map { writer in Array(400 * writer..<400 * writer + 1_200).shuffled(using: &generator) }
        let dumps = try windows.indices.map { try issuesDump(windows[$0], title: "w\($0)", in: directory) }
        let everyID = Set(windows.joined())

        // The observer: a store of this process, opened before the imports (it creates the schema).
        let store = try await Store.open(postgres: database, entities: ReferenceModel.entities)
        let latest = Locked(-1)
        let observer = Task {
            for await change in store.observe(Issue.self) { latest.withLock { $0 = change.rows.count } }
        }
        defer { observer.cancel() }

        let reports = try importAtOnce(dumps, into: database, ["--batch-size", "200"] + (commitEveryBatch ? ["--commit-every-batch"] : []))
        let issues = reports.map { $0.entities["Issue"] ?? .init() }
        #expect(issues.map(\.inserted).reduce(0, +) == everyID.count)
        #expect(issues.allSatisfy { $0.inserted + $0.updated == 1_200 }, "\(issues)")

        let (count, titles, users, labels) = try await store.read { context in
            let issues = try context.fetch(Issue.self)
            return (
                issues.count, Dictionary(uniqueKeysWithValues: issues.map { ($0.id, $0.title) }), try context.count(User.self),
                Dictionary(uniqueKeysWithValues: issues.map { ($0.id, Set($0.labels.map(\.id))) }))
        }
        #expect(count == everyID.count)
        #expect(users == 50)
        for id in everyID {
            let writtenBy = windows.indices.filter { windows[$0].contains(id) }.map { "w\($0)" }
            #expect(writtenBy.contains(titles[id] ?? ""), "issue \(id): \(titles[id] ?? "missing")")
            #expect(labels[id] == [id % 7, 7 + id % 11], "issue \(id)")
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while latest.withLock({ $0 }) != everyID.count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let heard = latest.withLock { $0 }
        #expect(heard == everyID.count, "the observer heard the last commit")
    }

    /// Processes importing one dump at once end as one import of it; processes importing disjoint dumps at once, as
    /// the same imports one after the other.
    @Test func importsAtOnceEqualOneImportOfTheSameDumpAndSerialImportsOfDisjointOnes() throws {
        let directory = try CLI.temporaryDirectory()
        func schema() -> String { server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" } }
        func export(_ database: String) throws -> String {
            let result = try CLI.run(["export", "issues", "--store", database, "--stable"])
            #expect(result.status == 0, "\(result.stderr)")
            return result.stdout
        }
        let same = try issuesDump(Array(0..<1_500).shuffled(), title: "same", in: directory)
        let (atOnce, once) = (schema(), schema())
        let reports = try importAtOnce(Array(repeating: same, count: 4), into: atOnce, ["--commit-every-batch", "--batch-size", "250"])
        #expect(reports.map { $0.entities["Issue"]?.inserted ?? 0 }.reduce(0, +) == 1_500)
        _ = try importAtOnce([same], into: once)
        #expect(try export(atOnce) == export(once))

        let disjoint = try (0..<4).map { part in try issuesDump(Array(part * 500..<(part + 1) * 500), title: "part\(part)", in: directory) }
        let (parallel, serial) = (schema(), schema())
        _ = try importAtOnce(disjoint, into: parallel)
        for dump in disjoint { _ = try importAtOnce([dump], into: serial) }
        let exported = try export(parallel)
        #expect(exported == (try export(serial)))
        #expect(exported.contains("\"part3\""))
    }

    @Test func anUnreachableServerIsAOneLineError() throws {
        let result = try CLI.run(["import", "issues", CLI.fixtures.appendingPathComponent("issues-1k.json").path,
                                  "--store", "postgres://nobody@127.0.0.1:1/none"])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("error: store: cannot connect to postgres://nobody@127.0.0.1:1/none"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    /// libpq is loaded when a PostgreSQL store is opened, not when the program starts: a SQLite import never loads
    /// it (nor OpenSSL, Kerberos or LDAP behind it), and a libpq that cannot be loaded is a one-line error that says
    /// why, for the PostgreSQL store only.
    @Test func libpqIsLoadedOnlyForAPostgreSQLStore() throws {
        let fixture = CLI.fixtures.appendingPathComponent("issues-1k.json").path
        let file = try CLI.temporaryDirectory().appendingPathComponent("issues.sqlite").path
        // The dynamic loader lists every library it loads (glibc's LD_DEBUG) on standard error.
        let sqlite = try CLI.run(["import", "issues", fixture, "--store", file], environment: ["LD_DEBUG": "files"])
        #expect(sqlite.status == 0, "\(sqlite.stderr)")
        #expect(sqlite.stderr.contains("libsqlite3.so"), "the loader's list is there")
        #expect(!sqlite.stderr.contains("libpq.so"))
        #expect(!sqlite.stderr.contains("libssl.so"))
        let database = server + "?schema=cli_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        let postgres = try CLI.run(["import", "issues", fixture, "--store", database], environment: ["LD_DEBUG": "files"])
        #expect(postgres.status == 0)
        #expect(postgres.stderr.contains("libpq.so.5"))

        let missing = try CLI.run(
            ["import", "issues", fixture, "--store", database], environment: ["CODABLE_STORE_LIBPQ": "/nonexistent/libpq.so.5"])
        #expect(missing.status == 1)
        #expect(
            missing.stderr == "error: store: cannot connect to \(database): cannot load PostgreSQL's client library (libpq; on Debian or Ubuntu: apt-get install libpq5): /nonexistent/libpq.so.5: cannot open shared object file: No such file or directory\n")
        // The SQLite store does not need it.
        let without = try CLI.run(["export", "issues", "--store", file], environment: ["CODABLE_STORE_LIBPQ": "/nonexistent/libpq.so.5"])
        #expect(without.status == 0, "\(without.stderr)")
    }
}
