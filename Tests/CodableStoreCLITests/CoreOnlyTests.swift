import CodableStore
import Foundation
import Testing

/// The core without the import: `core-only-store` depends on `CodableStoreCore` alone (Package.swift), so the import
/// pipeline is neither compiled into it nor linked. It decodes into a store, saves and fetches.
@Suite struct CoreOnlyTests {
    static let binary = CLI.binary.deletingLastPathComponent().appendingPathComponent("core-only-store")

    @Test func aProgramOnTheCoreAloneDecodesSavesAndFetches() throws {
        let store = try CLI.temporaryDirectory().appendingPathComponent("notes.sqlite").path
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = [store]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let failure = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(failure)")
        #expect(printed.split(separator: "\n") == [
            "Author: 1 inserted, 0 updated; Note: 2 inserted, 0 updated",
            "Author: 1 inserted, 0 updated; Note: 0 inserted, 1 updated",
            "1 one by Ada",
            "2 two, edited by Grace",
        ])
        // The store's rows, read with SQL: one row per identity, the note moved to its new author.
        let connection = try Connection(path: store)
        let notes = try connection.rows(sql: #"SELECT n.id, n.text, a.name FROM Note n JOIN Author a ON a._pk = n.author ORDER BY n.id"#)
        #expect(notes == [[.integer(1), .text("one"), .text("Ada")], [.integer(2), .text("two, edited"), .text("Grace")]])
        #expect(try connection.scalar(sql: "SELECT count(*) FROM Author") == .integer(2))
    }

    @Test func theProgramLinksNoImportCode() throws {
        // Swift symbols carry their module's name (`$s16CodableStoreCore…`): the core's are there, the import's not,
        // while the CLI, which imports dumps, has the import's (the count sees them where they are).
        func count(_ module: String, in binary: URL) throws -> Int {
            let grep = Process()
            grep.executableURL = URL(fileURLWithPath: "/bin/sh")
            grep.arguments = ["-c", "grep -a -o -F \"$1\" \"$2\" | wc -l", "count", "\(module.utf8.count)\(module)", binary.path]
            let output = Pipe()
            grep.standardOutput = output
            try grep.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            grep.waitUntilExit()
            return try #require(Int(printed.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        #expect(try count("CodableStoreCore", in: Self.binary) > 100)
        #expect(try count("CodableStoreImport", in: Self.binary) == 0)
        #expect(try count("CodableStoreImport", in: CLI.binary) > 100)
    }
}
