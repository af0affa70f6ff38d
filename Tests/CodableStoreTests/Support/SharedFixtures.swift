import CodableStoreTesting
import Foundation

/// The shared top-level `Fixtures/` folder (shared with the benchmarks), found from this file's path: tests load
/// its files into stores with CodableStoreTesting (`store.load([...], location: SharedFixtures.location)`), or read
/// them as data.
enum SharedFixtures {
    static let location = FixtureLocation.folder("../../../Fixtures")  // from Tests/CodableStoreTests/Support/

    static func url(_ name: String) throws -> URL { try location.url(for: name) }

    static func data(_ name: String) throws -> Data { try Data(contentsOf: url(name)) }
}
