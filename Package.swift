// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

#if os(Linux)
// libpq's headers are at <postgresql/libpq-fe.h>, and the library is loaded on demand (CLibPQLoader).
let libpqPkgConfig: String? = nil
#else
// Homebrew's libpq is keg-only: its headers are found through pkg-config (which also links it).
let libpqPkgConfig: String? = "libpq"
#endif

let package = Package(
    name: "CodableStore",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "CodableStore", targets: ["CodableStore"]),
        .executable(name: "codable-store", targets: ["codable-store"]),
        // For the tests of apps that use CodableStore: fixtures into a store, golden exports, query budgets.
        .library(name: "CodableStoreTesting", targets: ["CodableStoreTesting"]),
        // The reference model (issues, users, labels) the CLI ships, for the benchmarks and for trying things out.
        .library(name: "IssuesModel", targets: ["IssuesModel"]),
        // The PostgreSQL backend: the same models, decoder and importer on a PostgreSQL server.
        .library(name: "CodableStorePostgres", targets: ["CodableStorePostgres"]),
        // Model files: a model as YAML a person reads and edits, parsed with errors that say where.
        .library(name: "CodableStoreModelFile", targets: ["CodableStoreModelFile"]),
    ],
    dependencies: [
        // Pinned: 602.0.0 prints spurious plugin errors with the 6.3 compiler.
        .package(url: "https://github.com/swiftlang/swift-syntax", exact: "603.0.1"),
        // The CLI's argument parsing.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Logging of imports and saves, through the application's chosen backend.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `swift package generate-documentation`: the DocC catalogs (a command plugin, nothing is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // YAML for model files: libyaml's parser (bundled), with the line and column of every node for errors.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]
        ),
        .systemLibrary(
            name: "CYajl",
            providers: [.apt(["libyajl-dev"]), .brew(["yajl"])]
        ),
        // PostgreSQL's client library, for the PostgreSQL backend: its declarations only. The library itself is
        // loaded when a PostgreSQL store is first opened (CLibPQLoader), so that a program that opens SQLite stores
        // neither needs it installed nor pays for it and its dependencies. On Linux its headers are found under
        // /usr/include/postgresql without pkg-config, whose flags would link the library at start-up.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: libpqPkgConfig,
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // The libpq functions the backend calls, forwarded to the libpq it loads with dlopen on first use.
        .target(
            name: "CLibPQLoader",
            dependencies: ["CLibPQ"],
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .macro(
            name: "CodableStoreMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // A column's value and a row's columns as every backend gives them (DatabaseValue, DatabaseColumns).
        .target(name: "CodableStoreValues"),
        // Storage: the SQLite connection, cached statements, transactions and errors. Knows nothing of entities.
        .target(
            name: "CodableStoreSQLite",
            dependencies: ["CSQLite", "CodableStoreValues"]
        ),
        // JSON: the strict reader on yajl, the tape of one record or document, record streams and syntax errors.
        .target(
            name: "CodableStoreJSON",
            dependencies: ["CYajl"]
        ),
        // The core: Model, Context, Coding, the storage seam and the SQLite backend, on top of the two; re-exports
        // what of them is API. It knows nothing of the import that drives it.
        .target(
            name: "CodableStoreCore",
            dependencies: [
                "CodableStoreSQLite", "CodableStoreJSON", "CodableStoreMacros",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The streaming import: the reader, the decode stage's batches, the writer thread behind it, the rows it
        // keeps across batches, its report and options. A client of the core, through the core's package API.
        .target(
            name: "CodableStoreImport",
            dependencies: [
                "CodableStoreCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What users import: the core and the import, re-exported.
        .target(
            name: "CodableStore",
            dependencies: ["CodableStoreCore", "CodableStoreImport"]
        ),
        // The PostgreSQL backend of the storage seam, on libpq.
        .target(
            name: "CodableStorePostgres",
            dependencies: [
                "CodableStore",
                "CLibPQ",
                "CLibPQLoader",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Model files (YAML): parsing with errors that name file, line and field, validation, rendering, and the
        // file of compiled entities.
        .target(
            name: "CodableStoreModelFile",
            dependencies: ["CodableStoreCore", .product(name: "Yams", package: "Yams")]
        ),
        .target(
            name: "CodableStoreTesting",
            dependencies: ["CodableStore"]
        ),
        .target(
            name: "IssuesModel",
            dependencies: ["CodableStore"]
        ),
        .executableTarget(
            name: "codable-store",
            dependencies: [
                "CodableStore", "CodableStorePostgres", "IssuesModel", "CodableStoreModelFile",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A program on the core alone, no import linked: CoreOnlyTests runs it (the core works without the layer above).
        .executableTarget(
            name: "core-only-store",
            dependencies: ["CodableStoreCore"]
        ),
        // Test support only (no product exports it): a SQLite VFS that wraps the default one and fails chosen
        // reads, writes, syncs and truncations, for the fault-injection tests (Store.Options.vfs opens with it).
        .target(
            name: "CSQLiteFaultVFS",
            dependencies: ["CSQLite"]
        ),
        .testTarget(
            name: "CodableStoreTests",
            dependencies: [
                "CodableStore", "CodableStoreCore", "CodableStoreImport", "CodableStoreTesting", "IssuesModel", "CSQLite",
                "CSQLiteFaultVFS", "CodableStorePostgres", "CodableStoreModelFile",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "CodableStoreTestingTests",
            dependencies: ["CodableStoreTesting", "CodableStore"],
            // Fixtures next to the tests (found from #filePath) and golden files are read at run time, not built.
            exclude: ["Fixtures", "Golden"],
            resources: [.copy("Resources/Fixtures")]
        ),
        .testTarget(
            name: "CodableStoreSQLiteTests",
            dependencies: ["CodableStoreSQLite", "CSQLite"]
        ),
        .testTarget(
            name: "CodableStoreJSONTests",
            dependencies: ["CodableStoreJSON", "CYajl"]
        ),
        .testTarget(
            name: "CodableStoreCLITests",
            dependencies: [
                "codable-store", "core-only-store", "CodableStore", "CodableStorePostgres", "IssuesModel", "CodableStoreModelFile",
            ]
        ),
        .testTarget(
            name: "CodableStoreMacrosTests",
            dependencies: [
                "CodableStoreMacros",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]
}
