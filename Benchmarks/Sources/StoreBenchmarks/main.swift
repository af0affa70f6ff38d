import CSQLiteBenchmark
import CodableStore
import Foundation

// Inserts N entities of 5 attributes through a Context in one write, and the same rows with a raw sqlite3
// prepared-statement loop in one transaction, into identical schemas with identical pragmas. Reports both
// rates and the ratio (context time / raw time), best of R rounds, alternating the order of the two.
//
//   swift run -c release StoreBenchmarks [--count N] [--rounds R]

@Entity final class BenchmarkRow {
    var id: Int
    var name: String
    var score: Double
    var count: Int
    var note: String?
    static let identity = Identity(\BenchmarkRow.id)
    init(id: Int, name: String, score: Double, count: Int, note: String?) {
        self.id = id
        self.name = name
        self.score = score
        self.count = count
        self.note = note
    }
}

/// The same shape with an index on `count`, for the query benchmark.
@Entity final class QueryRow {
    var id: Int
    var name: String
    var score: Double
    var count: Int
    var note: String?
    static let identity = Identity(\QueryRow.id)
    static let indexes: [EntityIndex<QueryRow>] = [EntityIndex(\.count)]
    init(id: Int, name: String, score: Double, count: Int, note: String?) {
        self.id = id
        self.name = name
        self.score = score
        self.count = count
        self.note = note
    }
}

/// The row values, computed the same way for both contenders.
@inline(__always) func values(_ i: Int) -> (name: String, score: Double, count: Int, note: String?) {
    ("name-\(i)", Double(i) * 0.5, i % 1_000, i % 3 == 0 ? nil : "note \(i)")
}

func option(_ name: String, default value: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let parsed = Int(arguments[index + 1])
    else { return value }
    return parsed
}

func temporaryPath(_ name: String) -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("codablestore-bench-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name).path
}

func peakRSSMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    let kib = Double(line.split(separator: " ").dropFirst().first.map(String.init) ?? "0") ?? 0
    return kib / 1024
}

func check(_ code: Int32, _ db: OpaquePointer?, _ what: String) {
    guard code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW else {
        fatalError("\(what): \(String(cString: sqlite3_errmsg(db)))")
    }
}

/// The baseline: the same table, indexes, pragmas and transaction, one prepared INSERT reused per row.
func rawInsert(count: Int, path: String) -> Duration {
    var db: OpaquePointer?
    check(sqlite3_open(path, &db), db, "open")
    defer { sqlite3_close(db) }
    let setup = """
        PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;
        CREATE TABLE "BenchmarkRow" ("_pk" INTEGER PRIMARY KEY, "id" INTEGER NOT NULL, "name" TEXT NOT NULL,
          "score" REAL NOT NULL, "count" INTEGER NOT NULL, "note" TEXT);
        CREATE UNIQUE INDEX "BenchmarkRow_identity" ON "BenchmarkRow" ("id");
        """
    check(sqlite3_exec(db, setup, nil, nil, nil), db, "setup")
    let transient = _benchmark_sqlite_transient()
    let clock = ContinuousClock()
    let start = clock.now
    check(sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil), db, "begin")
    var statement: OpaquePointer?
    check(
        sqlite3_prepare_v2(
            db, "INSERT INTO \"BenchmarkRow\" (\"_pk\", \"id\", \"name\", \"score\", \"count\", \"note\") VALUES (?, ?, ?, ?, ?, ?)",
            -1, &statement, nil), db, "prepare")
    for i in 0..<count {
        let row = values(i)
        sqlite3_bind_int64(statement, 1, Int64(i + 1))
        sqlite3_bind_int64(statement, 2, Int64(i))
        sqlite3_bind_text(statement, 3, row.name, -1, transient)
        sqlite3_bind_double(statement, 4, row.score)
        sqlite3_bind_int64(statement, 5, Int64(row.count))
        if let note = row.note { sqlite3_bind_text(statement, 6, note, -1, transient) } else { sqlite3_bind_null(statement, 6) }
        check(sqlite3_step(statement), db, "step")
        sqlite3_reset(statement)
    }
    sqlite3_finalize(statement)
    check(sqlite3_exec(db, "COMMIT", nil, nil, nil), db, "commit")
    return clock.now - start
}

/// The contender: tracked entities inserted through a Context, saved in one write.
func contextInsert(count: Int, path: String) throws -> Duration {
    let store = try Store(path: path, entities: [BenchmarkRow.self])
    let clock = ContinuousClock()
    let start = clock.now
    try store.write { context in
        for i in 0..<count {
            let row = values(i)
            try context.insert(BenchmarkRow(id: i, name: row.name, score: row.score, count: row.count, note: row.note))
        }
    }
    return clock.now - start
}

/// Both files must hold the same rows: the benchmark measures real, equal work.
func verify(_ rawPath: String, _ storePath: String, count: Int) {
    func digest(_ path: String) -> String {
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            db, "SELECT count(*), sum(id), sum(length(name)), sum(score), sum(count), count(note) FROM BenchmarkRow", -1,
            &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return "" }
        return (0..<6).map { String(cString: sqlite3_column_text(statement, $0)) }.joined(separator: "|")
    }
    let raw = digest(rawPath)
    let store = digest(storePath)
    precondition(raw == store, "rows differ: raw \(raw) vs store \(store)")
    precondition(raw.hasPrefix("\(count)|"), "expected \(count) rows, got \(raw)")
}

let count = option("--count", default: 1_000_000)
let rounds = option("--rounds", default: 3)
print("Insert \(count) entities of 5 attributes in one write, best of \(rounds) rounds")
var lastPaths = ("", "")
var bestRaw = Duration.seconds(1_000_000)
var bestContext = Duration.seconds(1_000_000)
for round in 0..<rounds {
    let rawPath = temporaryPath("raw.sqlite")
    let storePath = temporaryPath("store.sqlite")
    let raw: Duration
    let context: Duration
    if round % 2 == 0 {
        raw = rawInsert(count: count, path: rawPath)
        context = try contextInsert(count: count, path: storePath)
    } else {
        context = try contextInsert(count: count, path: storePath)
        raw = rawInsert(count: count, path: rawPath)
    }
    verify(rawPath, storePath, count: count)
    bestRaw = min(bestRaw, raw)
    bestContext = min(bestContext, context)
    print("  round \(round + 1): raw \(raw.formatted(.units(allowed: [.milliseconds]))), context \(context.formatted(.units(allowed: [.milliseconds])))")
    if round == rounds - 1 {
        lastPaths = (rawPath, storePath)
    } else {
        try? FileManager.default.removeItem(atPath: (rawPath as NSString).deletingLastPathComponent)
        try? FileManager.default.removeItem(atPath: (storePath as NSString).deletingLastPathComponent)
    }
}
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
let rawRate = Double(count) / seconds(bestRaw)
let contextRate = Double(count) / seconds(bestContext)
print(String(format: "raw sqlite3 loop: %.3f s, %.0f rows/s", seconds(bestRaw), rawRate))
print(String(format: "CodableStore context: %.3f s, %.0f rows/s", seconds(bestContext), contextRate))
print(String(format: "ratio context/raw: %.2fx (target <= 2.00x)", seconds(bestContext) / seconds(bestRaw)))
print(String(format: "peak RSS: %.1f MiB", peakRSSMiB()))

// The query benchmark: a filtered, sorted fetch of 1% of the rows (count < 10, indexed), as objects through a
// read context, against the same query stepped with raw sqlite3 reading every column into Swift values.
func rawQuery(_ path: String) -> Int {
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    check(sqlite3_prepare_v2(db, """
        SELECT "_pk", "id", "name", "score", "count", "note" FROM "BenchmarkRow" WHERE "count" < ? ORDER BY "score" DESC, "_pk"
        """, -1, &statement, nil), db, "prepare")
    defer { sqlite3_finalize(statement) }
    sqlite3_bind_int64(statement, 1, 10)
    var rows = 0
    var checksum = 0.0
    while sqlite3_step(statement) == SQLITE_ROW {
        let name = String(cString: sqlite3_column_text(statement, 2))
        let note = sqlite3_column_type(statement, 5) == SQLITE_NULL ? nil : String(cString: sqlite3_column_text(statement, 5))
        checksum += sqlite3_column_double(statement, 3) + Double(sqlite3_column_int64(statement, 1) + sqlite3_column_int64(statement, 4))
        rows += name.isEmpty || note == "x" ? 0 : 1
    }
    return rows
}

if count >= 100_000 {
    // The same rows again, in an entity that declares an index on `count`; the raw file gets the same index.
    var db: OpaquePointer?
    sqlite3_open(lastPaths.0, &db)
    check(sqlite3_exec(db, "CREATE INDEX \"BenchmarkRow_index_count\" ON \"BenchmarkRow\" (\"count\")", nil, nil, nil), db, "index")
    sqlite3_close(db)
    let queryPath = (lastPaths.1 as NSString).deletingLastPathComponent + "/query.sqlite"
    let store = try Store(path: queryPath, entities: [QueryRow.self])
    try store.write { context in
        for i in 0..<count {
            let row = values(i)
            try context.insert(QueryRow(id: i, name: row.name, score: row.score, count: row.count, note: row.note))
        }
    }
    var bestRawQuery = Duration.seconds(1_000_000)
    var bestContextQuery = Duration.seconds(1_000_000)
    var fetched = (0, 0)
    let clock = ContinuousClock()
    for _ in 0..<10 {
        var start = clock.now
        fetched.0 = rawQuery(lastPaths.0)
        bestRawQuery = min(bestRawQuery, clock.now - start)
        start = clock.now
        fetched.1 = try store.read { context in
            try context.fetch(QueryRow.self, where: \.count < 10, orderBy: [.descending(\.score)]).count
        }
        bestContextQuery = min(bestContextQuery, clock.now - start)
    }
    precondition(fetched.0 == fetched.1 && fetched.0 == count / 100, "fetched \(fetched)")
    print("Query: \(fetched.0) of \(count) rows (indexed filter, sorted), best of 10")
    print(String(format: "raw sqlite3: %.1f ms, context fetch: %.1f ms, ratio %.2fx (target <= 1.50x)",
                 seconds(bestRawQuery) * 1000, seconds(bestContextQuery) * 1000, seconds(bestContextQuery) / seconds(bestRawQuery)))
}
for path in [lastPaths.0, lastPaths.1] where !path.isEmpty {
    try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
}
