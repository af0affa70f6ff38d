import BenchmarkSupport
import CodableStore
import Foundation
import IssuesModel

// Decodes N records of the reference workload (issue + nested user + labels, ~520 bytes each, 10% repeated
// ids) two ways, each in its own child process so that peak memory is measured separately:
//   - baseline: Foundation JSONDecoder into plain structs;
//   - contender: StoreDecoder into a write context of an empty store, with upsert (identity resolution
//     included), without and with the save; and again into a store that already holds the records (every
//     identity looked up in the store, every object compared: no target, shown for context).
//     StoreDecoder parses a large top-level array on a second thread while it decodes (its default);
//     "storedecoder-1thread" turns that off, to show what the second core buys and costs.
// Reports the best of R runs of each (wall time, and CPU time of all threads), the ratio, and peak RSS.
//
//   swift run -c release CodecBenchmarks [--count N] [--rounds R]

let count = Int(option("--count") ?? "") ?? 100_000
let rounds = Int(option("--rounds") ?? "") ?? 3
let dumpPath = option("--dump") ?? FileManager.default.temporaryDirectory.appendingPathComponent("codec-bench-\(count).json").path

/// Child mode: one contender, one run; prints "seconds cpuSeconds peakRSS checksum".
if let contender = option("--contender") {
    let data = try Data(contentsOf: URL(fileURLWithPath: dumpPath))
    let result: (value: Int, seconds: Double, cpu: Double)
    switch contender {
    case "jsondecoder":
        result = try measured {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode([PlainIssue].self, from: data).count
        }
    case "parse":
        // Only the parse into a tape (yajl + validation), the first phase of StoreDecoder's decode.
        result = try measured { try JSONTape.parse(data).nodeCount }
    case "storedecoder", "storedecoder-1thread", "storedecoder+save", "storedecoder-again":
        let store = try Store.inMemory(entities: referenceEntities)
        let decoder = referenceDecoder()
        if contender == "storedecoder-1thread" { decoder.parallelDecodingThreshold = nil }
        if contender == "storedecoder-again" {
            // The same records into a store that already holds them: every identity is looked up in the store
            // and every object compared (the first pass, into an empty store, needs no lookups).
            try store.write { context in _ = try decoder.decode([Issue].self, from: data, into: context) }
        }
        // Timed inside the write: the decode (and the save, for +save), not the commit.
        result = try store.write { context in
            try measured {
                let issues = try decoder.decode([Issue].self, from: data, into: context)
                if contender == "storedecoder+save" { try context.save() }
                return Set(issues.map(\.id)).count
            }
        }
    default:
        fatalError("unknown contender \(contender)")
    }
    print(result.seconds, result.cpu, peakRSSMiB(), result.value)
    exit(0)
}

// Parent mode: generate the dump once, then run each contender R times in child processes.
if !FileManager.default.fileExists(atPath: dumpPath) {
    _ = FileManager.default.createFile(atPath: dumpPath, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dumpPath))
    var generator = IssueDumpGenerator(seed: 42, duplicateFraction: 0.1)
    try generator.writeArray(count: count) { try handle.write(contentsOf: $0) }
    try handle.close()
}
let size = (try FileManager.default.attributesOfItem(atPath: dumpPath)[.size] as? Int) ?? 0
print("Decode \(count) reference records (\(String(format: "%.1f", Double(size) / 1_048_576)) MiB), best of \(rounds) runs, each in its own process")

func run(_ contender: String) throws -> (seconds: Double, cpu: Double, rss: Double, checksum: String) {
    let fields = try runChild(["--contender", contender, "--dump", dumpPath])
    guard fields.count == 4 else { fatalError("\(contender) printed \(fields)") }
    return (Double(fields[0])!, Double(fields[1])!, Double(fields[2])!, fields[3])
}

let contenders = ["jsondecoder", "storedecoder", "storedecoder-1thread", "storedecoder+save", "storedecoder-again", "parse"]
var results: [String: (seconds: Double, cpu: Double, rss: Double, checksum: String)] = [:]
for round in 0..<rounds {
    for contender in round % 2 == 0 ? contenders : contenders.reversed() {
        let result = try run(contender)
        if let best = results[contender], best.seconds <= result.seconds { continue }
        results[contender] = result
    }
}
let baseline = results["jsondecoder"]!
for contender in contenders {
    let result = results[contender]!
    let name = contender.padding(toLength: 21, withPad: " ", startingAt: 0)
    print(String(format: "%@ %7.3f s (CPU %6.3f s)  %8.0f records/s  peak RSS %7.1f MiB  (records/objects/nodes: %@)", name as NSString, result.seconds, result.cpu, Double(count) / result.seconds, result.rss, result.checksum as NSString))
}
let store = results["storedecoder"]!, oneThread = results["storedecoder-1thread"]!
precondition(Int(store.checksum)! < count, "duplicates must collapse into one object each")
precondition(store.checksum == oneThread.checksum, "the parallel and one-thread decodes must agree")
print(String(format: "ratio StoreDecoder/JSONDecoder: %.2fx time (target <= 0.50x), %.2fx CPU, %.2fx memory", store.seconds / baseline.seconds, store.cpu / baseline.cpu, store.rss / baseline.rss))
print(String(format: "one thread (parallelDecodingThreshold = nil): %.2fx time, %.2fx CPU", oneThread.seconds / baseline.seconds, oneThread.cpu / baseline.cpu))
