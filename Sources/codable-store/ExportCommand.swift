import ArgumentParser
import CodableStore
import Foundation
import IssuesModel

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a store back to JSON: an array of records in id order, with nested user and labels.",
        discussion: """
            With --stable, write every entity of the store instead, as golden files hold it (CodableStoreTesting): \
            an object of entities, objects sorted by identity, keys sorted, relationships as identities, \
            ISO 8601 dates; the same contents give the same bytes.
            """
    )

    @Argument(help: "The model to export: issues.")
    var model: ModelName

    @Option(help: "The SQLite store, or a PostgreSQL database as postgres://user@host:port/database[?schema=NAME].")
    var store: String

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    @Flag(help: "Write the stable export of every entity (what golden files hold) instead of the records.")
    var stable = false

    func run() throws {
        do {
            guard StoreLocation.isPostgres(store) || FileManager.default.fileExists(atPath: store) else {
                throw ValidationError("no store at '\(store)'")
            }
            let database = try StoreLocation.open(store, entities: ReferenceModel.entities)
            let data =
                try stable
                ? database.stableExport()
                : database.read { context in
                    try ReferenceModel.encoder().encode(try context.fetch(Issue.self, orderBy: [.ascending(\.id)]))
                }
            let destination = try output.map { try Output.open(path: $0) } ?? .standardOutput
            do {
                try data.withUnsafeBytes { try destination.write($0) }
                if output == nil { try destination.write("\n") }
                try destination.close()
            } catch {
                try? destination.close()
                throw error
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            printError(error)
            throw ExitCode.failure
        }
    }
}
