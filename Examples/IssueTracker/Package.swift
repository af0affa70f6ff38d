// swift-tools-version: 6.1
import Foundation
import PackageDescription

// An app as a user of CodableStore writes it, with a fixture-based test suite (CodableStoreTesting).
// In your own app, depend on a checkout next to it, in a folder named CodableStore (README.md, "Install"):
//     .package(path: "../CodableStore")
// Here it is the checkout two folders up, found from this file's path: a path dependency's package identity is
// its folder's name, whatever the clone was called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let codableStore = root.lastPathComponent.lowercased()

let package = Package(
    name: "IssueTracker",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: root.path)
    ],
    targets: [
        .target(
            name: "IssueTracker",
            dependencies: [.product(name: "CodableStore", package: codableStore)]
        ),
        .testTarget(
            name: "IssueTrackerTests",
            dependencies: ["IssueTracker", .product(name: "CodableStoreTesting", package: codableStore)],
            // Recorded responses and golden files are read from here at run time.
            exclude: ["Fixtures", "Golden"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
