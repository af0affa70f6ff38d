import ArgumentParser
import CodableStore
import CodableStoreModelFile
import Foundation
import IssuesModel

/// The model a command runs: the built-in reference model (compiled), or the entities of a model file, described at
/// run time and run by the same store, decoder and importer.
struct CommandModel {
    let entities: [any EntityObject.Type]
    let runtimeEntities: [EntityDescription]
    /// The entity whose records the dump holds.
    let root: String
    let decoder: StoreDecoder
    let encoder: StoreEncoder
    /// The model file and where its fields are, when the model is one.
    var file: (model: ModelFile, places: ModelFile.Places)?

    static func builtIn(_ name: ModelName) -> CommandModel {
        switch name {
        case .issues:
            CommandModel(
                entities: ReferenceModel.entities, runtimeEntities: [], root: "Issue", decoder: ReferenceModel.decoder(),
                encoder: ReferenceModel.encoder())
        }
    }

    /// The model of a model file (`-`: standard input) whose records are `entity`'s (default: the file's first
    /// entity); on a bad file, says where and exits with 1.
    static func file(_ path: String, entity: String?) throws -> CommandModel {
        let (text, name) = try readInput(path)
        let file: ModelFile
        let places: ModelFile.Places
        let descriptions: [EntityDescription]
        do {
            (file, places) = try ModelFile.parsePlaced(text, file: name)
            descriptions = try file.entityDescriptions()
        } catch {
            printError("error: \(error)")
            throw ExitCode.failure
        }
        guard let root = entity ?? file.entities.first?.name else {
            printError("error: \(name) has no entity to import")
            throw ExitCode.failure
        }
        guard file.entities.contains(where: { $0.name == root }) else {
            printError("error: \(name) has no entity named \(root); its entities are \(file.entities.map(\.name).joined(separator: ", "))")
            throw ExitCode.failure
        }
        // Each date attribute reads and writes its own format; the rest as JSONDecoder and JSONEncoder do.
        let encoder = StoreEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return CommandModel(
            entities: [], runtimeEntities: descriptions, root: root, decoder: StoreDecoder(), encoder: encoder, file: (file, places))
    }

    /// What the model file says of the field a failed record's value was read into, and where:
    /// `the model says Issue.number: integer (github.yaml:14:7)`. nil for a built-in model, or an error not about a value.
    func explanation(of error: any Error) -> String? {
        guard let file, let error = error as? ImportError else { return nil }
        let entity: String
        let field: String
        switch error.underlyingError {
        case let decoding as DecodingError:
            let path: [any CodingKey]
            switch decoding {
            case .keyNotFound(let key, let context): path = context.codingPath + [key]
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): path = context.codingPath
            @unknown default: return nil
            }
            let keys = path.filter { $0.intValue == nil }.map(\.stringValue)
            guard let found = file.model.field(at: keys, in: root) else { return nil }
            (entity, field) = found
        case let store as StoreError where store.code == .missingIdentity:
            // The identity the object lacks: its first attribute.
            guard let name = store.entity, let first = file.model.entities.first(where: { $0.name == name })?.identity.first
            else { return nil }
            (entity, field) = (name, first)
        default:
            return nil
        }
        guard let declaration = file.model.declaration(of: field, in: entity) else { return nil }
        var text = "the model says \(entity).\(field): \(declaration)"
        if let identity = file.model.entities.first(where: { $0.name == entity })?.identity, identity.contains(field) {
            text += ", its identity"
        }
        if let place = file.places.place(entity: entity, field: field) {
            text += " (\(file.places.file ?? "model"):\(place.line):\(place.column))"
        }
        return text
    }

    /// The built-in model named by `name`, or the model file at `file`: exactly one of them.
    static func resolve(builtIn name: String?, file: String?, entity: String?) throws -> CommandModel {
        switch (name, file) {
        case (let name?, nil):
            guard let model = ModelName(rawValue: name) else {
                throw ValidationError("unknown model '\(name)': the built-in models are \(ModelName.allCases.map(\.rawValue).joined(separator: ", ")); give any other with --model FILE")
            }
            if entity != nil { throw ValidationError("--entity applies to a model file (--model FILE)") }
            return builtIn(model)
        case (nil, let file?):
            return try self.file(file, entity: entity)
        case (nil, nil):
            throw ValidationError("give a built-in model's name (issues) or --model FILE")
        case (_?, _?):
            throw ValidationError("give a built-in model's name or --model FILE, not both")
        }
    }

    func open(_ location: String, options: Store.Options = Store.Options()) throws -> Store {
        var options = options
        // A model file's migrations run when a store made with an earlier version of the file opens.
        if let file { options.migrations += file.model.storeMigrations() }
        do {
            return try StoreLocation.open(location, entities: entities, runtimeEntities: runtimeEntities, options: options)
        } catch let error as StoreError where error.code == .schemaMismatch && file != nil && !error.differences.isEmpty {
            // The library's remedy names Swift (Store.Options.migrations); a model file says it in its own words.
            throw StoreError(
                .schemaMismatch,
                "the store was made with another version of the model: \(error.differences.joined(separator: "; ")). "
                    + "Say what changed in the model file's 'migrations:' (renameAttribute, renameEntity, changeIdentity, sql), "
                    + "or import into a new store",
                differences: error.differences)
        }
    }

    func importJSON(into store: Store, from source: ImportSource, options: ImportOptions, sync: Bool) throws -> ImportReport {
        if runtimeEntities.isEmpty {
            return try store.importJSON(Issue.self, from: source, options: options, syncing: sync ? .all : nil)
        }
        return try store.importJSON(entity: root, from: source, options: options, syncing: sync ? .all : nil)
    }

    /// The root entity's records as a JSON array, in identity order (row order for an entity without identity).
    func export(from store: Store) throws -> Data {
        if runtimeEntities.isEmpty {
            return try store.read { context in try encoder.encode(try context.fetch(Issue.self, orderBy: [.ascending(\.id)])) }
        }
        let description = try store.entity(named: root)
        return try store.read { context in
            try encoder.encode(try context.fetch(entity: root, orderBy: description.identityNames.map { .ascending($0) }))
        }
    }
}
