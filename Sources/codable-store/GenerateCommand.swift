import ArgumentParser
import CodableStore
import IssuesModel
import Foundation

struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write a deterministic dump of the reference workload (about 520 bytes per record)."
    )

    @Argument(help: "The model to generate: issues.")
    var model: ModelName

    @Option(help: "The number of records.")
    var count: Int

    @Option(help: "The seed: the same seed gives the same bytes.")
    var seed: UInt64 = 1

    @Option(help: "The fraction of records that repeat an earlier record's id, with other values.")
    var duplicates: Double = 0.1

    @Flag(help: "Write JSON Lines instead of a JSON array.")
    var jsonl = false

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    func validate() throws {
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        guard (0...1).contains(duplicates) else { throw ValidationError("--duplicates must be between 0 and 1") }
    }

    func run() throws {
        let destination: Output
        do {
            destination = try output.map { try Output.open(path: $0) } ?? .standardOutput
        } catch {
            printError(error)
            throw ExitCode.failure
        }
        var generator = IssueDumpGenerator(seed: seed, duplicateFraction: duplicates)
        do {
            if jsonl {
                try generator.writeLines(count: count) { try destination.write($0) }
            } else {
                try generator.writeArray(count: count) { try destination.write($0) }
            }
            try destination.close()
        } catch {
            try? destination.close()
            printError(error)
            throw ExitCode.failure
        }
    }
}
