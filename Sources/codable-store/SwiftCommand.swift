import ArgumentParser
import CodableStoreModelFile
import Foundation

struct SwiftCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swift",
        abstract: "Write the @Entity classes a model file stands for.",
        discussion: """
            The classes decode the same JSON into the same tables as the model file: identity, CodingKeys with key \
            paths, relationships and inverses, delete rules, reference policies and indexes, and a decoder whose \
            date strategy is the file's date format.
            """
    )

    @Argument(help: "The model file ('-' reads standard input).")
    var file: String

    @Option(help: "An enum to declare the classes in.")
    var namespace: String?

    @Flag(help: "Declare the classes internal instead of public.")
    var `internal` = false

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    func run() throws {
        let (text, name) = try readInput(file)
        let source: String
        do {
            source = try ModelFile.parse(text, file: name).swiftSource(namespace: namespace, isPublic: !`internal`)
        } catch {
            var error = error
            if error.file == nil { error.file = name }
            printError("error: \(error)")
            throw ExitCode.failure
        }
        try writeResult(source, to: output)
    }
}
