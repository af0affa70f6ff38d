import CodableStore
import Foundation

// Decodes N records of the reference workload (issue + nested user + labels, ~520 bytes each, 10% repeated
// ids) two ways, each in its own child process so that peak memory is measured separately:
//   - baseline: Foundation JSONDecoder into plain structs;
//   - contender: StoreDecoder into a write context, with upsert (identity resolution included), then save.
// Reports the best of R runs of each, the ratio, and peak RSS.
//
//   swift run -c release CodecBenchmarks [--count N] [--rounds R]

@Entity final class Issue {
    var id: Int
    var number: Int
    var title: String
    var state: String
    var createdAt: Date
    var updatedAt: Date
    var comments: Int
    var score: Double
    var body: String?
    var user: User?
    var labels: Set<Label> = []
    static let identity = Identity(\Issue.id)
    enum CodingKeys: String, EntityCodingKey {
        case id, number, title, state, comments, score, body, user, labels
        case createdAt = "created_at", updatedAt = "updated_at"
    }
    init(id: Int, number: Int, title: String, state: String, createdAt: Date, updatedAt: Date, comments: Int, score: Double) {
        self.id = id
        self.number = number
        self.title = title
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.comments = comments
        self.score = score
    }
}

@Entity final class User {
    var id: Int
    var login: String
    var issues: Set<Issue> = []
    static let identity = Identity(\User.id)
    init(id: Int, login: String) {
        self.id = id
        self.login = login
    }
}

@Entity final class Label {
    var id: Int
    var name: String
    var issues: Set<Issue> = []
    static let identity = Identity(\Label.id)
    init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

struct PlainIssue: Decodable {
    let id: Int
    let number: Int
    let title: String
    let state: String
    let created_at: Date
    let updated_at: Date
    let comments: Int
    let score: Double
    let body: String?
    let user: PlainUser
    let labels: [PlainLabel]
}

struct PlainUser: Decodable {
    let id: Int
    let login: String
}

struct PlainLabel: Decodable {
    let id: Int
    let name: String
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func peakRSSMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    return (Double(line.split(separator: " ").dropFirst().first.map(String.init) ?? "0") ?? 0) / 1024
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

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
        let store = try Store.inMemory(entities: [Issue.self, User.self, Label.self])
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var elapsed = Duration.zero
        let distinct = try store.write { context in
            let start = clock.now
            let issues = try decoder.decode([Issue].self, from: data, into: context)
            if contender == "storedecoder+save" { try context.save() }
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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["--contender", contender, "--dump", dumpPath]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    process.waitUntilExit()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let fields = output.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
    guard process.terminationStatus == 0, fields.count == 3 else { fatalError("\(contender) failed: \(output)") }
    return (Double(fields[0])!, Double(fields[1])!, fields[2])
}

var results: [String: (seconds: Double, rss: Double, checksum: String)] = [:]
for round in 0..<rounds {
    for contender in round % 2 == 0 ? ["jsondecoder", "storedecoder", "storedecoder+save"] : ["storedecoder+save", "storedecoder", "jsondecoder"] {
        let result = try run(contender)
        if let best = results[contender], best.seconds <= result.seconds { continue }
        results[contender] = result
    }
}
let baseline = results["jsondecoder"]!
for contender in ["jsondecoder", "storedecoder", "storedecoder+save"] {
    let result = results[contender]!
    print(String(format: "%-22@ %7.3f s  %8.0f records/s  peak RSS %7.1f MiB  (records/objects: %@)", contender as NSString, result.seconds, Double(count) / result.seconds, result.rss, result.checksum as NSString))
}
let store = results["storedecoder"]!
precondition(Int(store.checksum)! < count, "duplicates must collapse into one object each")
print(String(format: "ratio StoreDecoder/JSONDecoder: %.2fx time (target <= 0.50x), %.2fx memory", store.seconds / baseline.seconds, store.rss / baseline.rss))
