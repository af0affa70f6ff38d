// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so that the main package gains no dependency for them.
// Run in release mode: `swift run -c release StoreBenchmarks`.
let package = Package(
    name: "CodableStoreBenchmarks",
    dependencies: [
        .package(path: "../")
    ],
    targets: [
        // The raw baseline talks to libsqlite3 directly, not through CodableStore's wrapper.
        .systemLibrary(name: "CSQLiteBenchmark", providers: [.apt(["libsqlite3-dev"])]),
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "CodableStore", package: "main"), .product(name: "IssuesModel", package: "main")]
        ),
        .executableTarget(
            name: "ImportBenchmarks",
            dependencies: [
                .product(name: "CodableStore", package: "main"), .product(name: "IssuesModel", package: "main"),
                "BenchmarkSupport", "CSQLiteBenchmark",
            ]
        ),
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "CodableStore", package: "main"), .product(name: "IssuesModel", package: "main"),
                "BenchmarkSupport",
            ]
        ),
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: [
                .product(name: "CodableStore", package: "main"),
                "CSQLiteBenchmark",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
