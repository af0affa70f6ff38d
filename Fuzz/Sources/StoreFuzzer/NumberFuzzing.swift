import CodableStore
import Foundation

/// The number check of every input: each conversion of `JSONNumber` (and of `JSONTape` in place) against the C
/// library (`strtod`, `strtof`, `strtoll`, `strtoull`; see `NumberOracle.swift`, shared with the JSON tests), on
/// - every number in the input: each maximal run of the bytes `0-9 + - . e E` that is a JSON number, inside the
///   document or not (a run in a string or in broken JSON counts too), the first time the run sees it, and
/// - numbers from `NumberTextGenerator` seeded with a hash of the input (``generatedPerInput``), so that inputs
///   also try numbers at the edges (multiples of 2^64, the limits of each width, of `Double` and `Float`) that
///   libFuzzer's mutations would take long to write.
///
/// Under the sanitizers a number costs about a millisecond (28 conversions and the oracle), as much as decoding an
/// input into the stores: the default mode checks 2 generated numbers an input, and `STORE_FUZZER_NUMBERS_ONLY=1`
/// skips the stores and checks 16 (README.md).
enum NumberFuzzing {
    /// STORE_FUZZER_NUMBERS_ONLY=1: no decoding into stores, numbers only.
    static let isOnly = ProcessInfo.processInfo.environment["STORE_FUZZER_NUMBERS_ONLY"] == "1"
    static let generatedPerInput = isOnly ? 16 : 2
    /// Longer runs are not tried (libFuzzer's inputs are at most 4 KiB by default anyway).
    static let longestRun = 4_096
    /// The texts of the input checked already in this run, forgotten past ``rememberedLimit``: libFuzzer mutates
    /// the same inputs over and over, and a text converts the same every time.
    /// `nonisolated(unsafe)`: libFuzzer runs one input at a time, on one thread.
    nonisolated(unsafe) private static var checked: Set<String> = []
    static let rememberedLimit = 1_000_000

    /// Stops the program (`fatalError`) with the input, the generator's seed and every conversion that disagrees.
    static func check(_ data: Data) {
        let found = numberTexts(in: data)
        let unchecked = found.filter { checked.insert($0).inserted }
        if checked.count > rememberedLimit { checked.removeAll() }
        let seed = hash(data)
        var generator = NumberTextGenerator(seed: seed)
        let generated = (0..<generatedPerInput).map { _ in generator.next() }
        let mismatches = NumberDifferential.mismatches(unchecked + generated)
        guard !mismatches.isEmpty else { return }
        var message = "StoreFuzzer: number conversions disagree with the C library\n"
        message += "input (\(data.count) bytes): \(String(decoding: data.prefix(4_000), as: UTF8.self).debugDescription)\n"
        message += "numbers found in it: \(found)\n"
        message += "generated from seed 0x\(String(seed, radix: 16)): \(generated)\n"
        for line in mismatches.prefix(40) { message += "  \(line)\n" }
        fatalError(message)
    }

    /// The maximal runs of number bytes in `data` that are JSON numbers.
    static func numberTexts(in data: Data) -> [String] {
        var texts: [String] = []
        var start: Data.Index? = nil
        func endRun(at end: Data.Index) {
            guard let runStart = start else { return }
            start = nil
            guard end - runStart <= longestRun else { return }
            let text = String(decoding: data[runStart..<end], as: UTF8.self)
            if JSONNumber(text) != nil { texts.append(text) }
        }
        for index in data.indices {
            switch data[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                UInt8(ascii: "e"), UInt8(ascii: "E"):
                if start == nil { start = index }
            default:
                endRun(at: index)
            }
        }
        endRun(at: data.endIndex)
        return texts
    }

    /// FNV-1a, 64 bits: the same input always tries the same generated numbers, so a finding replays.
    static func hash(_ data: Data) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in data {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
