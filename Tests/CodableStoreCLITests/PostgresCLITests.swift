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
