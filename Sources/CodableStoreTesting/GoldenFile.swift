import CodableStore
import Foundation

/// The environment variable that makes golden-file expectations write the store's export instead of comparing:
/// `CODABLESTORE_RECORD_GOLDEN=1 swift test` after a change you meant.
public let recordGoldenEnvironmentVariable = "CODABLESTORE_RECORD_GOLDEN"

extension Store {
    /// Compares the store's `Store.stableExport(of:)` with the golden file `name` in `folder` (by default `Golden/`
    /// next to the calling test file).
    ///
    /// When the golden file is missing it is written, and this throws (``FixtureError/Kind-swift.enum/goldenRecorded``)
    /// so that a run without it cannot pass unnoticed; check the file in and run again. With the environment variable
    /// `CODABLESTORE_RECORD_GOLDEN=1` it is written and this passes. Otherwise a mismatch throws
    /// (``FixtureError/Kind-swift.enum/goldenMismatch``) with the first difference only: the entity, the identity of
    /// the object, and the field (a JSON path inside the object), with both values, or the object that one side lacks.
    public func expectMatchesGolden(
        _ name: String, entities: [any EntityObject.Type]? = nil, in folder: URL? = nil, filePath: StaticString = #filePath
    ) throws {
        let folder = folder ?? URL(fileURLWithPath: "\(filePath)").deletingLastPathComponent().appendingPathComponent("Golden")
        let file = folder.appendingPathComponent(name)
        let export = try stableExport(of: entities)
        let recording = ["1", "true", "yes"].contains(ProcessInfo.processInfo.environment[recordGoldenEnvironmentVariable]?.lowercased() ?? "")
        let exists = FileManager.default.fileExists(atPath: file.path)
        if recording || !exists {
            do {
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try export.write(to: file)
            } catch {
                throw FixtureError(.goldenRecorded, file: file.path, message: "cannot write the golden file: \(error.localizedDescription)")
            }
            if recording { return }
            throw FixtureError(
                .goldenRecorded, file: file.path,
                message: "the golden file was missing and has been written from the store; check it and run again")
        }
        let golden: Data
        do {
            golden = try Data(contentsOf: file)
        } catch {
            throw FixtureError(.notFound, file: file.path, message: "cannot read the golden file: \(error.localizedDescription)")
        }
        if golden == export { return }
        let difference = GoldenComparison(descriptions: entityDescriptions).firstDifference(golden: golden, store: export)
        throw FixtureError(
            .goldenMismatch, file: file.path,
            message: (difference ?? "the export differs from the golden file in its formatting")
                + " (\(recordGoldenEnvironmentVariable)=1 writes the store's export as the golden file)")
    }
}

/// Finds the first difference between a golden export and the store's, in terms of entities, identities and fields.
struct GoldenComparison {
    /// Per entity name, the JSON key paths of its identity attributes.
    let identityPaths: [String: [[String]]]

    init(descriptions: [EntityDescription]) {
        var paths: [String: [[String]]] = [:]
        for description in descriptions {
            paths[description.name] = description.identity.map { field in
                description.codingKeyPaths[field] ?? [description.fields[field].name]
            }
        }
        identityPaths = paths
    }

    func firstDifference(golden goldenData: Data, store storeData: Data) -> String? {
        guard let golden = try? JSONSerialization.jsonObject(with: goldenData) as? [String: Any] else {
            return "the golden file is not a JSON object of entities"
        }
        guard let store = try? JSONSerialization.jsonObject(with: storeData) as? [String: Any] else { return nil }
        for entity in Set(golden.keys).union(store.keys).sorted() {
            guard let goldenObjects = golden[entity] as? [Any] else { return "\(entity) is in the store's export, not in the golden file" }
            guard let storeObjects = store[entity] as? [Any] else { return "\(entity) is in the golden file, not in the store's export" }
            if let difference = firstDifference(entity, goldenObjects, storeObjects) { return difference }
        }
        return nil
    }

    private func firstDifference(_ entity: String, _ golden: [Any], _ store: [Any]) -> String? {
        let paths = identityPaths[entity] ?? []
        func identity(_ object: Any, _ position: Int) -> String {
            guard !paths.isEmpty else { return "#\(position + 1)" }
            return paths.map { path in "\(path.joined(separator: ".")): \(Self.render(Self.value(at: path, in: object)))" }
                .joined(separator: ", ")
        }
        for position in 0..<max(golden.count, store.count) {
            guard position < store.count else {
                return "\(entity) \(identity(golden[position], position)) is in the golden file, not in the store"
            }
            guard position < golden.count else {
                return "\(entity) \(identity(store[position], position)) is in the store, not in the golden file"
            }
            let goldenIdentity = identity(golden[position], position)
            let storeIdentity = identity(store[position], position)
            if !paths.isEmpty, goldenIdentity != storeIdentity {
                // Both are sorted by identity: the one that comes first is missing from the other side.
                let storeHasGolden = store[position...].contains { identity($0, position) == goldenIdentity }
                return storeHasGolden
                    ? "\(entity) \(storeIdentity) is in the store, not in the golden file"
                    : "\(entity) \(goldenIdentity) is in the golden file, not in the store"
            }
            if let field = Self.firstDifference(golden[position], store[position], path: "") {
                return "\(entity) \(goldenIdentity), \(field)"
            }
        }
        return nil
    }

    /// The first differing field of two values, as "field: golden …, store …".
    private static func firstDifference(_ golden: Any, _ store: Any, path: String) -> String? {
        if let golden = golden as? [String: Any], let store = store as? [String: Any] {
            for key in Set(golden.keys).union(store.keys).sorted() {
                let inner = path.isEmpty ? key : "\(path).\(key)"
                guard let goldenValue = golden[key] else { return "\(inner): not in the golden file, store \(render(store[key]))" }
                guard let storeValue = store[key] else { return "\(inner): golden \(render(goldenValue)), not in the store" }
                if let difference = firstDifference(goldenValue, storeValue, path: inner) { return difference }
            }
            return nil
        }
        if let golden = golden as? [Any], let store = store as? [Any], golden.count == store.count {
            for (index, (goldenValue, storeValue)) in zip(golden, store).enumerated() {
                if let difference = firstDifference(goldenValue, storeValue, path: "\(path)[\(index)]") { return difference }
            }
            return nil
        }
        let (goldenText, storeText) = (render(golden), render(store))
        return goldenText == storeText ? nil : "\(path.isEmpty ? "value" : path): golden \(goldenText), store \(storeText)"
    }

    private static func value(at path: [String], in object: Any) -> Any? {
        var current: Any? = object
        for key in path { current = (current as? [String: Any])?[key] }
        return current
    }

    /// A value as compact JSON, shortened past 120 characters.
    private static func render(_ value: Any?) -> String {
        guard let value else { return "nothing" }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else {
            return "\(value)"
        }
        let text = String(decoding: data, as: UTF8.self)
        return text.count > 120 ? text.prefix(117) + "..." : text
    }
}
