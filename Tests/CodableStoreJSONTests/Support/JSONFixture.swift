import Foundation
import Testing

@testable import CodableStoreJSON

/// The shared `Fixtures/json/` corpus, found from this file's path (no copy at build time).
enum JSONFixture {
    /// `Fixtures/` at the package root: four levels up from `Tests/CodableStoreJSONTests/Support/JSONFixture.swift`.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // CodableStoreJSONTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Fixtures")

    static func url(_ name: String) -> URL { root.appendingPathComponent(name) }

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: url(name)))
    }

    /// The file names in `Fixtures/json/<folder>/`, sorted.
    static func names(in folder: String) -> [String] {
        let directory = url("json/\(folder)")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }

    static var passNames: [String] { names(in: "pass") }
    static var failNames: [String] { names(in: "fail") }
}

// MARK: - Helpers shared by the JSON tests

// SplitMix64, the deterministic generator of the chunkings, is in NumberTextGenerator.swift.

/// Ways to cut a document into chunks.
enum Chunking: CustomStringConvertible, Sendable {
    case whole
    case bytes(Int)
    case random(seed: UInt64, maximum: Int)

    var description: String {
        switch self {
        case .whole: return "whole"
        case .bytes(let size): return "\(size)-byte chunks"
        case .random(let seed, let maximum): return "random chunks (seed \(seed), up to \(maximum))"
        }
    }

    /// The chunk boundaries for a document of `count` bytes.
    func ranges(_ count: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        var generator = SplitMix64(seed: { if case .random(let seed, _) = self { return seed } else { return 0 } }())
        while start < count {
            let size: Int
            switch self {
            case .whole: size = count
            case .bytes(let chunk): size = chunk
            case .random(_, let maximum): size = Int.random(in: 1...maximum, using: &generator)
            }
            let end = min(start + size, count)
            ranges.append(start..<end)
            start = end
        }
        return ranges
    }

    /// The chunkings every corpus file is checked with.
    static let all: [Chunking] = [
        .whole, .bytes(1), .bytes(2), .bytes(3), .bytes(7), .random(seed: 1, maximum: 5),
        .random(seed: 2, maximum: 16), .random(seed: 3, maximum: 64),
    ]
}

/// Parses `bytes` into a tape with the given chunking (each chunk copied into its own buffer, so that nothing can
/// read past a chunk).
func parseTape(_ bytes: [UInt8], chunking: Chunking = .whole, maximumDepth: Int = 512) throws -> JSONTape {
    let builder = JSONTapeBuilder()
    let reader = JSONReader(options: .init(maximumDepth: maximumDepth), handler: builder)
    for range in chunking.ranges(bytes.count) {
        let chunk = Array(bytes[range])
        try chunk.withUnsafeBytes { try reader.parse($0) }
    }
    try reader.finish()
    return builder.tape
}

/// The syntax error parsing `bytes` throws with the given chunking, or nil if it parses.
func syntaxError(_ bytes: [UInt8], chunking: Chunking = .whole, maximumDepth: Int = 512) -> JSONSyntaxError? {
    do {
        _ = try parseTape(bytes, chunking: chunking, maximumDepth: maximumDepth)
        return nil
    } catch let error as JSONSyntaxError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

func syntaxError(_ text: String, chunking: Chunking = .whole) -> JSONSyntaxError? {
    syntaxError(Array(text.utf8), chunking: chunking)
}

/// What must not depend on the chunking: everything but the excerpt (which shows what was available).
struct ErrorSummary: Equatable, CustomStringConvertible {
    var byteOffset: Int
    var line: Int
    var column: Int
    var reason: String
    var recordIndex: Int?

    init(_ error: JSONSyntaxError) {
        byteOffset = error.byteOffset
        line = error.line
        column = error.column
        reason = error.reason
        recordIndex = error.recordIndex
    }

    init(_ byteOffset: Int, _ line: Int, _ column: Int, _ reason: String, record: Int? = nil) {
        self.byteOffset = byteOffset
        self.line = line
        self.column = column
        self.reason = reason
        recordIndex = record
    }

    var description: String {
        "(\(byteOffset), \(line):\(column), \(reason)\(recordIndex.map { ", record \($0)" } ?? ""))"
    }
}
