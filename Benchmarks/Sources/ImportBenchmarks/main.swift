import CLimitImporter
import CSQLiteBenchmark
import BenchmarkSupport
import CodableStore
import CodableStorePostgres
import Foundation
import IssuesModel
import Synchronization

// Imports generated dumps of the reference workload (issue + nested user + 0-3 labels, ~520 bytes per record,
// 10% repeated ids) into a new store, then again into the same store (re-import), and compares with a baseline
// written here: Foundation JSONDecoder into plain structs, then raw sqlite3 prepared upserts of the same rows.
// It also imports and re-imports a dump of the same size without repeated ids: re-importing unchanged data.
// And it compares with the limit baseline: a hand-written C importer (Sources/CLimitImporter) on yajl's callback
// parser and raw sqlite3 multi-row upserts into a minimal schema, whose rows are checked equal to the store's.
// Each run is a child process, so peak RSS is measured per contender.
//
// IMPORT_BENCH_PROFILE=1 prints the import's statement profile (Store.Options.statementProfiler) on standard
// error: per statement text, how often it ran and how long, slowest first.
//
//   swift run -c release ImportBenchmarks [--counts 100000,1000000]

func check(_ code: Int32, _ db: OpaquePointer?, _ what: String) {
    guard code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW else {
        fatalError("\(what): \(String(cString: sqlite3_errmsg(db)))")
    }
}

/// The baseline: JSONDecoder, then prepared upserts in one transaction, same schema and pragmas as the store.
func baseline(dump: String, store: String) throws -> Int {
    let data = try Data(contentsOf: URL(fileURLWithPath: dump))
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    let issues = try decoder.decode([PlainIssue].self, from: data)
    var db: OpaquePointer?
    check(sqlite3_open(store, &db), db, "open")
    defer { sqlite3_close(db) }
    let setup = """
        PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;
        CREATE TABLE User (_pk INTEGER PRIMARY KEY, id INTEGER NOT NULL, login TEXT);
        CREATE UNIQUE INDEX User_identity ON User (id);
        CREATE TABLE Label (_pk INTEGER PRIMARY KEY, id INTEGER NOT NULL, name TEXT);
        CREATE UNIQUE INDEX Label_identity ON Label (id);
        CREATE TABLE Issue (_pk INTEGER PRIMARY KEY, id INTEGER NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,
          state TEXT NOT NULL, createdAt REAL NOT NULL, updatedAt REAL NOT NULL, comments INTEGER NOT NULL, score REAL NOT NULL,
          body TEXT, user INTEGER REFERENCES User(_pk) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED);
        CREATE UNIQUE INDEX Issue_identity ON Issue (id);
        CREATE INDEX Issue_user ON Issue (user);
        CREATE TABLE Issue_labels (source INTEGER NOT NULL REFERENCES Issue(_pk) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
          target INTEGER NOT NULL REFERENCES Label(_pk) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, position INTEGER,
          UNIQUE (source, target));
        CREATE INDEX Issue_labels_target ON Issue_labels (target);
        BEGIN IMMEDIATE;
        """
    check(sqlite3_exec(db, setup, nil, nil, nil), db, "setup")
    func prepare(_ sql: String) -> OpaquePointer? {
        var statement: OpaquePointer?
        check(sqlite3_prepare_v2(db, sql, -1, &statement, nil), db, sql)
        return statement
    }
    let transient = _benchmark_sqlite_transient()
    let upsertUser = prepare("INSERT INTO User (id, login) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET login = excluded.login RETURNING _pk")
    let upsertLabel = prepare("INSERT INTO Label (id, name) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name RETURNING _pk")
    let upsertIssue = prepare("""
        INSERT INTO Issue (id, number, title, state, createdAt, updatedAt, comments, score, body, user) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET number = excluded.number, title = excluded.title, state = excluded.state,
          createdAt = excluded.createdAt, updatedAt = excluded.updatedAt, comments = excluded.comments, score = excluded.score,
          body = excluded.body, user = excluded.user RETURNING _pk
        """)
    let clearLabels = prepare("DELETE FROM Issue_labels WHERE source = ?")
    let link = prepare("INSERT OR IGNORE INTO Issue_labels (source, target) VALUES (?, ?)")
    func step(_ statement: OpaquePointer?) -> Int64 {
        check(sqlite3_step(statement), db, "step")
        let value = sqlite3_column_int64(statement, 0)
        sqlite3_reset(statement)
        return value
    }
    for issue in issues {
        sqlite3_bind_int64(upsertUser, 1, Int64(issue.user.id))
        sqlite3_bind_text(upsertUser, 2, issue.user.login, -1, transient)
        let user = step(upsertUser)
        sqlite3_bind_int64(upsertIssue, 1, Int64(issue.id))
        sqlite3_bind_int64(upsertIssue, 2, Int64(issue.number))
        sqlite3_bind_text(upsertIssue, 3, issue.title, -1, transient)
        sqlite3_bind_text(upsertIssue, 4, issue.state, -1, transient)
        sqlite3_bind_double(upsertIssue, 5, issue.created_at.timeIntervalSince1970)
        sqlite3_bind_double(upsertIssue, 6, issue.updated_at.timeIntervalSince1970)
        sqlite3_bind_int64(upsertIssue, 7, Int64(issue.comments))
        sqlite3_bind_double(upsertIssue, 8, issue.score)
        if let body = issue.body { sqlite3_bind_text(upsertIssue, 9, body, -1, transient) } else { sqlite3_bind_null(upsertIssue, 9) }
        sqlite3_bind_int64(upsertIssue, 10, user)
        let row = step(upsertIssue)
        sqlite3_bind_int64(clearLabels, 1, row)
        check(sqlite3_step(clearLabels), db, "clear")
        sqlite3_reset(clearLabels)
        for label in issue.labels {
            sqlite3_bind_int64(upsertLabel, 1, Int64(label.id))
            sqlite3_bind_text(upsertLabel, 2, label.name, -1, transient)
            let target = step(upsertLabel)
            sqlite3_bind_int64(link, 1, row)
            sqlite3_bind_int64(link, 2, target)
            check(sqlite3_step(link), db, "link")
            sqlite3_reset(link)
        }
    }
    for statement in [upsertUser, upsertLabel, upsertIssue, clearLabels, link] { sqlite3_finalize(statement) }
    check(sqlite3_exec(db, "COMMIT", nil, nil, nil), db, "commit")
    return issues.count
}

/// Prints a statement profile on standard error: per statement text, runs and time, slowest first.
func printProfile(_ profile: [String: (count: Int, time: Duration)]) {
    guard !profile.isEmpty else { return }
    let total = profile.values.reduce(Duration.zero) { $0 + $1.time }
    let milliseconds = { (time: Duration) in Double(time.components.seconds) * 1e3 + Double(time.components.attoseconds) / 1e15 }
    var lines = ["statement profile: \(profile.values.reduce(0) { $0 + $1.count }) statements, \(String(format: "%.0f", milliseconds(total))) ms in SQLite"]
    for (sql, entry) in profile.sorted(by: { $0.value.time > $1.value.time }).prefix(15) {
        let text = sql.replacingOccurrences(of: "\n", with: " ")
        lines.append(String(
            format: "  %5.1f%%  %9.1f ms  %9d x  %7.2f us  %@", 100 * milliseconds(entry.time) / max(milliseconds(total), 1e-9),
            milliseconds(entry.time), entry.count, milliseconds(entry.time) * 1000 / Double(entry.count),
            String(text.prefix(110)) as NSString))
    }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
}

/// Child mode: one contender; prints "seconds peakRSS records".
if let contender = option("--contender"), let dump = option("--dump"), let store = option("--store") {
    let clock = ContinuousClock()
    let start = clock.now
    var records = 0
    // IMPORT_BENCH_MEMORY=1: where peak memory goes. malloc's bytes in use are sampled every 50 ms, so that a
    // peak RSS above them (memory malloc holds but does not use) can be told from live memory.
    let memoryReport = ProcessInfo.processInfo.environment["IMPORT_BENCH_MEMORY"] != nil
    let mallocPeak = Mutex((used: 0, held: 0))
    if memoryReport {
        Thread.detachNewThread {
            while true {
                let info = mallinfo2()
                mallocPeak.withLock {
                    $0.used = max($0.used, Int(info.uordblks + info.hblkhd))
                    $0.held = max($0.held, Int(info.arena + info.hblkhd))
                }
                usleep(50_000)
            }
        }
    }
    switch contender {
    case "baseline":
        records = try baseline(dump: dump, store: store)
    case "limit", "limit-rollback", "limit-indexed":
        // limit-indexed: the minimal layout plus the index on the user foreign key (see limit_importer.c).
        if contender == "limit-indexed" { setenv("LIMIT_LAYOUT", "indexed", 1) }
        let imported = limit_import(dump, store, contender == "limit-rollback" ? 0 : 1)
        guard imported >= 0 else { exit(1) }
        records = Int(imported)
    case "import-postgres":
        // The same import into a PostgreSQL database (`--store postgres://…`).
        let profile = Mutex<[String: (count: Int, time: Duration)]>([:])
        var storeOptions = Store.Options()
        if ProcessInfo.processInfo.environment["IMPORT_BENCH_PROFILE"] != nil {
            storeOptions.statementProfiler = { sql, time in
                profile.withLock { $0[sql, default: (0, .zero)].count += 1; $0[sql, default: (0, .zero)].time += time }
            }
        }
        defer { printProfile(profile.withLock { $0 }) }
        let database = try Store.open(postgres: store, entities: referenceEntities, options: storeOptions)
        var options = ImportOptions(decoder: referenceDecoder())
        if let size = ProcessInfo.processInfo.environment["IMPORT_BENCH_BATCH"].flatMap({ Int($0) }) { options.batchSize = size }
        if let size = ProcessInfo.processInfo.environment["IMPORT_BENCH_ROW_CACHE_KIB"].flatMap({ Int($0) }) { options.rowCacheKiB = size }
        // Into new tables alone (foreign keys after the load), as the limit loads its own; IMPORT_BENCH_SHARED=1 imports
        // beside other sessions, checking keys row by row.
        options.exclusiveAccess = ProcessInfo.processInfo.environment["IMPORT_BENCH_SHARED"] == nil
        let report = try database.importJSON(Issue.self, from: .file(dump), options: options)
        records = report.recordsRead
        printThreads(report)
    case "postgres-baseline":
        // The psql baseline (Scripts/postgres-baseline.sh) on the JSON Lines form of the dump; `--store URL#SCHEMA`.
        let parts = store.split(separator: "#", maxSplits: 1).map(String.init)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Scripts/postgres-baseline.sh").path
        try runProcess("/bin/bash", [script, dump, parts[0], parts[1]])
        records = -1
    case "postgres-limit":
        // The C limit baseline for PostgreSQL (Sources/CLimitImporter/postgres_limit_importer.c) on the JSON dump;
        // `--store URL#SCHEMA`. LIMIT_COPY=text copies in the text format, LIMIT_PROFILE=1 prints its phases.
        let parts = store.split(separator: "#", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { fatalError("postgres-limit wants --store URL#SCHEMA") }
        let imported = postgres_limit_import(dump, parts[0], parts[1])
        guard imported >= 0 else { exit(1) }
        records = Int(imported)
    case "import", "import-sync", "import-exclusive", "import-plain":
        let profile = Mutex<[String: (count: Int, time: Duration)]>([:])
        var storeOptions = Store.Options()
        if ProcessInfo.processInfo.environment["IMPORT_BENCH_PROFILE"] != nil {
            storeOptions.statementProfiler = { sql, time in
                profile.withLock { $0[sql, default: (0, .zero)].count += 1; $0[sql, default: (0, .zero)].time += time }
            }
        }
        defer { printProfile(profile.withLock { $0 }) }
        // IMPORT_BENCH_PAGE_SIZE=N: a new store file made with SQLite pages of N bytes (4096 by default), to compare.
        if let size = ProcessInfo.processInfo.environment["IMPORT_BENCH_PAGE_SIZE"].flatMap({ Int($0) }),
            !FileManager.default.fileExists(atPath: store)
        {
            var db: OpaquePointer?
            check(sqlite3_open(store, &db), db, "open")
            check(sqlite3_exec(db, "PRAGMA page_size = \(size); CREATE TABLE t(x); DROP TABLE t;", nil, nil, nil), db, "page size")
            sqlite3_close(db)
        }
        let database = try Store(path: store, entities: referenceEntities, options: storeOptions)
        var options = ImportOptions(decoder: referenceDecoder())
        // IMPORT_BENCH_BATCH=N: another batch size than the default, to compare.
        if let size = ProcessInfo.processInfo.environment["IMPORT_BENCH_BATCH"].flatMap({ Int($0) }) { options.batchSize = size }
        // IMPORT_BENCH_CACHE_KIB=N: another page cache for the import than the default (`ImportOptions.cacheSizeKiB`).
        if let size = ProcessInfo.processInfo.environment["IMPORT_BENCH_CACHE_KIB"].flatMap({ Int($0) }) { options.cacheSizeKiB = size }
        // IMPORT_BENCH_RETAIN=N: another limit of objects retained across batches (`ImportOptions.retainedObjectLimit`).
        if let limit = ProcessInfo.processInfo.environment["IMPORT_BENCH_RETAIN"].flatMap({ Int($0) }) { options.retainedObjectLimit = limit }
        // IMPORT_BENCH_ROW_CACHE_KIB=N: another budget for the writer's cached rows (`ImportOptions.rowCacheKiB`; 0: none).
        if let size = ProcessInfo.processInfo.environment["IMPORT_BENCH_ROW_CACHE_KIB"].flatMap({ Int($0) }) { options.rowCacheKiB = size }
        // IMPORT_BENCH_EXCLUSIVE=1: the import takes the store for itself (`ImportOptions.exclusiveAccess`: a rollback
        // journal instead of the WAL), as the limit baseline's `limit-rollback`.
        // The import-exclusive contender does the same.
        if ProcessInfo.processInfo.environment["IMPORT_BENCH_EXCLUSIVE"] == "1" || contender == "import-exclusive" {
            options.exclusiveAccess = true
        }
        // The import skips the records stored as they would be written (`ImportOptions.skipsUnchangedRecords`, on
        // by default); the import-plain contender decodes every record, as `--no-skip-unchanged` does.
        if contender == "import-plain" { options.skipsUnchangedRecords = false }
        let report = try database.importJSON(
            Issue.self, from: .file(dump), options: options, syncing: contender == "import-sync" ? .all : nil)
        if options.exclusiveAccess, report.exclusiveAccess != true { fatalError("exclusive access was not granted") }
        records = report.recordsRead
        printThreads(report)
    default:
        fatalError("unknown contender")
    }
    if memoryReport {
        // SQLite's own allocations (page cache, journals) are part of malloc's; the rest of RSS is code and data
        // of the libraries.
        let mebibytes = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        let peak = mallocPeak.withLock { $0 }
        FileHandle.standardError.write(Data("""
            sqlite highwater \(mebibytes(Int(sqlite3_memory_highwater(0)))), malloc peak in use \(mebibytes(peak.used)), \
            peak held \(mebibytes(peak.held))

            """.utf8))
    }
    print(seconds(clock.now - start), peakRSSMiB(), records)
    exit(0)
}

func run(_ contender: String, dump: String, store: String) throws -> (seconds: Double, rss: Double) {
    let fields = try runChild(["--contender", contender, "--dump", dump, "--store", store])
    guard fields.count == 3 else { fatalError("\(contender) printed \(fields)") }
    return (Double(fields[0])!, Double(fields[1])!)
}

/// The stores must hold the same rows: the benchmark measures equal work.
func digest(_ path: String) -> String {
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    defer { sqlite3_close(db) }
    var parts: [String] = []
    for sql in [
        "SELECT count(*), sum(id), sum(comments), sum(length(title)), sum(length(body)) FROM Issue",
        "SELECT count(*), sum(id) FROM User", "SELECT count(*), sum(id) FROM Label",
        "SELECT count(*), sum(i.id * l.id % 1000) FROM Issue_labels j JOIN Issue i ON i._pk = j.source JOIN Label l ON l._pk = j.target",
    ] {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        if sqlite3_step(statement) == SQLITE_ROW {
            parts.append((0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_text(statement, $0)) }.joined(separator: ","))
        }
        sqlite3_finalize(statement)
    }
    return parts.joined(separator: " | ")
}

/// Whether a store of the importer and one of the limit baseline hold the same issues, users, labels and links.
func sameRows(store: String, limit: String) -> Bool {
    var db: OpaquePointer?
    sqlite3_open(store, &db)
    defer { sqlite3_close(db) }
    check(sqlite3_exec(db, "ATTACH '\(limit)' AS l", nil, nil, nil), db, "attach")
    let pairs = [
        ("SELECT i.id, i.number, i.title, i.state, i.createdAt, i.updatedAt, i.comments, i.score, i.body, u.id FROM Issue i LEFT JOIN User u ON u._pk = i.user",
         "SELECT id, number, title, state, created_at, updated_at, comments, score, body, user_id FROM l.issues"),
        ("SELECT id, login FROM User", "SELECT id, login FROM l.users"),
        ("SELECT id, name FROM Label", "SELECT id, name FROM l.labels"),
        ("SELECT i.id, b.id FROM Issue_labels j JOIN Issue i ON i._pk = j.source JOIN Label b ON b._pk = j.target",
         "SELECT issue_id, label_id FROM l.issue_labels"),
    ]
    for (ours, theirs) in pairs {
        for sql in ["SELECT count(*) FROM (\(ours) EXCEPT \(theirs))", "SELECT count(*) FROM (\(theirs) EXCEPT \(ours))",
                    "SELECT (SELECT count(*) FROM (\(ours))) - (SELECT count(*) FROM (\(theirs)))"] {
            var statement: OpaquePointer?
            check(sqlite3_prepare_v2(db, sql, -1, &statement, nil), db, sql)
            defer { sqlite3_finalize(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW, sqlite3_column_int64(statement, 0) == 0 else { return false }
        }
    }
    return true
}

// `--write-dump PATH [--count N]`: only writes the reference dump of N records (Scripts/import-instructions.sh).
if let path = option("--write-dump") {
    try generate(path, count: Int(option("--count") ?? "100000") ?? 100_000, duplicates: 0.1)
    exit(0)
}

let counts = (option("--counts") ?? "100000,1000000").split(separator: ",").compactMap { Int($0) }
let rounds = max(1, Int(option("--rounds") ?? "1") ?? 1)
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("codablestore-import-bench")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
/// Writes the dump if it is not there yet.
func generate(_ dump: String, count: Int, duplicates: Double) throws {
    guard !FileManager.default.fileExists(atPath: dump) else { return }
    _ = FileManager.default.createFile(atPath: dump, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dump))
    var generator = IssueDumpGenerator(seed: 42, duplicateFraction: duplicates)
    try generator.writeArray(count: count) { try handle.write(contentsOf: $0) }
    try handle.close()
}

/// Writes the reference dump without the records of a tenth of its identities (ids ending in 7), if it is not there
/// yet: what a sync import of it deletes.
func generateWithoutATenth(_ dump: String, count: Int) throws {
    guard !FileManager.default.fileExists(atPath: dump) else { return }
    _ = FileManager.default.createFile(atPath: dump, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dump))
    var generator = IssueDumpGenerator(seed: 42, duplicateFraction: 0.1)
    var buffer = Array("[\n".utf8)
    var first = true
    for index in 0..<count {
        let record = generator.record(index: index, count: count)
        // Every record starts with {"id":N,
        let id = record.dropFirst(6).prefix { $0 != "," }
        if id.last == "7" { continue }
        if !first { buffer += ",\n".utf8 }
        first = false
        buffer += record.utf8
        if buffer.count >= 65_536 {
            try handle.write(contentsOf: buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
    buffer += "\n]\n".utf8
    try handle.write(contentsOf: buffer)
    try handle.close()
}

/// One value of a store, by SQL.
func scalar(_ path: String, _ sql: String) -> Int64 {
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    check(sqlite3_prepare_v2(db, sql, -1, &statement, nil), db, sql)
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW else { fatalError("no row: \(sql)") }
    return sqlite3_column_int64(statement, 0)
}

func removeStore(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

func copyStore(_ from: String, _ to: String) throws {
    removeStore(to)
    try FileManager.default.copyItem(atPath: from, toPath: to)
}

/// Runs two contenders one after the other, in an order that alternates with the round, so that a machine
/// drifting during the run favours neither.
func runPair(
    round: Int, _ a: (contender: String, dump: String, store: String), _ b: (contender: String, dump: String, store: String)
) throws -> (a: (seconds: Double, rss: Double), b: (seconds: Double, rss: Double)) {
    if round % 2 == 0 {
        let first = try run(a.contender, dump: a.dump, store: a.store)
        return (first, try run(b.contender, dump: b.dump, store: b.store))
    }
    let second = try run(b.contender, dump: b.dump, store: b.store)
    return (try run(a.contender, dump: a.dump, store: a.store), second)
}

/// Writes the dump as JSON Lines, what the psql baseline copies (the same records as `generate`'s).
func generateLines(_ path: String, count: Int) throws {
    guard !FileManager.default.fileExists(atPath: path) else { return }
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    var generator = IssueDumpGenerator(seed: 42, duplicateFraction: 0.1)
    var buffer: [UInt8] = []
    for index in 0..<count {
        buffer += generator.record(index: index, count: count).utf8
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= 65_536 {
            try handle.write(contentsOf: buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
    try handle.write(contentsOf: buffer)
    try handle.close()
}

/// Runs SQL with psql; its output.
@discardableResult
func psql(_ url: String, _ arguments: [String]) throws -> String {
    try runProcess("/usr/bin/env", ["psql", url, "-q", "-At", "-v", "ON_ERROR_STOP=1"] + arguments)
}

/// The process id of the PostgreSQL server's postmaster, the parent of its checkpointer; nil where /proc does not
/// show it (a server on another machine).
func postmasterPID(_ url: String) throws -> Int32? {
    let checkpointer = try psql(url, ["-c", "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"])
    guard let pid = Int32(checkpointer.trimmingCharacters(in: .whitespacesAndNewlines)), let stat = procStat(pid) else { return nil }
    return Int32(stat[1])
}

/// The fields of /proc/PID/stat after the command's name: [state, ppid, …]; utime is [11], stime [12], cutime [13],
/// cstime [14], in clock ticks.
func procStat(_ pid: Int32) -> [Substring]? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return nil }
    return text[text.index(after: close)...].split(separator: " ")
}

/// The CPU time (user and system, in seconds) a PostgreSQL server on this machine has used so far: its postmaster's
/// own, that of its children that ended (a connection's backend ends with it), and that of those running, from /proc.
func serverCPUSeconds(postmaster: Int32) -> Double {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    func cpu(_ stat: [Substring]) -> Double { (11...14).reduce(0) { $0 + (Double(stat[$1]) ?? 0) } / ticks }
    var total = procStat(postmaster).map(cpu) ?? 0
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int32(entry), let stat = procStat(pid), stat.count > 14, Int32(stat[1]) == postmaster else { continue }
        total += cpu(stat)
    }
    return total
}

/// The CPU time (user and system) of this process's children that ended, in seconds: a contender's child and the
/// programs it ran (psql under bash for the psql baseline).
func childrenCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// A contender against PostgreSQL: wall time, peak RSS, and the CPU time of the client and of the server (nil
/// when the server's is not known).
struct PostgresRun {
    var seconds: Double, rss: Double, client: Double, server: Double?
}

/// A round of the `--postgres` mode: the three imports, and the re-imports of ours and of the C limit.
struct PostgresRound {
    var ours, psql, limit, oursAgain, limitAgain: PostgresRun
}

func runPostgres(_ contender: String, dump: String, store: String, postmaster: Int32?) throws -> PostgresRun {
    let server = postmaster.map { serverCPUSeconds(postmaster: $0) }
    let client = childrenCPUSeconds()
    let result = try run(contender, dump: dump, store: store)
    let clientCPU = childrenCPUSeconds() - client
    // A connection's backend ends after its client, and its CPU time is counted once the postmaster has reaped it.
    usleep(200_000)
    let serverCPU = postmaster.map { serverCPUSeconds(postmaster: $0) - server! }
    return PostgresRun(seconds: result.seconds, rss: result.rss, client: clientCPU, server: serverCPU)
}

/// Runs contenders one after the other, starting with the round's own (the order rotates with the rounds); their
/// results in the order given.
func runRotating(round: Int, postmaster: Int32?, _ contenders: [(contender: String, dump: String, store: String)]) throws -> [PostgresRun] {
    var results = [PostgresRun?](repeating: nil, count: contenders.count)
    for step in 0..<contenders.count {
        let index = (round + step) % contenders.count
        let c = contenders[index]
        results[index] = try runPostgres(c.contender, dump: c.dump, store: c.store, postmaster: postmaster)
    }
    return results.map { $0! }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

// `--postgres URL`: the import into PostgreSQL against the psql baseline (COPY into staging, one upsert per table) and
// the C limit (Sources/CLimitImporter/postgres_limit_importer.c), in rounds of rotating order with fresh schemas,
// rows checked equal; then the re-import of the same dump (ours and the limit's); and the same import into SQLite,
// for comparison. Server CPU is measured from /proc when the server runs on this machine.
if let server = option("--postgres") {
    let compare = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Scripts/postgres-compare.sql").path
    let postmaster = try postmasterPID(server)
    /// Checks with postgres-compare.sql that the schema `base` (minimal layout) holds the rows of bench_ours.
    func checkRows(_ base: String, _ what: String) throws {
        let differences = try psql(server, ["-v", "ours=bench_ours", "-v", "base=\(base)", "-F", "=", "-f", compare])
        guard differences.split(separator: "\n").allSatisfy({ $0.hasSuffix("=0") }) else {
            fatalError("the PostgreSQL stores differ (\(what)): \(differences)")
        }
    }
    func cpu(_ run: PostgresRun) -> String {
        String(format: "client %.2f s, server %@", run.client, run.server.map { String(format: "%.2f s", $0) } ?? "?")
    }
    for count in counts {
        let dump = directory.appendingPathComponent("issues-\(count).json").path
        let lines = directory.appendingPathComponent("issues-\(count).jsonl").path
        try generate(dump, count: count, duplicates: 0.1)
        try generateLines(lines, count: count)
        print("\(count) records into PostgreSQL")
        var best = (ours: Double.infinity, baseline: Double.infinity, rss: 0.0)
        var ratios: [Double] = []
        var runs: [PostgresRound] = []
        for round in 0..<rounds {
            try psql(server, ["-c", "SET client_min_messages = warning; DROP SCHEMA IF EXISTS bench_ours CASCADE; DROP SCHEMA IF EXISTS bench_base CASCADE; DROP SCHEMA IF EXISTS bench_limit CASCADE"])
            let first = try runRotating(round: round, postmaster: postmaster, [
                ("import-postgres", dump, server + "?schema=bench_ours"), ("postgres-baseline", lines, server + "#bench_base"),
                ("postgres-limit", dump, server + "#bench_limit"),
            ])
            let (ours, baseline, limit) = (first[0], first[1], first[2])
            try checkRows("bench_base", "psql baseline")
            try checkRows("bench_limit", "C limit")
            best.ours = min(best.ours, ours.seconds)
            best.baseline = min(best.baseline, baseline.seconds)
            best.rss = max(best.rss, ours.rss)
            ratios.append(ours.seconds / baseline.seconds)
            print(String(format: "  round %d: ours %.2f s, psql baseline %.2f s, ratio %.2f (rows equal)", round + 1,
                         ours.seconds, baseline.seconds, ours.seconds / baseline.seconds))
            // The re-import: the same dump again into the schemas just filled, ours and the limit's, alternating.
            let again = try runRotating(round: round, postmaster: postmaster, [
                ("import-postgres", dump, server + "?schema=bench_ours"), ("postgres-limit", dump, server + "#bench_limit"),
            ])
            try checkRows("bench_limit", "C limit, re-imported")
            try checkRows("bench_base", "ours re-imported, psql baseline")
            runs.append(PostgresRound(ours: ours, psql: baseline, limit: limit, oursAgain: again[0], limitAgain: again[1]))
            print(String(format: "    ours %.2f s, psql %.2f s, limit %.2f s: ours/limit %.2f, ours/psql %.2f (rows equal)",
                         ours.seconds, baseline.seconds, limit.seconds, ours.seconds / limit.seconds, ours.seconds / baseline.seconds))
            print("    CPU: ours \(cpu(ours)); psql \(cpu(baseline)); limit \(cpu(limit))")
            print(String(format: "    re-import: ours %.2f s, limit %.2f s: ours/limit %.2f (rows equal); CPU: ours %@; limit %@",
                         again[0].seconds, again[1].seconds, again[0].seconds / again[1].seconds, cpu(again[0]), cpu(again[1])))
        }
        let sqliteStore = directory.appendingPathComponent("store-\(count)-postgres-comparison.sqlite").path
        removeStore(sqliteStore)
        let sqlite = try run("import", dump: dump, store: sqliteStore)
        print(String(format: "  best: ours %.2f s (peak RSS %.1f MiB), psql baseline %.2f s: %.2fx; rounds %@",
                     best.ours, best.rss, best.baseline, best.ours / best.baseline,
                     ratios.map { String(format: "%.2f", $0) }.joined(separator: ", ")))
        let limitBest = runs.map(\.limit.seconds).min()!
        let psqlBest = runs.map(\.psql.seconds).min()!
        let oursAgainBest = runs.map(\.oursAgain.seconds).min()!
        let limitAgainBest = runs.map(\.limitAgain.seconds).min()!
        let perRound = { (ratios: [Double]) in ratios.map { String(format: "%.2f", $0) }.joined(separator: ", ") }
        print(String(format: "  best: ours %.2f s, psql %.2f s, limit %.2f s (peak RSS %.1f MiB): ours/limit %.2fx, ours/psql %.2fx; ours/limit per round %@",
                     best.ours, psqlBest, limitBest, runs.map(\.limit.rss).max()!, best.ours / limitBest, best.ours / psqlBest,
                     perRound(runs.map { $0.ours.seconds / $0.limit.seconds })))
        print(String(format: "  re-import best: ours %.2f s (peak RSS %.1f MiB), limit %.2f s: ours/limit %.2fx; per round %@",
                     oursAgainBest, runs.map(\.oursAgain.rss).max()!, limitAgainBest, oursAgainBest / limitAgainBest,
                     perRound(runs.map { $0.oursAgain.seconds / $0.limitAgain.seconds })))
        if runs.allSatisfy({ $0.ours.server != nil }) {
            // Client / server CPU seconds of one contender, medians over the rounds.
            func cpuMedians(_ name: String, _ contender: [PostgresRun]) -> String {
                String(format: "%@ %.2f / %.2f s", name, median(contender.map(\.client)), median(contender.map { $0.server ?? 0 }))
            }
            let first = [cpuMedians("ours", runs.map(\.ours)), cpuMedians("psql", runs.map(\.psql)), cpuMedians("limit", runs.map(\.limit))]
            let again = [cpuMedians("ours", runs.map(\.oursAgain)), cpuMedians("limit", runs.map(\.limitAgain))]
            print("  CPU, medians (client / server): import: " + first.joined(separator: ", ")
                + "; re-import: " + again.joined(separator: ", "))
        }
        print(String(format: "  the same import into SQLite: %.2f s (peak RSS %.1f MiB)", sqlite.seconds, sqlite.rss))
        removeStore(sqliteStore)
    }
    exit(0)
}

for count in counts {
    // The reference dump repeats 10% of its ids with other values; the unique one does not, so re-importing it
    // is re-importing unchanged data (in the reference dump, every repeated id changes its row, and then changes
    // it back, on a re-import as on the first import).
    let dump = directory.appendingPathComponent("issues-\(count).json").path
    let uniqueDump = directory.appendingPathComponent("issues-\(count)-unique.json").path
    try generate(dump, count: count, duplicates: 0.1)
    try generate(uniqueDump, count: count, duplicates: 0)
    let partialDump = directory.appendingPathComponent("issues-\(count)-without-a-tenth.json").path
    try generateWithoutATenth(partialDump, count: count)
    let megabytes = Double((try FileManager.default.attributesOfItem(atPath: dump)[.size] as? Int) ?? 0) / 1_048_576
    let stores = (0..<4).map { directory.appendingPathComponent("store-\(count)-\($0).sqlite").path }
    print("\(count) records, \(String(format: "%.1f", megabytes)) MiB")
    // Rounds alternate which contender goes first; each contender's best run is reported, and the ratio of
    // every round (same conditions for both) is listed, since these machines drift by tens of percent.
    var base = (seconds: Double.infinity, rss: 0.0)
    var first = base
    var again = base
    var uniqueFirst = base
    var uniqueAgain = base
    var limit = base
    var limitAgain = base
    var limitIndexed = base
    var exclusive = base
    var limitRollback = base
    var plainPartial = base
    var syncPartial = base
    var plainFirst = base
    var plainAgain = base
    var againRatios: [Double] = []
    var syncRatios: [Double] = []
    var ratios: [Double] = []
    var limitRatios: [Double] = []
    var uniqueRatios: [Double] = []
    for round in 0..<rounds {
        for store in stores { removeStore(store) }
        let (roundBase, roundFirst) = try runPair(round: round, ("baseline", dump, stores[0]), ("import", dump, stores[1]))
        precondition(digest(stores[0]) == digest(stores[1]), "stores differ:\n\(digest(stores[0]))\n\(digest(stores[1]))")
        let roundLimit = try run("limit", dump: dump, store: stores[3])
        precondition(sameRows(store: stores[1], limit: stores[3]), "the limit baseline's rows differ from the store's")
        let roundLimitAgain = try run("limit", dump: dump, store: stores[3])
        limitRatios.append(roundFirst.seconds / roundLimit.seconds)
        if roundLimit.seconds < limit.seconds { limit = roundLimit }
        if roundLimitAgain.seconds < limitAgain.seconds { limitAgain = roundLimitAgain }
        removeStore(stores[3])
        let roundLimitIndexed = try run("limit-indexed", dump: dump, store: stores[3])
        precondition(sameRows(store: stores[1], limit: stores[3]), "the indexed limit baseline's rows differ from the store's")
        if roundLimitIndexed.seconds < limitIndexed.seconds { limitIndexed = roundLimitIndexed }
        // Both holding the store alone: the import with ImportOptions.exclusiveAccess, the limit with a rollback journal.
        let exclusiveStore = directory.appendingPathComponent("store-\(count)-exclusive.sqlite").path
        removeStore(exclusiveStore)
        let roundExclusive = try run("import-exclusive", dump: dump, store: exclusiveStore)
        precondition(digest(exclusiveStore) == digest(stores[1]), "the exclusive import's store differs")
        removeStore(exclusiveStore)
        removeStore(stores[3])
        let roundLimitRollback = try run("limit-rollback", dump: dump, store: stores[3])
        if roundExclusive.seconds < exclusive.seconds { exclusive = roundExclusive }
        if roundLimitRollback.seconds < limitRollback.seconds { limitRollback = roundLimitRollback }
        let roundAgain = try run("import", dump: dump, store: stores[1])
        // The import decoding every record (skipsUnchangedRecords off): the default import records digests, and its
        // re-import decodes only the records that change their row.
        let plainStore = directory.appendingPathComponent("store-\(count)-plain.sqlite").path
        removeStore(plainStore)
        let roundPlainFirst = try run("import-plain", dump: dump, store: plainStore)
        let roundPlainAgain = try run("import-plain", dump: dump, store: plainStore)
        precondition(digest(plainStore) == digest(stores[1]), "the store of the import decoding every record differs")
        removeStore(plainStore)
        againRatios.append(roundAgain.seconds / roundLimitAgain.seconds)
        if roundPlainFirst.seconds < plainFirst.seconds { plainFirst = roundPlainFirst }
        if roundPlainAgain.seconds < plainAgain.seconds { plainAgain = roundPlainAgain }
        let roundUniqueFirst = try run("import", dump: uniqueDump, store: stores[2])
        let roundUniqueAgain = try run("import", dump: uniqueDump, store: stores[2])
        // Scoped sync: the dump without a tenth of its identities, into copies of the store that holds the whole
        // dump, re-imported plainly and as a sync (which deletes that tenth).
        let syncStores = [directory.appendingPathComponent("store-\(count)-plain.sqlite").path,
                          directory.appendingPathComponent("store-\(count)-sync.sqlite").path]
        for store in syncStores { try copyStore(stores[1], store) }
        let (roundPlain, roundSync) = try runPair(
            round: round, ("import", partialDump, syncStores[0]), ("import-sync", partialDump, syncStores[1]))
        let tenth = scalar(syncStores[0], "SELECT count(*) FROM Issue WHERE id % 10 = 7")
        precondition(tenth > 0 && scalar(syncStores[1], "SELECT count(*) FROM Issue WHERE id % 10 = 7") == 0, "the sync kept what it should delete")
        precondition(scalar(syncStores[1], "SELECT count(*) FROM Issue") == scalar(syncStores[0], "SELECT count(*) FROM Issue") - tenth,
                     "the sync deleted what it should keep")
        precondition(scalar(syncStores[1], "SELECT count(*) FROM Issue_labels WHERE source NOT IN (SELECT _pk FROM Issue)") == 0)
        syncRatios.append(roundSync.seconds / roundPlain.seconds)
        if roundPlain.seconds < plainPartial.seconds { plainPartial = roundPlain }
        if roundSync.seconds < syncPartial.seconds { syncPartial = roundSync }
        for store in syncStores { removeStore(store) }
        ratios.append(roundBase.seconds / roundFirst.seconds)
        uniqueRatios.append(roundUniqueAgain.seconds / roundUniqueFirst.seconds)
        if rounds > 1 {
            print(String(format: "  round %d: baseline %.2f s, import %.2f s, re-import %.2f s: %.2fx; unique dump: import %.2f s, re-import %.2f s: %.2fx", round + 1,
                         roundBase.seconds, roundFirst.seconds, roundAgain.seconds, ratios[round],
                         roundUniqueFirst.seconds, roundUniqueAgain.seconds, uniqueRatios[round]))
        }
        if roundBase.seconds < base.seconds { base = roundBase }
        if roundFirst.seconds < first.seconds { first = roundFirst }
        if roundAgain.seconds < again.seconds { again = roundAgain }
        if roundUniqueFirst.seconds < uniqueFirst.seconds { uniqueFirst = roundUniqueFirst }
        if roundUniqueAgain.seconds < uniqueAgain.seconds { uniqueAgain = roundUniqueAgain }
    }
    for (name, result) in [
        ("JSONDecoder + raw sqlite3", base), ("importJSON (new store)", first), ("importJSON (re-import)", again),
        ("unique dump: import", uniqueFirst), ("unique dump: re-import", uniqueAgain),
        ("limit: C on yajl + sqlite3", limit), ("limit: re-import", limitAgain), ("limit + user index", limitIndexed),
        ("importJSON (exclusive)", exclusive), ("limit: rollback journal", limitRollback),
        ("a tenth gone: re-import", plainPartial), ("a tenth gone: sync import", syncPartial),
        ("decoding every record: import", plainFirst), ("decoding every record: re-import", plainAgain),
    ] {
        // Padded here: Foundation on Linux does not pad a `%-28@` argument.
        let padded = name.padding(toLength: max(28, name.count), withPad: " ", startingAt: 0)
        print("  " + padded + String(format: " %7.2f s  %9.0f records/s  %6.1f MB/s  peak RSS %7.1f MiB", result.seconds,
                     Double(count) / result.seconds, megabytes / result.seconds, result.rss))
    }
    print(String(format: "  speed-up over the baseline: %.2fx (target >= 2.5x at 1M); re-import/import: %.2fx", base.seconds / first.seconds, again.seconds / first.seconds))
    print(String(format: "  re-importing unchanged data (the unique dump): %.2fx of its import (target < 1x)", uniqueAgain.seconds / uniqueFirst.seconds))
    print(String(format: "  against the limit baseline (same rows): import %.2fx its time, re-import %.2fx (targets <= 1.3x, <= 1.2x)",
                 first.seconds / limit.seconds, again.seconds / limitAgain.seconds))
    print(String(format: "  re-import per round against the limit's: %@; decoding every record (no skipping): import %.2fx, re-import %.2fx the limit's",
                 rounds > 1 ? String(format: "%.2fx to %.2fx", againRatios.min()!, againRatios.max()!) as NSString : "one round" as NSString,
                 plainFirst.seconds / limit.seconds, plainAgain.seconds / limitAgain.seconds))
    print(String(format: "  against the limit baseline with the index User.issues needs: import %.2fx its time", first.seconds / limitIndexed.seconds))
    print(String(format: "  holding the store alone (exclusiveAccess, against the limit with a rollback journal): %.2fx its time",
                 exclusive.seconds / limitRollback.seconds))
    print(String(format: "  sync import of the dump without a tenth of its identities: %.2fx its plain re-import (target <= 1.2x)%@",
                 syncPartial.seconds / plainPartial.seconds,
                 rounds > 1 ? String(format: "; per round %.2fx to %.2fx", syncRatios.min()!, syncRatios.max()!) as NSString : "" as NSString))
    if rounds > 1 {
        print(String(format: "  speed-up per round: %.2fx to %.2fx; unique dump re-import/import per round: %.2fx to %.2fx; import/limit per round: %.2fx to %.2fx",
                     ratios.min()!, ratios.max()!, uniqueRatios.min()!, uniqueRatios.max()!, limitRatios.min()!, limitRatios.max()!))
    }
}

/// IMPORT_BENCH_CPU=1: each thread's CPU time (the import is bound by the cores, or by its longest thread), and what
/// the decoding thread waited for.
func printThreads(_ report: ImportReport) {
    guard ProcessInfo.processInfo.environment["IMPORT_BENCH_CPU"] != nil, let cpu = report.cpu else { return }
    var text = String(
        format: "cpu: reading %.2f s, decoding %.2f s, writing %.2f s (wall %.2f s)\n",
        cpu.reading, cpu.decoding, cpu.writing, report.duration)
    if let waits = report.waits {
        text += String(
            format: "decoding waited: input %.2f s, lookups %.2f s, writing %.2f s; index builds %.2f s\n",
            waits.input, waits.lookups, waits.writing, waits.indexBuilds)
    }
    FileHandle.standardError.write(Data(text.utf8))
}
