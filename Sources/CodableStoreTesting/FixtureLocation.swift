import Foundation

/// Where fixture files are found: a folder next to the test file, any folder, or a bundle's resources.
///
/// ```swift
/// .folder()                                   // Fixtures/ next to this test file (#filePath), else its own folder
/// .folder("../../Fixtures")                   // relative to this test file's folder
/// .folder(at: URL(fileURLWithPath: "/srv/recorded"))
/// .bundle(Bundle.module, subdirectory: "Fixtures")   // resources: [.copy("Fixtures")] in the test target
/// ```
public struct FixtureLocation: Sendable, CustomStringConvertible {
    private enum Place: @unchecked Sendable {
        // @unchecked: a Bundle is only asked for URLs, which it answers from any thread.
        case folders([URL])
        case bundle(Bundle, subdirectory: String?)
    }
    private let place: Place

    /// A folder relative to the folder of `filePath` (the calling test file by default). Without a path:
    /// `Fixtures/` next to the test file, then the test file's own folder.
    public static func folder(_ path: String? = nil, relativeTo filePath: StaticString = #filePath) -> FixtureLocation {
        let base = URL(fileURLWithPath: "\(filePath)").deletingLastPathComponent()
        guard let path else {
            return FixtureLocation(place: .folders([base.appendingPathComponent("Fixtures"), base]))
        }
        return FixtureLocation(place: .folders([base.appendingPathComponent(path).standardizedFileURL]))
    }

    /// A folder given by its URL.
    public static func folder(at url: URL) -> FixtureLocation {
        FixtureLocation(place: .folders([url]))
    }

    /// The resources of a bundle, such as `Bundle.module` of a test target that declares
    /// `resources: [.copy("Fixtures")]`.
    public static func bundle(_ bundle: Bundle, subdirectory: String? = "Fixtures") -> FixtureLocation {
        FixtureLocation(place: .bundle(bundle, subdirectory: subdirectory))
    }

    /// The file or folder `name` (a relative path, such as `issues.json` or `pages/issues-2.json`).
    /// - Throws: ``FixtureError`` (`notFound`) naming where it was looked for.
    public func url(for name: String) throws -> URL {
        switch place {
        case .folders(let folders):
            for folder in folders {
                let url = folder.appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: url.path) { return url }
            }
        case .bundle(let bundle, let subdirectory):
            let url = (bundle.resourceURL ?? bundle.bundleURL)
                .appendingPathComponent(subdirectory ?? "").appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: url.path) { return url }
        }
        throw FixtureError(.notFound, file: name, message: "no fixture '\(name)' in \(self)")
    }

    public var description: String {
        switch place {
        case .folders(let folders): folders.map(\.path).joined(separator: " or ")
        case .bundle(let bundle, let subdirectory):
            "the resources of \(bundle.bundleURL.lastPathComponent)" + (subdirectory.map { " (\($0)/)" } ?? "")
        }
    }
}
