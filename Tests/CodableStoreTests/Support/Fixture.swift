import Foundation

/// The shared top-level `Fixtures/` folder, found from this file's path (no copy at build time).
enum Fixture {
    static let root = URL(fileURLWithPath: #filePath)  // Tests/CodableStoreTests/Support/Fixture.swift
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func url(_ name: String) -> URL { root.appendingPathComponent(name) }

    static func data(_ name: String) throws -> Data { try Data(contentsOf: url(name)) }
}
