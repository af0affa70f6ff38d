import CodableStore

/// Generates the reference workload: deterministic dumps of GitHub-issue-like records, for benchmarks, tests
/// and `codable-store generate issues`.
///
/// ```swift
/// var generator = IssueDumpGenerator(seed: 42, duplicateFraction: 0.1)
/// var output = [UInt8]()
/// generator.writeArray(count: 1_000) { output += $0 }
/// ```
///
/// Each record is about 520 bytes:
/// `{"id":1,"number":1,"title":"…","state":"open","created_at":"2015-06-05T09:52:26Z","updated_at":"…",
/// "comments":23,"score":21.86,"user":{"id":7,"login":"a"},"labels":[{"id":1009,"name":"performance"}],"body":"…"}`
/// with 0–3 labels (out of 40), users out of `count / 20 + 10`, bodies of ~200 characters with non-ASCII
/// text and escapes (`\n`, `\"`, `\u00e9`, a surrogate pair), and a fraction of records repeating the id of
/// an earlier record with other values (later wins when imported). The same seed gives the same bytes.
public struct IssueDumpGenerator: Sendable {
    public let seed: UInt64
    /// The fraction of records that repeat an earlier record's id.
    public let duplicateFraction: Double
    private var state: UInt64

    public init(seed: UInt64 = 1, duplicateFraction: Double = 0.1) {
        self.seed = seed
        self.duplicateFraction = min(max(duplicateFraction, 0), 1)
        self.state = seed &+ 0x9E37_79B9_7F4A_7C15
    }

    /// SplitMix64: fast, and the same on every platform.
    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    private mutating func chance(_ probability: Double) -> Bool {
        Double(next() >> 11) / Double(1 << 53) < probability
    }

    private static let words = [
        "import", "crash", "when", "parsing", "large", "files", "memory", "grows", "slowly", "after", "update",
        "the", "store", "decoder", "fails", "on", "nested", "objects", "with", "unicode", "café", "naïve", "日本語",
        "ünïcödé", "emoji", "performance", "regression", "since", "release", "please", "fix", "thanks",
    ]
    private static let labelNames = [
        "bug", "enhancement", "performance", "documentation", "question", "duplicate", "wontfix", "help wanted",
        "good first issue", "regression", "crash", "security", "linux", "macos", "decoder", "encoder", "import",
        "export", "cli", "tests",
    ]

    /// One record's JSON (without separator).
    public mutating func record(index: Int, count: Int) -> String {
        let repeated = index > 0 && chance(duplicateFraction)
        let id = repeated ? 1 + next(below: index) : index + 1
        let number = id
        let userCount = count / 20 + 10
        let userID = 1 + next(below: userCount)
        let state = chance(0.7) ? "open" : "closed"
        let created = 1_420_070_400 + next(below: 300_000_000)
        let updated = created + next(below: 10_000_000)
        let comments = next(below: 200)
        let score = Double(next(below: 10_000)) / 100
        var title = ""
        for position in 0..<(3 + next(below: 6)) {
            title += (position == 0 ? "" : " ") + Self.words[next(below: Self.words.count)]
        }
        var labels: [String] = []
        let labelCount = next(below: 4)
        var used = Set<Int>()
        for _ in 0..<labelCount {
            let label = next(below: 40)
            guard used.insert(label).inserted else { continue }
            labels.append(#"{"id":\#(1000 + label),"name":"\#(Self.labelNames[label % Self.labelNames.count])\#(label >= 20 ? " 2" : "")"}"#)
        }
        var body = ""
        while body.utf8.count < 190 {
            switch next(below: 12) {
            case 0: body += "\\n"
            case 1: body += "\\\"quoted\\\" "
            case 2: body += "caf\\u00e9 "
            case 3: body += "\\ud83d\\ude00 "
            default: body += Self.words[next(below: Self.words.count)] + " "
            }
        }
        return #"{"id":\#(id),"number":\#(number),"title":"\#(title)","state":"\#(state)","created_at":"\#(ISO8601.string(secondsSince1970: Double(created)))","updated_at":"\#(ISO8601.string(secondsSince1970: Double(updated)))","comments":\#(comments),"score":\#(score),"user":{"id":\#(userID),"login":"user\#(userID)"},"labels":[\#(labels.joined(separator: ","))],"body":"\#(body)"}"#
    }

    /// Writes `count` records as a JSON array, in chunks of about 64 KiB.
    public mutating func writeArray(count: Int, to write: ([UInt8]) throws -> Void) rethrows {
        try write(Array("[\n".utf8))
        var buffer: [UInt8] = []
        buffer.reserveCapacity(70_000)
        for index in 0..<count {
            buffer += record(index: index, count: count).utf8
            buffer += (index + 1 < count ? ",\n" : "\n").utf8
            if buffer.count >= 65_536 {
                try write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        buffer += "]\n".utf8
        try write(buffer)
    }

    /// Writes `count` records as JSON Lines.
    public mutating func writeLines(count: Int, to write: ([UInt8]) throws -> Void) rethrows {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(70_000)
        for index in 0..<count {
            buffer += record(index: index, count: count).utf8
            buffer.append(0x0A)
            if buffer.count >= 65_536 {
                try write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        if !buffer.isEmpty { try write(buffer) }
    }
}
