import CodableStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server that fails mid-import, each on a server of the test's own (``PrivatePostgres``): stopped and
/// restarted, a session ended by an administrator, the client killed, a statement timeout, a full disk. Each ends in a
/// one-line error that names the store and what happened, within seconds; the store holds nothing of the failed
/// transaction (or whole batches only, with `--commit-every-batch`); running the import again completes it with the
/// rows of an uninterrupted import.
@Suite(.serialized, .enabled(if: PrivatePostgres.isAvailable, "needs PostgreSQL's programs (apt-get install -y postgresql)"))
struct PostgresFaultTests {
    static let batchSize = 500
    static let records = 12_000

    /// The server of the tests but the full disk's (which has one on a tmpfs), started once and stopped when the test
    /// process exits: each test uses schemas of its own.
    private static let server: Result<PrivatePostgres, any Error> = {
        let result = Result { try PrivatePostgres() }
        atexit { try? PostgresFaultTests.server.get().shutDown() }
        return result
    }()

    /// A dump of `records` records without repeated identities (so that each committed batch adds `batchSize` issues),
    /// written once.
    private static let dump: Result<String, any Error> = Result {
        let path = try CLI.temporaryDirectory().appendingPathComponent("dump.jsonl").path
        let result = try CLI.run(["generate", "issues", "--count", "\(records)", "--duplicates", "0", "--jsonl", "-o", path])
        guard result.status == 0 else { throw PrivatePostgres.CommandFailed(command: "generate", output: result.stderr) }
        return path
    }

    /// What an uninterrupted import of the dump exports (`--stable`): the same into a SQLite file as into PostgreSQL
    /// (`PostgresCLITests.importAndExportMatchTheSQLiteStore`).
    private static let expectedExport: Result<String, any Error> = Result { try export(of: try dump.get()) }

    /// What an import of `dump` into a SQLite file exports (`--stable`).
    private static func export(of dump: String) throws -> String {
        let file = try CLI.temporaryDirectory().appendingPathComponent("reference.sqlite").path
        let imported = try CLI.run(["import", "issues", dump, "--jsonl", "--store", file])
        guard imported.status == 0 else { throw PrivatePostgres.CommandFailed(command: "import", output: imported.stderr) }
        return try CLI.run(["export", "issues", "--store", file, "--stable"]).stdout
    }

    private func dump() throws -> String { try Self.dump.get() }

    /// An import running in a process of its own, its standard error in a file (read while it runs).
    private final class RunningImport {
        let process = Process()
        let errors: String

        init(_ dump: String, into store: String, _ extra: [String] = []) throws {
            errors = try CLI.temporaryDirectory().appendingPathComponent("stderr.txt").path
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            process.executableURL = CLI.binary
            process.arguments = ["import", "issues", dump, "--jsonl", "--store", store, "--batch-size", "\(PostgresFaultTests.batchSize)"] + extra
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle(forWritingAtPath: errors)
            try process.run()
        }

        var standardError: String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }

        /// Waits until the import's session (named `session` in its URL's `application_name`) has written (the server
        /// gave its transaction an id), and with `committed`, until that many issues were committed; then a moment more.
        func waitUntilWriting(_ server: PrivatePostgres, session: String, schema: String, committed: Int = 0) throws {
            let deadline = ContinuousClock.now + .seconds(60)
            func writing() throws -> Bool {
                let sessions = try server.sql(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(session)' AND backend_xid IS NOT NULL")
                guard sessions != "0" else { return false }
                guard committed > 0 else { return true }
                return (Int(try server.sql(#"SELECT count(*) FROM "\#(schema)"."Issue""#)) ?? 0) >= committed
            }
            // The schema may not exist yet: a failing query is "not yet".
            while ContinuousClock.now < deadline, process.isRunning, (try? writing()) != true { Thread.sleep(forTimeInterval: 0.01) }
            Thread.sleep(forTimeInterval: 0.3)
            #expect(process.isRunning, "the import ended before the fault: \(standardError)")
        }

        /// Waits for the process to end (at most `seconds`: a hang fails the test), returning its status and its
        /// standard error without progress lines.
        func finish(within seconds: Double = 60) -> (status: Int32, error: String) {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning {
                Issue.record("the import still ran after \(seconds) s: \(standardError)")
                process.terminate()
            }
            process.waitUntilExit()
            let lines = standardError.split(separator: "\n").filter { !$0.hasPrefix("progress") }
            return (process.terminationStatus, lines.joined(separator: "\n"))
        }
    }

    private func count(_ server: PrivatePostgres, _ schema: String) throws -> Int {
        Int(try server.sql(#"SELECT count(*) FROM "\#(schema)"."Issue""#)) ?? -1
    }

    /// Runs the import again to its end, and checks that the store then equals an uninterrupted import of the dump.
    private func completeAndCompare(
        _ dump: String, _ server: PrivatePostgres, _ schema: String, expected: String? = nil
    ) throws {
        let again = try CLI.run(["import", "issues", dump, "--jsonl", "--store", "\(server.url)?schema=\(schema)"])
        #expect(again.status == 0, "\(again.stderr)")
        let exported = try CLI.run(["export", "issues", "--store", "\(server.url)?schema=\(schema)", "--stable"])
        #expect(exported.status == 0)
        #expect(exported.stdout == (try expected ?? Self.expectedExport.get()))
        #expect(!exported.stdout.isEmpty)
    }

    @Test(arguments: [false, true])
    func theServerStoppedAndRestartedMidImport(commitEveryBatch: Bool) throws {
        let server = try Self.server.get()
        let dump = try dump()
        let schema = commitEveryBatch ? "stopped_batches" : "stopped_whole"
        let store = "\(server.url)?schema=\(schema)&application_name=\(schema)"
        let running = try RunningImport(dump, into: store, commitEveryBatch ? ["--commit-every-batch"] : [])
        try running.waitUntilWriting(server, session: schema, schema: schema, committed: commitEveryBatch ? 1_000 : 0)
        try server.stopImmediately()
        let (status, error) = running.finish()
        #expect(status == 1)
        #expect(error.hasPrefix("error: store: lost the connection to \(store): "), "\(error)")
        #expect(error.split(separator: "\n").count == 1, "\(error)")
        try server.start()
        let stored = try count(server, schema)
        if commitEveryBatch {
            #expect(stored % Self.batchSize == 0 && stored >= 1_000 && stored < Self.records, "\(stored)")
        } else {
            #expect(stored == 0)
        }
        try completeAndCompare(dump, server, schema)
    }

    @Test func aSessionEndedByTheServerFailsTheImport() throws {
        let server = try Self.server.get()
        let dump = try dump()
        let store = "\(server.url)?schema=ended&application_name=ended"
        let running = try RunningImport(dump, into: store)
        try running.waitUntilWriting(server, session: "ended", schema: "ended")
        try server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ended'")
        let (status, error) = running.finish()
        #expect(status == 1)
        #expect(error.hasPrefix("error: store: lost the connection to \(server.url)?"), "\(error)")
        // The server's reason, or, when the session ended while the client was streaming COPY data, libpq's: a socket
        // closed with data unread sends a reset, which may discard the reason before the client reads it.
        #expect(
            error.contains("terminating connection due to administrator command")
                || error.contains("server closed the connection unexpectedly"), "\(error)")
        #expect(try count(server, "ended") == 0)
        try completeAndCompare(dump, server, "ended")
    }

    @Test func aKilledClientLeavesWholeBatchesOnly() throws {
        let server = try Self.server.get()
        let dump = try dump()
        let running = try RunningImport(dump, into: "\(server.url)?schema=killed&application_name=killed", ["--commit-every-batch"])
        try running.waitUntilWriting(server, session: "killed", schema: "killed", committed: 1_000)
        kill(running.process.processIdentifier, SIGKILL)
        running.process.waitUntilExit()
        #expect(running.process.terminationReason == .uncaughtSignal)
        // The server notices the closed connection and rolls the batch it was writing back.
        let deadline = ContinuousClock.now + .seconds(10)
        while try server.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'killed'") != "0",
            ContinuousClock.now < deadline
        {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let stored = try count(server, "killed")
        #expect(stored % Self.batchSize == 0 && stored >= 1_000 && stored < Self.records, "\(stored)")
        try completeAndCompare(dump, server, "killed")
    }

    @Test func aStatementTimeoutFailsTheImportNamingIt() throws {
        let server = try Self.server.get()
        let dump = try dump()
        // The store exists, and another session holds its issues table while the import runs: the import's first
        // lookup waits, and the server cancels it after the URL's statement timeout (libpq's `options`).
        let create = try CLI.run(["import", "issues", dump, "--jsonl", "--store", "\(server.url)?schema=timeout"])
        try #require(create.status == 0, "\(create.stderr)")
        try server.sql(#"TRUNCATE "timeout"."Issue" CASCADE"#)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "\(PrivatePostgres.programs!)/psql")
        holder.arguments = ["-X", "-d", server.url + "?application_name=holder", "-c", #"BEGIN; LOCK TABLE "timeout"."Issue"; SELECT pg_sleep(60); COMMIT;"#]
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        func endHolder() { _ = try? server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'holder'") }
        defer { endHolder() }
        let deadline = ContinuousClock.now + .seconds(10)
        while try server.sql("SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation IS NOT NULL") == "0",
            ContinuousClock.now < deadline
        {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let store = "\(server.url)?schema=timeout&options=-c%20statement_timeout%3D500"
        let start = ContinuousClock.now
        let result = try CLI.run(["import", "issues", dump, "--jsonl", "--store", store, "--wait", "30"])
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("error: store: the server of \(server.url)?schema=timeout&options="), "\(result.stderr)")
        #expect(
            result.stderr.contains(" failed: canceling statement due to statement timeout (PostgreSQL 57014); the transaction was rolled back"),
            "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        endHolder()
        #expect(try count(server, "timeout") == 0)
    }

    @Test(.enabled(if: PrivatePostgres.canMount, "needs to mount a tmpfs (root, where the machine allows it)"))
    func aFullDiskFailsTheImportAndItCompletesOnceThereIsRoom() throws {
        // initdb leaves 25 MiB of the 64 free; 30,000 records need more.
        let server = try PrivatePostgres(diskMiB: 64)
        defer { try? server.shutDown() }
        let dump = try CLI.temporaryDirectory().appendingPathComponent("large.jsonl").path
        let generated = try CLI.run(["generate", "issues", "--count", "30000", "--jsonl", "-o", dump])
        try #require(generated.status == 0, "\(generated.stderr)")
        let store = "\(server.url)?schema=full"
        let result = try CLI.run(["import", "issues", dump, "--jsonl", "--store", store])
        #expect(result.status == 1)
        let error = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("progress") }.joined(separator: "\n")
        // Out of room for a table's file (an error), or for the write-ahead log (the server stops: a lost connection).
        #expect(
            error.hasPrefix("error: store: the server of \(store) failed: ") && error.contains("No space left on device")
                || error.hasPrefix("error: store: lost the connection to \(store): "),
            "\(error)")
        try server.resizeDisk(toMiB: 400)
        try server.waitUntilReady()
        #expect(try count(server, "full") == 0)
        try completeAndCompare(dump, server, "full", expected: Self.export(of: dump))
    }
}
