import ArgumentParser
import CodableStore
import Foundation

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a store back to JSON: the records in identity order, as the model's keys say.",
        discussion: """
            With --stable, write every entity of the store instead, as golden files hold it (CodableStoreTesting): \
            an object of entities, objects sorted by identity, keys sorted, relationships as identities, \
            ISO 8601 dates; the same contents give the same bytes.
            """
    )

    @Argument(help: "The built-in model to export (issues); none with --model.")
    var builtIn: String?

    @Option(help: ArgumentHelp("A model file to export the store with, instead of a built-in model.", valueName: "file"))
    var model: String?

    @Option(help: "With --model: the entity whose records to write (default: the file's first entity).")
    var entity: String?

    @Option(help: "The SQLite store, or a PostgreSQL database as postgres://user@host:port/database[?schema=NAME].")
    var store: String

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    @Flag(help: "Write the stable export of every entity (what golden files hold) instead of the records.")
    var stable = false

    func run() throws {
        let chosen = try CommandModel.resolve(builtIn: builtIn, file: model, entity: entity)
        do {
            guard StoreLocation.isPostgres(store) || FileManager.default.fileExists(atPath: store) else {
                throw ValidationError("no store at '\(store)'")
            }
            let database = try chosen.open(store)
            let data = try stable ? database.stableExport() : chosen.export(from: database)
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
