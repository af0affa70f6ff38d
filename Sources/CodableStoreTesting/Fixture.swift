import CodableStore
import Foundation

/// A fixture file (or folder) to load into a store: recorded API responses, decoded with a `StoreDecoder` as
/// the app decodes them, so the store holds what the app would have stored.
///
/// ```swift
/// let fixtures: [Fixture] = [
///     .records(Repository.self, "repository.json"),       // one object
///     .records(Issue.self, "issues.json"),                 // an array of objects
///     .records(Event.self, "events.jsonl"),                // JSON Lines (.jsonl or .ndjson)
///     .folder(Issue.self, "issue-pages"),                  // every .json/.jsonl file, in name order
///     .folder("seed"),                                     // 01-User.json, 02-Issue.json: entity by file name
///     .value(SearchPage.self, "search.json"),              // any Decodable, e.g. { "items": Many<Issue> }
/// ]
/// ```
/// A name is a path relative to the fixture location (``FixtureLocation``): the one given here, else the one
/// of the ``FixtureStore`` that loads it.
public struct Fixture: Sendable {
    /// The file or folder name, relative to its location.
    public let name: String
    let location: FixtureLocation?
    let isFolder: Bool
    let load: @Sendable (_ file: URL, _ store: Store, _ decoder: StoreDecoder) throws -> Void

    /// Records of one entity: a JSON array of objects, one JSON object, or JSON Lines (a `.jsonl` or `.ndjson`
    /// file, loaded with the importer).
    public static func records<T: EntityObject>(_ type: T.Type, _ name: String, in location: FixtureLocation? = nil) -> Fixture {
        Fixture(name: name, location: location, isFolder: false) { file, store, decoder in
            try FixtureLoading.records(T.self, from: file, into: store, decoder: decoder)
        }
    }

    /// Records of the entity named `entity`, described at run time (a model file's, `RuntimeEntityBuilder`'s), as
    /// ``records(_:_:in:)`` loads a class's.
    public static func records(entity: String, _ name: String, in location: FixtureLocation? = nil) -> Fixture {
        Fixture(name: name, location: location, isFolder: false) { file, store, decoder in
            try FixtureLoading.records(try store.entity(named: entity), from: file, into: store, decoder: decoder)
        }
    }

    /// Every `.json`, `.jsonl` and `.ndjson` file of a folder, in name order, each loaded as ``records(_:_:in:)``:
    /// the pages of a recorded API response (`page-01.json`, `page-02.json`, …).
    public static func folder<T: EntityObject>(_ type: T.Type, _ name: String, in location: FixtureLocation? = nil) -> Fixture {
        Fixture(name: name, location: location, isFolder: true) { file, store, decoder in
            try FixtureLoading.records(T.self, from: file, into: store, decoder: decoder)
        }
    }

    /// Every `.json`, `.jsonl` and `.ndjson` file of a folder, in name order, each loaded as ``records(_:_:in:)`` of
    /// the entity its name starts with, after an optional number that orders the files: a whole seed in one folder.
    ///
    /// ```
    /// seed/01-User.json          → User
    /// seed/02-Issue.page-1.json  → Issue
    /// seed/02-Issue.page-2.json  → Issue
    /// seed/03-label.jsonl        → Label (names match without regard to case)
    /// ```
    /// A file whose name starts with no entity of the store fails with the entity names it could have had.
    public static func folder(_ name: String, in location: FixtureLocation? = nil) -> Fixture {
        Fixture(name: name, location: location, isFolder: true) { file, store, decoder in
            let entity = try FixtureLoading.entity(named: file, in: store)
            try FixtureLoading.records(entity, from: file, into: store, decoder: decoder)
        }
    }

    /// A file decoded as any `Decodable` value inside one write: a response that wraps its records (entities in
    /// it are in `Many` collections or are properties of entity type).
    public static func value<T: Decodable>(_ type: T.Type, _ name: String, in location: FixtureLocation? = nil) -> Fixture {
        Fixture(name: name, location: location, isFolder: false) { file, store, decoder in
            let data = try FixtureLoading.contents(of: file)
            do {
                try store.write { context in _ = try decoder.decode(T.self, from: data, into: context) }
            } catch {
                throw FixtureLoading.located(error, in: data, file: file.path)
            }
        }
    }

    /// Loads the fixture into `store`, finding it in its own location or else in `defaultLocation`.
    func load(into store: Store, decoder: StoreDecoder, defaultLocation: FixtureLocation) throws {
        let url = try (location ?? defaultLocation).url(for: name)
        guard isFolder else { return try load(url, store, decoder) }
        let files: [URL]
        do {
            files = try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
                .filter { ["json", "jsonl", "ndjson"].contains($0.pathExtension.lowercased()) }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        } catch {
            throw FixtureError(.notFound, file: url.path, message: "cannot list the fixture folder: \(error.localizedDescription)")
        }
        guard !files.isEmpty else {
            throw FixtureError(.notFound, file: url.path, message: "no .json, .jsonl or .ndjson file in the fixture folder")
        }
        for file in files { try load(file, store, decoder) }
    }
}

/// How fixtures are read and decoded, and how their errors are located.
enum FixtureLoading {
    static func contents(of file: URL) throws -> Data {
        do {
            return try Data(contentsOf: file)
        } catch {
            throw FixtureError(.notFound, file: file.path, message: "cannot read the fixture: \(error.localizedDescription)")
        }
    }

    /// The entity a file of a seed folder holds, by its name (see ``Fixture/folder(_:in:)``).
    static func entity(named file: URL, in store: Store) throws -> EntityDescription {
        let name = file.deletingPathExtension().lastPathComponent
        let unnumbered = name.drop { $0.isNumber }.drop { $0 == "-" || $0 == "_" || $0 == " " || $0 == "." }
        let descriptions = store.entityDescriptions.sorted { $0.name.count > $1.name.count }
        for description in descriptions {
            guard unnumbered.lowercased().hasPrefix(description.name.lowercased()) else { continue }
            let rest = unnumbered.dropFirst(description.name.count)
            if rest.first.map({ !$0.isLetter && !$0.isNumber }) ?? true { return description }
        }
        throw FixtureError(
            .invalidFixture, file: file.path,
            message: "the file name starts with no entity of the store (\(store.entityDescriptions.map(\.name).sorted().joined(separator: ", ")))")
    }

    /// Records of an entity, compiled or described at run time.
    static func records(_ entity: EntityDescription, from file: URL, into store: Store, decoder: StoreDecoder) throws {
        if !entity.isRuntime { return try records(entity.type, from: file, into: store, decoder: decoder) }
        try records(
            from: file, into: store,
            importLines: { try store.importJSON(entity: entity.name, from: .file(file.path), options: $0) },
            decodeArray: { data, context in _ = try decoder.decodeObjects(entity: entity.name, from: data, into: context) },
            decodeObject: { data, context in _ = try decoder.decodeObject(entity: entity.name, from: data, into: context) },
            decoder: decoder)
    }

    static func records<T: EntityObject>(_ type: T.Type, from file: URL, into store: Store, decoder: StoreDecoder) throws {
        try records(
            from: file, into: store,
            importLines: { try store.importJSON(T.self, from: .file(file.path), options: $0) },
            decodeArray: { data, context in _ = try decoder.decode(Many<T>.self, from: data, into: context) },
            decodeObject: { data, context in _ = try decoder.decode(One<T>.self, from: data, into: context) },
            decoder: decoder)
    }

    private static func records(
        from file: URL, into store: Store, importLines: (ImportOptions) throws -> ImportReport,
        decodeArray: (Data, Context) throws -> Void, decodeObject: (Data, Context) throws -> Void, decoder: StoreDecoder
    ) throws {
        if ["jsonl", "ndjson"].contains(file.pathExtension.lowercased()) {
            do {
                _ = try importLines(ImportOptions(layout: .jsonLines, decoder: decoder))
            } catch let error as ImportError {
                throw FixtureError(
                    .invalidFixture, file: file.path, line: error.line, column: error.column, jsonPath: error.codingPath,
                    message: error.reason)
            }
            return
        }
        let data = try contents(of: file)
        let isArray = data.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) } == UInt8(ascii: "[")
        do {
            try store.write { context in
                if isArray {
                    try decodeArray(data, context)
                } else {
                    try decodeObject(data, context)
                }
            }
        } catch {
            throw located(error, in: data, file: file.path)
        }
    }

    /// A decoding or syntax error of a fixture, with the file, the line and column of the value at fault, and its
    /// JSON path.
    static func located(_ error: any Error, in data: Data, file: String) -> FixtureError {
        if let error = error as? FixtureError { return error }
        if let syntax = error as? JSONSyntaxError {
            return FixtureError(.invalidFixture, file: file, line: syntax.line, column: syntax.column, message: "invalid JSON: \(syntax.reason)")
        }
        let (reason, jsonPath) = ImportError.describe(error)
        // A missing key is not in the document: the position is that of the object that lacks it.
        let path = ImportError.codingKeys(of: error)
        let position = JSONPosition(of: path, in: data)
        return FixtureError(.invalidFixture, file: file, line: position?.line, column: position?.column, jsonPath: jsonPath, message: reason)
    }
}

/// The line and column (1-based, the column in bytes) of the value at a coding path of a JSON document: the deepest
/// value of the path that the document has.
struct JSONPosition: Equatable {
    let line: Int
    let column: Int

    init?(of path: [any CodingKey], in data: Data) {
        guard let tape = try? JSONTape.parse(data) else { return nil }
        var node = tape.root
        var keys = path[...]
        while let key = keys.first {
            keys = keys.dropFirst()
            switch tape.kind(of: node) {
            case .array:
                guard let index = key.intValue, let element = tape.element(index, of: node) else { keys = []; continue }
                node = element
            case .object:
                if let value = tape.value(forKey: key.stringValue, in: node) {
                    node = value
                } else {
                    // A key path coding key ("origin.country") is nested objects in the document.
                    var inner = node
                    for component in key.stringValue.split(separator: ".") {
                        guard tape.kind(of: inner) == .object, let value = tape.value(forKey: String(component), in: inner) else { break }
                        inner = value
                    }
                    if inner == node { keys = [] } else { node = inner }
                }
            default:
                keys = []
            }
        }
        let offset = tape.byteOffset(of: node)
        var line = 1
        var lineStart = 0
        data.withUnsafeBytes { bytes in
            for index in 0..<min(offset, bytes.count) where bytes[index] == 0x0A {
                line += 1
                lineStart = index + 1
            }
        }
        self.line = line
        self.column = offset - lineStart + 1
    }
}
