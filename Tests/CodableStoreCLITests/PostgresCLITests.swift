import CodableStore
import Foundation
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

        let intoPostgres = try CLI.run(["import", "issues", fixture, "--store", database, "--json"])
        #expect(intoPostgres.status == 0, "\(intoPostgres.stderr)")
        let intoSQLite = try CLI.run(["import", "issues", fixture, "--store", file, "--json"])
        #expect(intoSQLite.status == 0, "\(intoSQLite.stderr)")
        let postgresReport = try JSONDecoder().decode(ImportReport.self, from: Data(intoPostgres.stdout.utf8))
        let sqliteReport = try JSONDecoder().decode(ImportReport.self, from: Data(intoSQLite.stdout.utf8))
        #expect(postgresReport.recordsImported == 1_000)
        #expect(postgresReport.entities == sqliteReport.entities)

        let fromPostgres = try CLI.run(["export", "issues", "--store", database])
        let fromSQLite = try CLI.run(["export", "issues", "--store", file])
        #expect(fromPostgres.status == 0, "\(fromPostgres.stderr)")
        #expect(!fromPostgres.stdout.isEmpty)
        #expect(fromPostgres.stdout == fromSQLite.stdout)
        let stablePostgres = try CLI.run(["export", "issues", "--store", database, "--stable"])
        let stableSQLite = try CLI.run(["export", "issues", "--store", file, "--stable"])
        #expect(stablePostgres.stdout == stableSQLite.stdout)
    }

    @Test func anUnreachableServerIsAOneLineError() throws {
        let result = try CLI.run(["import", "issues", CLI.fixtures.appendingPathComponent("issues-1k.json").path,
                                  "--store", "postgres://nobody@127.0.0.1:1/none"])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("error: store: cannot connect to postgres://nobody@127.0.0.1:1/none"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }
}
