import ArgumentParser
import CodableStore
import Foundation
import IssuesModel

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a store back to JSON: an array of records in id order, with nested user and labels."
    )

    @Argument(help: "The model to export: issues.")
    var model: ModelName

    @Option(help: "The SQLite store.")
    var store: String

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    func run() throws {
        do {
            guard FileManager.default.fileExists(atPath: store) else { throw ValidationError("no store at '\(store)'") }
            let database = try Store(path: store, entities: ReferenceModel.entities)
            let data = try database.read { context in
                try ReferenceModel.encoder().encode(try context.fetch(Issue.self, orderBy: [.ascending(\.id)]))
            }
            if let output {
                try data.write(to: URL(fileURLWithPath: output))
            } else {
                FileHandle.standardOutput.write(data)
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            printError("error: \(error)")
            throw ExitCode.failure
        }
    }
}
