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
// Reports the best of R runs of each, the ratio, and peak RSS.
//
//   swift run -c release CodecBenchmarks [--count N] [--rounds R]

let count = Int(option("--count") ?? "") ?? 100_000
let rounds = Int(option("--rounds") ?? "") ?? 3
let dumpPath = option("--dump") ?? FileManager.default.temporaryDirectory.appendingPathComponent("codec-bench-\(count).json").path

/// Child mode: one contender, one run; prints "seconds peakRSS checksum".
if let contender = option("--contender") {
    let data = try Data(contentsOf: URL(fileURLWithPath: dumpPath))
    let clock = ContinuousClock()
    switch contender {
    case "jsondecoder":
        let start = clock.now
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let issues = try decoder.decode([PlainIssue].self, from: data)
        let elapsed = clock.now - start
        print(seconds(elapsed), peakRSSMiB(), issues.count)
    case "storedecoder", "storedecoder+save":
        let store = try Store.inMemory(entities: referenceEntities)
        let decoder = referenceDecoder()
        var elapsed = Duration.zero
        let distinct = try store.write { context in
            let start = clock.now
            let issues = try decoder.decode([Issue].self, from: data, into: context)
            if contender == "storedecoder+save" { try context.save() }
            elapsed = clock.now - start
            return Set(issues.map(\.id)).count
        }
        print(seconds(elapsed), peakRSSMiB(), distinct)
    case "storedecoder-again":
        // The same records into a store that already holds them: every identity is looked up in the store
        // and every object compared (the first pass, into an empty store, needs no lookups).
        let store = try Store.inMemory(entities: referenceEntities)
        let decoder = referenceDecoder()
        try store.write { context in _ = try decoder.decode([Issue].self, from: data, into: context) }
        var elapsed = Duration.zero
        let distinct = try store.write { context in
            let start = clock.now
            let issues = try decoder.decode([Issue].self, from: data, into: context)
            elapsed = clock.now - start
            return Set(issues.map(\.id)).count
        }
        print(seconds(elapsed), peakRSSMiB(), distinct)
    default:
        fatalError("unknown contender \(contender)")
    }
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

func run(_ contender: String) throws -> (seconds: Double, rss: Double, checksum: String) {
    let fields = try runChild(["--contender", contender, "--dump", dumpPath])
    guard fields.count == 3 else { fatalError("\(contender) printed \(fields)") }
    return (Double(fields[0])!, Double(fields[1])!, fields[2])
}

var results: [String: (seconds: Double, rss: Double, checksum: String)] = [:]
for round in 0..<rounds {
    let contenders = ["jsondecoder", "storedecoder", "storedecoder+save", "storedecoder-again"]
    for contender in round % 2 == 0 ? contenders : contenders.reversed() {
        let result = try run(contender)
        if let best = results[contender], best.seconds <= result.seconds { continue }
        results[contender] = result
    }
}
let baseline = results["jsondecoder"]!
for contender in ["jsondecoder", "storedecoder", "storedecoder+save", "storedecoder-again"] {
    let result = results[contender]!
    print(String(format: "%-22@ %7.3f s  %8.0f records/s  peak RSS %7.1f MiB  (records/objects: %@)", contender as NSString, result.seconds, Double(count) / result.seconds, result.rss, result.checksum as NSString))
}
let store = results["storedecoder"]!
precondition(Int(store.checksum)! < count, "duplicates must collapse into one object each")
print(String(format: "ratio StoreDecoder/JSONDecoder: %.2fx time (target <= 0.50x), %.2fx memory", store.seconds / baseline.seconds, store.rss / baseline.rss))
