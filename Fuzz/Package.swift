// swift-tools-version: 6.1
import Foundation
import PackageDescription

// The fuzzer lives in its own package so that the main package gains nothing for it. Build and run it with
// `Fuzz/run [seconds]` (see README.md), which instruments every target (AddressSanitizer and libFuzzer's
// coverage) with `-Xswiftc` flags.
//
// The main package is found from this file's own path, so a clone anywhere (or a git worktree) works; its
// package identity is the name of its folder.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "CodableStoreFuzz",
    dependencies: [
        .package(path: root.path)
    ],
    targets: [
        // libsqlite3, for an oracle that reads the stores' tables without CodableStore's wrapper, and the
        // declaration of libFuzzer's driver.
        .systemLibrary(name: "CFuzzSupport", providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "StoreFuzzer",
            dependencies: [.product(name: "CodableStore", package: rootIdentity), "CFuzzSupport"],
            // libFuzzer itself, in this executable only: `-Xswiftc -sanitize=fuzzer` would also link it into the
            // macro's executable (a second main()).
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer"])]
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
