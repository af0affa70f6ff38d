// swift-tools-version: 6.1
import Foundation
import PackageDescription

// Benchmarks live in their own package so that the main package gains no dependency for them.
// Run in release mode: `swift run -c release StoreBenchmarks`.
//
// The main package is found from this file's own path, so a clone in a folder of any name (or a git worktree)
// works; a path dependency's package identity is the name of its folder.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let main = root.lastPathComponent.lowercased()
let package = Package(
    name: "CodableStoreBenchmarks",
    dependencies: [
        .package(path: root.path)
    ],
    targets: [
        // The raw baseline talks to libsqlite3 directly, not through CodableStore's wrapper.
        .systemLibrary(name: "CSQLiteBenchmark", providers: [.apt(["libsqlite3-dev"])]),
        // The limit baselines: hand-written C importers on yajl's callback parser, into SQLite with raw sqlite3
        // (limit_importer.c) and into PostgreSQL with libpq's COPY (postgres_limit_importer.c).
        .target(
            name: "CLimitImporter",
            linkerSettings: [.linkedLibrary("yajl"), .linkedLibrary("sqlite3"), .linkedLibrary("pq")]
        ),
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "CodableStore", package: main), .product(name: "IssuesModel", package: main)]
        ),
        .executableTarget(
            name: "ImportBenchmarks",
            dependencies: [
                .product(name: "CodableStore", package: main), .product(name: "IssuesModel", package: main),
                .product(name: "CodableStorePostgres", package: main),
                "BenchmarkSupport", "CSQLiteBenchmark", "CLimitImporter",
            ]
        ),
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "CodableStore", package: main), .product(name: "IssuesModel", package: main),
                "BenchmarkSupport",
            ]
        ),
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: [
                .product(name: "CodableStore", package: main),
                "CSQLiteBenchmark",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
