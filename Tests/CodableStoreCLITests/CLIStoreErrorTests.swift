import CodableStore
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the CLI says when the store, not the input, is the problem: another process writing it, a full disk; and
/// the options that take numbers.
@Suite(.serialized) struct CLIStoreErrorTests {
    /// A store with the reference model, and a raw connection of "another process" that holds its write lock.
    private func lockedStore() throws -> (store: String, holder: Connection) {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        #expect(try CLI.run(["import", "issues", CLI.fixture, "--store", store]).status == 0)
        let holder = try Connection(path: store)
        try holder.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        return (store, holder)
    }

    @Test(arguments: [[], ["--commit-every-batch"]])
    func aSecondWriterWaitsAsLongAsToldThenSaysWhy(extra: [String]) throws {
        let (store, holder) = try lockedStore()
        defer { try? holder.execute(sql: "ROLLBACK") }
        let started = Date()
        let result = try CLI.run(["import", "issues", CLI.fixture, "--store", store, "--wait", "0.4"] + extra)
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1)
        #expect(
            result.stderr.split(separator: "\n").last
                == "error: store: the store is being written by another process; waited 0.4 s for it to finish (wait longer with --wait SECONDS)")
        #expect(!result.stderr.contains("BEGIN"))
        #expect(elapsed >= 0.4, "gave up after \(elapsed) s")
        #expect(elapsed < 4, "waited \(elapsed) s instead of 0.4 (the default is 5)")
    }

    @Test func aSecondWriterGoesOnOnceTheFirstIsDone() throws {
        let (store, holder) = try lockedStore()
        let before = try #require(try CLI.issueCount(store))
        try holder.execute(sql: "UPDATE Issue SET title = 'held'")
        nonisolated(unsafe) let releasing = holder  // used by the thread below only, while this one waits
        let release = Thread {
            Thread.sleep(forTimeInterval: 0.5)
            try? releasing.execute(sql: "COMMIT TRANSACTION")
        }
        release.start()
        let started = Date()
        let result = try CLI.run(["import", "issues", CLI.fixture, "--store", store, "--wait", "30"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) >= 0.4)
        // The import ran after the other write and upserted over it.
        let held = try Connection(path: store).scalar(sql: "SELECT count(*) FROM Issue WHERE title = 'held'")
        #expect(held == .integer(0))
        #expect(try CLI.issueCount(store) == before)
    }

    @Test func importsThatCommitEveryBatchRunAtOnceAndBothLand() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        let first = directory.appendingPathComponent("first.json").path
        let second = directory.appendingPathComponent("second.jsonl").path
        #expect(try CLI.run(["generate", "issues", "--count", "3000", "-o", first]).status == 0)
        #expect(try CLI.run(["generate", "issues", "--count", "3000", "--jsonl", "--seed", "7", "-o", second]).status == 0)
        #expect(try CLI.run(["import", "issues", CLI.fixture, "--store", store]).status == 0)
        let results = Mutex<[CLI.Result]>([])
        let other = Thread {
            if let result = try? CLI.run(["import", "issues", second, "--jsonl", "--store", store, "--commit-every-batch", "--batch-size", "100"]) {
                results.withLock { $0.append(result) }
            }
        }
        other.start()
        let mine = try CLI.run(["import", "issues", first, "--store", store, "--commit-every-batch", "--batch-size", "100"])
        while results.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.05) }
        #expect(mine.status == 0, "\(mine.stderr)")
        #expect(results.withLock { $0[0].status } == 0, "\(results.withLock { $0[0].stderr })")
        // Both dumps' identities are there once each (the generator's ids overlap, so count them apart).
        let ids = try Connection(path: store).rows(sql: "SELECT id FROM Issue").map { $0[0] }
        #expect(Set(ids).count == ids.count)
        let expected = try Set(identities(first) + identities(second) + identities(CLI.fixture))
        #expect(Set(ids) == Set(expected.map { DatabaseValue.integer($0) }))
    }

    private func identities(_ path: String) throws -> [Int64] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let records: [[String: Any]]
        if path.hasSuffix(".jsonl") {
            records = try text.split(separator: "\n").map {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
            }
        } else {
            records = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [[String: Any]]
        }
        return records.map { ($0["id"] as! NSNumber).int64Value }
    }

    @Test(arguments: [
        (["--on-error", "skip", "--max-skipped", "-1"], "Error: --max-skipped must be 0 or more (got -1)"),
        (["--batch-size", "-5"], "Error: --batch-size must be 1 or more (got -5)"),
        (["--batch-size", "0"], "Error: --batch-size must be 1 or more (got 0)"),
        (["--retained-objects", "-1"], "Error: --retained-objects must be 0 or more (got -1)"),
        (["--row-cache", "-1"], "Error: --row-cache must be a number of MiB from 0 to 1048576 (got -1)"),
        (["--cache-size", "0"], "Error: --cache-size must be a number of MiB from 1 to 1048576 (got 0)"),
        (["--cache-size", "1048577"], "Error: --cache-size must be a number of MiB from 1 to 1048576 (got 1048577)"),
        (["--wait", "-1"], "Error: --wait must be a number of seconds from 0 to 2147483 (got -1.0)"),
    ])
    func numbersOutOfRangeAreNamed(arguments: [String], message: String) throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        let result = try CLI.run(["import", "issues", CLI.fixture, "--store", store] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").first.map(String.init) == message)
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// A PostgreSQL server's buffers are its own: the option is refused before anything connects.
    @Test func aCacheSizeForPostgreSQLIsAUsageError() throws {
        let result = try CLI.run(["import", "issues", CLI.fixture, "--store", "postgres://nobody@127.0.0.1:1/none", "--cache-size", "64"])
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").first.map(String.init)
            == "Error: --cache-size applies to SQLite stores; a PostgreSQL server's buffers are its own (shared_buffers)")
    }

    /// A PostgreSQL server is shared by its sessions: `--exclusive` is refused before anything connects.
    @Test func aTruncatedLastLineOfJSONLinesIsTheEndOfInput() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        let dump = directory.appendingPathComponent("d.jsonl")
        #expect(try CLI.run(["generate", "issues", "--count", "3", "--jsonl", "-o", dump.path]).status == 0)
        var text = try String(contentsOf: dump, encoding: .utf8)
        while text.hasSuffix("\n") { text.removeLast() }
        let lines = text.split(separator: "\n")
        try String(text.dropLast(5)).write(to: dump, atomically: true, encoding: .utf8)
        let result = try CLI.run(["import", "issues", dump.path, "--jsonl", "--store", store])
        #expect(result.status == 1)
        let column = lines[2].utf8.count - 5 + 1
        let byte = lines[0].utf8.count + lines[1].utf8.count + 2 + lines[2].utf8.count - 5
        #expect(
            result.stderr.split(separator: "\n").last.map(String.init)
                == "error: record 2 (line 3, column \(column), byte \(byte)): unexpected end of input in string")
        // A line cut short in the middle still ends at its line.
        try (lines[0] + "\n" + lines[1].dropLast(5) + "\n" + lines[2] + "\n").write(to: dump, atomically: true, encoding: .utf8)
        let middle = try CLI.run(["import", "issues", dump.path, "--jsonl", "--store", store])
        #expect(middle.stderr.contains("record 1 (line 2") && middle.stderr.contains("unexpected end of line in string"), "\(middle.stderr)")
    }

    @Test func aNullIdentityIsCalledNull() throws {
        let directory = try CLI.temporaryDirectory()
        let store = directory.appendingPathComponent("s.sqlite").path
        let dump = directory.appendingPathComponent("d.json")
        #expect(try CLI.run(["generate", "issues", "--count", "2", "-o", dump.path]).status == 0)
        var records = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dump)) as? [[String: Any]])
        records[1]["id"] = NSNull()
        try JSONSerialization.data(withJSONObject: records).write(to: dump)
        let result = try CLI.run(["import", "issues", dump.path, "--store", store])
        #expect(result.status == 1)
        let message = try #require(result.stderr.split(separator: "\n").last.map(String.init))
        #expect(message.hasPrefix("error: record 1 (line 1, column "), "\(message)")
        #expect(message.hasSuffix(") at [1].id: Issue at [1] has a null identity: 'id' is null"), "\(message)")
    }

    /// A real full disk: a 2 MiB tmpfs. Mounting needs root (as on CI); elsewhere the test is skipped, and
    /// `ImportErrorTests` still checks the wording of SQLITE_FULL.
    @Test(.enabled(if: TinyDisk.isAvailable)) func aFullDiskSaysSoOnOneLineWithoutSQL() throws {
        let disk = try TinyDisk(megabytes: 2)
        defer { disk.unmount() }
        let directory = try CLI.temporaryDirectory()
        let dump = directory.appendingPathComponent("d.json").path
        #expect(try CLI.run(["generate", "issues", "--count", "20000", "-o", dump]).status == 0)
        let store = disk.path + "/s.sqlite"
        let result = try CLI.run(["import", "issues", dump, "--store", store])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("progress:") }
        #expect(lines == ["error: store: database or disk is full (SQLite error 13, SQLITE_FULL)"])
        // Nothing of the failed import is in the store, and the store is sound.
        let connection = try Connection(path: store)
        #expect(try connection.scalar(sql: "PRAGMA integrity_check") == .text("ok"))
        #expect(try connection.scalar(sql: "SELECT count(*) FROM Issue") == .integer(0))
        // generate's disk-full error is one line too.
        let generated = try CLI.run(["generate", "issues", "--count", "20000", "-o", disk.path + "/big.json"])
        #expect(generated.status == 1)
        #expect(generated.stderr == "error: cannot write to '\(disk.path)/big.json': No space left on device\n")
    }
}

/// A small tmpfs, for a disk that fills up.
struct TinyDisk {
    let path: String

    static let isAvailable: Bool = {
        guard geteuid() == 0, let disk = try? TinyDisk(megabytes: 1) else { return false }
        disk.unmount()
        return true
    }()

    init(megabytes: Int) throws {
        path = try CLI.temporaryDirectory().appendingPathComponent("disk").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = try CLI.shell("mount -t tmpfs -o size=\(megabytes)m tmpfs '\(path)'").result
        guard result.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: result.stderr]) }
    }

    func unmount() {
        _ = try? CLI.shell("umount '\(path)'")
    }
}
