import ArgumentParser
import CodableStore
import Foundation

/// `codable-store`: generate, import and export API dumps. No logic of its own: each subcommand parses its
/// options, calls one CodableStore API and prints the result.
@main
struct CodableStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codable-store",
        abstract: "Import JSON API dumps into a SQLite store with identity upsert, and export them back.",
        subcommands: [ImportCommand.self, ExportCommand.self, GenerateCommand.self, ModelCommand.self, InferCommand.self, SwiftCommand.self]
    )

    static func main() {
        StandardStreams.prepare()
        main(nil)
    }
}

extension ModelName: ExpressibleByArgument {}
