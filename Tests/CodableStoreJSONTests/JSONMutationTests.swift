import Testing

@testable import CodableStoreJSON

/// Random mutations of the pass corpus (deterministic seeds): the reader never crashes, gives the same result in
/// every chunking, finds every error itself (never falls back to yajl's message), and what it accepts round-trips.
@Suite("JSON mutations")
struct JSONMutationTests {
    /// Bytes that make interesting mutations: structure, escapes, whitespace yajl mishandles, UTF-8 leads.
    static let interestingBytes: [UInt8] =
        Array(#"{}[]:,"\/u0-.eE+tfn 1"#.utf8) + [0x0B, 0x0C, 0x0A, 0x0D, 0x09, 0x00]
        + [0x80, 0xBF, 0xC0, 0xC3, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]

    /// Phrases of yajl's own messages: none must reach a `JSONSyntaxError`.
    static let yajlPhrases = [
        "lexical error", "parse error", "premature EOF", "trailing garbage", "client cancel", "yajl",
    ]

    static func mutate(_ bytes: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
            let byte = interestingBytes.randomElement(using: &generator)!
            switch Int.random(in: 0..<4, using: &generator) {
            case 0 where !bytes.isEmpty: bytes[position] = byte
            case 1: bytes.insert(byte, at: position)
            case 2 where !bytes.isEmpty: bytes.remove(at: position)
            default: bytes = Array(bytes.prefix(position))
            }
        }
        return bytes
    }

    @Test(arguments: JSONFixture.passNames.filter { $0 != "long-string.json" && $0 != "deep-512.json" })
    func mutatedDocuments(_ name: String) throws {
        let original = try JSONFixture.bytes("json/pass/\(name)")
        var generator = SplitMix64(seed: UInt64(name.utf8.reduce(0) { $0 &* 31 &+ Int($1) }.magnitude))
        var rejected = 0
        for _ in 0..<300 {
            let bytes = Self.mutate(original, using: &generator)
            let seed = generator.next()
            let chunkings: [Chunking] = [.whole, .bytes(1), .random(seed: seed, maximum: 6)]
            let results = chunkings.map { chunking -> Result<JSONTape, JSONSyntaxError> in
                Result { try parseTape(bytes, chunking: chunking) }.mapError { $0 as! JSONSyntaxError }
            }
            switch results[0] {
            case .success(let tape):
                for (chunking, result) in zip(chunkings, results).dropFirst() {
                    #expect((try? result.get()) == tape, "\(chunking) \(bytes)")
                }
                // What is accepted round-trips through the compact text.
                let text = tape.jsonText(of: tape.root)
                #expect((try? JSONTape.parse(text)).map { $0.jsonText(of: $0.root) } == text, "\(bytes)")
            case .failure(let error):
                rejected += 1
                for (chunking, result) in zip(chunkings, results).dropFirst() {
                    guard case .failure(let other) = result else {
                        Issue.record("\(chunking) accepted what whole rejected: \(bytes)")
                        continue
                    }
                    #expect(ErrorSummary(other) == ErrorSummary(error), "\(chunking) \(bytes)")
                }
                #expect(!Self.yajlPhrases.contains { error.reason.contains($0) }, "\(error) \(bytes)")
                #expect(error.byteOffset >= 0 && error.byteOffset <= bytes.count, "\(error) \(bytes)")
                #expect(error.line >= 1 && error.column >= 1, "\(error) \(bytes)")
            }
        }
        #expect(rejected > 0)
    }
}
