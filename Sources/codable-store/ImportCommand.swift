import ArgumentParser
import CodableStore
import Foundation

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a dump into a store, upserting by identity.",
        discussion: """
            Shows a progress bar on a terminal (bytes, records, rate, ETA) and a plain progress line otherwise, on \
            standard error; prints the report on standard output. Exits with 0 on success, 1 on failure with a \
            one-line error that says where in the input. Progress that cannot be written (a closed, full or broken \
            standard error) is dropped; a report that cannot be written is a failure that says the import committed.
            """
    )

    @Argument(help: ArgumentHelp(
        "The built-in model's name (issues) and the dump file (- for standard input); with --model, the dump alone.",
        valueName: "model-and-dump"))
    var arguments: [String] = []

    @Option(help: ArgumentHelp(
        "A model file (YAML, as `codable-store infer` writes it; - for standard input) to import any dump with, instead of a built-in model.",
        valueName: "file"))
    var model: String?

    @Option(help: "With --model: the entity whose records the dump holds (default: the file's first entity).")
    var entity: String?

    /// The dump: the last argument.
    var input: String { arguments.last ?? "-" }

    @Option(help: "The SQLite store (created if missing), or a PostgreSQL database as postgres://user@host:port/database[?schema=NAME].")
    var store: String

    @Option(help: "The key path of the records' array inside a wrapper object, such as data.items.")
    var at: String?

    @Flag(help: "The input is JSON Lines.")
    var jsonl = false

    @Option(parsing: .unconditional, help: "Records per batch (default: 500 into SQLite, 1,000 into PostgreSQL).")
    var batchSize: Int?

    @Option(parsing: .unconditional, help: "Users and labels kept in memory after the batches that used them, so that records mentioning them again need no lookup (default: 8192; 0: none).")
    var retainedObjects: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("Memory for the stored rows of users and labels, which answer records mentioning them again without a query once their objects are let go, in MiB (default: 4; 0: none).", valueName: "MiB"))
    var rowCache: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("SQLite's page cache while the import writes, in MiB (default: 20, or the store's own if larger; SQLite stores only). Imports of more than a few million records into one store write faster with more.", valueName: "MiB"))
    var cacheSize: Int?

    @Option(help: "What a bad record does: stop (default, nothing kept) or skip (imported without it, listed in the report; with --jsonl, lines that are not JSON too).")
    var onError: ImportOptions.FailurePolicy = .stop

    @Option(parsing: .unconditional, help: "With --on-error skip: fail once more than this many records were skipped (a file in the wrong format).")
    var maxSkipped: Int?

    @Flag(help: "Commit every batch (an interrupted import keeps what was committed and can be run again; imports of one store running at once interleave their batches).")
    var commitEveryBatch = false

    @Flag(help: "Take the store for the import alone: 5-15% faster into empty tables on SQLite, which then writes each page once (a rollback journal instead of the WAL); on PostgreSQL, the foreign keys and non-unique indexes of empty tables are made after the load (about 40% faster). Nobody else can read the store (PostgreSQL: the import's tables) until the import ends. Not granted, and the import runs as usual, when another connection has the store (or the tables) open.")
    var exclusive = false

    @Flag(inversion: .prefixedNo, help: "Skip the records whose rows are stored exactly as an earlier import of the same record left them (SQLite stores only; on by default): a re-import of a dump that changed little decodes and writes only what changed. Rows changed since, by CodableStore or by SQL of other programs, are decoded again: see ImportOptions.skipsUnchangedRecords.")
    var skipUnchanged = true

    @Flag(help: "The dump is the whole truth: once it is written, stored records it does not have are deleted, in the same transaction (nothing is deleted when a record was skipped).")
    var sync = false

    @Option(parsing: .unconditional, help: ArgumentHelp("How long to wait while another process writes the store before giving up.", valueName: "seconds"))
    var wait = 5.0

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func validate() throws {
        let expected = model == nil ? 2 : 1
        if arguments.count != expected {
            throw ValidationError(
                model == nil
                    ? "give the model and the dump: codable-store import issues DUMP --store STORE, or import --model FILE DUMP --store STORE"
                    : "with --model, give the dump alone: codable-store import --model FILE DUMP --store STORE")
        }
        if model == "-", input == "-" { throw ValidationError("the model and the dump cannot both be read from standard input") }
        if at != nil && jsonl { throw ValidationError("--at and --jsonl cannot be used together") }
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be 1 or more (got \(batchSize))") }
        if let retainedObjects, retainedObjects < 0 {
            throw ValidationError("--retained-objects must be 0 or more (got \(retainedObjects))")
        }
        if let rowCache, rowCache < 0 || rowCache > 1 << 20 {
            throw ValidationError("--row-cache must be a number of MiB from 0 to \(1 << 20) (got \(rowCache))")
        }
        if let cacheSize {
            // KiB in an Int for the pragma: a terabyte is far beyond any machine this runs on.
            guard cacheSize >= 1, cacheSize <= 1 << 20 else {
                throw ValidationError("--cache-size must be a number of MiB from 1 to \(1 << 20) (got \(cacheSize))")
            }
            if StoreLocation.isPostgres(store) {
                throw ValidationError("--cache-size applies to SQLite stores; a PostgreSQL server's buffers are its own (shared_buffers)")
            }
        }
        if let maxSkipped {
            guard maxSkipped >= 0 else { throw ValidationError("--max-skipped must be 0 or more (got \(maxSkipped))") }
            guard onError == .skip else { throw ValidationError("--max-skipped needs --on-error skip") }
        }
        // SQLite's busy timeout is an Int32 of milliseconds: up to about 24 days.
        guard wait >= 0, wait <= Double(Int32.max) / 1000 else {
            throw ValidationError("--wait must be a number of seconds from 0 to \(Int32.max / 1000) (got \(wait))")
        }
    }

    func run() throws {
        let chosen = try CommandModel.resolve(builtIn: model == nil ? arguments.first : nil, file: model, entity: entity)
        let progress = ProgressDisplay(isTerminal: isatty(2) == 1)
        var options = ImportOptions(
            layout: jsonl ? .jsonLines : at.map { .arrayAt($0) } ?? .array,
            batchSize: batchSize,
            failurePolicy: onError,
            maximumSkippedRecords: maxSkipped,
            commitEveryBatch: commitEveryBatch,
            exclusiveAccess: exclusive,
            skipsUnchangedRecords: skipUnchanged,
            decoder: chosen.decoder,
            progress: { progress.show($0) }
        )
        if let retainedObjects { options.retainedObjectLimit = retainedObjects }
        if let rowCache { options.rowCacheKiB = rowCache * 1_024 }
        if let cacheSize { options.cacheSizeKiB = cacheSize * 1_024 }
        let report: ImportReport
        do {
            let database = try chosen.open(store, options: Store.Options(busyTimeout: Int32((wait * 1000).rounded())))
            report = try chosen.importJSON(
                into: database, from: input == "-" ? .standardInput : .file(input), options: options, sync: sync)
        } catch {
            progress.finish()
            printError(error, waited: wait, explanation: chosen.explanation(of: error))
            throw ExitCode.failure
        }
        progress.finish()
        do {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                try Output.standardOutput.write(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n")
            } else {
                try Output.standardOutput.write(report.summary + "\n")
            }
        } catch {
            // The store has the data: say so, so that nobody imports it again to get the report.
            printError("error: the import was committed (\(report.recordsImported) records), but its report could not be written: \(error)")
            throw ExitCode.failure
        }
    }
}

extension ImportOptions.FailurePolicy: ExpressibleByArgument {}

/// The progress bar (terminal) or progress lines (pipes and files), on standard error.
final class ProgressDisplay: @unchecked Sendable {
    // @unchecked: the importer calls `show` on the importing thread only.
    let isTerminal: Bool
    private var lastLine = Date.distantPast
    private var shown = false

    init(isTerminal: Bool) {
        self.isTerminal = isTerminal
    }

    private var pending: ImportProgress?

    func show(_ progress: ImportProgress, force: Bool = false) {
        let now = Date()
        // A terminal is redrawn 10 times a second at most; a log gets a line every 5 seconds.
        guard force || now.timeIntervalSince(lastLine) >= (isTerminal ? 0.1 : 5) else {
            pending = progress
            return
        }
        pending = nil
        lastLine = now
        let megabytes = Double(progress.bytesRead) / 1_048_576
        var text = String(format: "%.1f MiB, %d records, %.0f records/s", megabytes, progress.recordsRead, progress.recordsPerSecond)
        var fraction: Double?
        if let total = progress.totalBytes, total > 0 {
            fraction = min(1, Double(progress.bytesRead) / Double(total))
            text = String(format: "%.1f/%.1f MiB, ", megabytes, Double(total) / 1_048_576)
                + String(format: "%d records, %.0f records/s", progress.recordsRead, progress.recordsPerSecond)
            if let left = progress.estimatedSecondsLeft { text += String(format: ", ETA %.0f s", left) }
        }
        if isTerminal {
            var bar = ""
            if let fraction {
                let width = 30
                let filled = Int(fraction * Double(width))
                bar = "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
                    + String(format: "%3.0f%% ", fraction * 100)
            }
            write("\r\u{1B}[2K" + bar + text)
            shown = true
        } else {
            write("progress: " + text + "\n")
        }
    }

    /// Shows the last state if it was held back, and ends the bar's line.
    func finish() {
        if let pending { show(pending, force: true) }
        if isTerminal, shown { write("\n") }
    }

    /// Progress that cannot be written (a closed, full or broken standard error) is dropped, and the import goes
    /// on; after the first failure, no more is tried.
    private var isBroken = false

    private func write(_ text: String) {
        guard !isBroken else { return }
        do { try Output.standardError.write(text) } catch { isBroken = true }
    }
}
