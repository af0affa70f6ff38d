import ArgumentParser
import CodableStore
import CodableStoreModelFile
import Foundation
import IssuesModel

struct ModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Print a built-in model as a model file (YAML), or check a model file.",
        discussion: """
            `codable-store model issues` prints the reference model (issues, users, labels) in the model-file format: \
            the starting point for a model of your own. `codable-store model --check FILE` reads a model file and \
            reports the first problem with its file, line and field.
            """
    )

    @Argument(help: "The built-in model to print: issues.")
    var model: ModelName?

    @Option(help: "A model file to check instead ('-' reads standard input).")
    var check: String?

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    func validate() throws {
        if (model == nil) == (check == nil) { throw ValidationError("give a built-in model to print, or --check FILE") }
    }

    func run() throws {
        if let check {
            let (text, name) = try readInput(check)
            let file: ModelFile
            do {
                file = try ModelFile.parse(text, file: name)
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
            let fields = file.entities.reduce(0) { $0 + $1.attributes.count + $1.relationships.count }
            let migrations = file.migrations.isEmpty ? "" : ", \(file.migrations.count) migration\(file.migrations.count == 1 ? "" : "s")"
            try writeResult("\(name): \(file.entities.count) entit\(file.entities.count == 1 ? "y" : "ies"), \(fields) fields\(migrations): ok\n", to: nil)
            return
        }
        let file: ModelFile
        do {
            file = try ModelFile(compiled: ReferenceModel.entities, dateFormat: .iso8601)
        } catch {
            printError("error: \(error)")
            throw ExitCode.failure
        }
        let text = file.rendered(header: [
            "The reference model of codable-store: GitHub-like issues, their user and their labels.",
            "Dumps: codable-store generate issues --count N",
        ])
        try writeResult(text, to: output)
    }
}
