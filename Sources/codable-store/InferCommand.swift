import ArgumentParser
import CodableStore
import CodableStoreModelFile
import Foundation

struct InferCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "infer",
        abstract: "Write a model file for a dump: its entities, identities, relationships and attribute types.",
        discussion: """
            Reads the dump once, in bounded memory. Nested objects with an identity (id, uuid, node_id, key, guid) \
            become entities, the same shape met at several places one entity; other objects become key-path \
            attributes. The file's comments say what was seen: check it, correct it, then import with it or turn \
            it into Swift (`codable-store swift`).
            """
    )

    @Argument(help: "The dump: a JSON array of records, or JSON Lines with --jsonl ('-' reads standard input).")
    var dump: String

    @Option(help: "The key path of the records' array inside a wrapper object (data.items).")
    var at: String?

    @Flag(help: "The dump is JSON Lines: one record per line.")
    var jsonl = false

    @Option(help: "Look at the first N records only.")
    var sample: Int?

    @Option(help: "The records' entity name.")
    var name = "Record"

    @Option(help: "How deep objects without identity become key-path attributes (deeper ones are json).")
    var depth = 2

    @Option(name: .shortAndLong, help: "The output file (default: standard output).")
    var output: String?

    func validate() throws {
        if jsonl && at != nil { throw ValidationError("--at is for a JSON array in a wrapper object, not for JSON Lines") }
        if let sample, sample < 1 { throw ValidationError("--sample must be at least 1") }
        if depth < 0 { throw ValidationError("--depth must not be negative") }
        do {
            try ModelFile(entities: [ModelFile.Entity(name: name)]).validate()
        } catch {
            throw ValidationError("--name: \(error.message)")
        }
    }

    struct Enough: Error {}

    func run() throws {
        var inference = ModelInference(
            options: ModelInference.Options(rootName: name, flatteningDepth: depth))
        let stream = JSONRecordStream(mode: jsonl ? .jsonLines : .array(atPath: at ?? ""))
        let limit = sample ?? .max
        do {
            let handle: (borrowing JSONRecord) throws -> Void = { record in
                inference.add(record)
                if inference.recordCount >= limit { throw Enough() }
            }
            if dump == "-" {
                try stream.read(fileDescriptor: 0, handle)
            } else {
                try stream.read(contentsOfFile: dump, handle)
            }
        } catch is Enough {
        } catch {
            printError("error: \(dump == "-" ? "<stdin>" : dump): \(error)")
            throw ExitCode.failure
        }
        if inference.recordCount == 0 {
            printError("error: \(dump == "-" ? "<stdin>" : dump): no records (is the array elsewhere? --at PATH)")
            throw ExitCode.failure
        }
        let model = inference.model()
        if let root = model.entities.first, root.attributes.isEmpty, root.relationships.isEmpty {
            printError("error: \(dump == "-" ? "<stdin>" : dump): no record is an object with keys: a model describes objects")
            throw ExitCode.failure
        }
        let text = model.rendered(header: [
            "Inferred by codable-store infer from \(dump == "-" ? "standard input" : (dump as NSString).lastPathComponent)"
                + (sample.map { ", first \($0) records" } ?? "") + ". Check it: the comments say what was seen.",
        ])
        try writeResult(text, to: output)
    }
}
