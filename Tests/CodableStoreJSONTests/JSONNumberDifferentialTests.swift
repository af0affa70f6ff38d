import CodableStoreJSON
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Every conversion of ``JSONNumber`` (and of ``JSONTape`` in place) against the C library (`strtod`, `strtof`,
/// `strtoll`, `strtoull`), on numbers made to reach the edges: see `Support/NumberOracle.swift` for what is compared
/// and `Support/NumberTextGenerator.swift` for the numbers. The fuzzer runs the same comparison on random numbers
/// (Fuzz/README.md).
///
/// The generated numbers come from a fixed seed; another one, in decimal or `0x` hexadecimal, and another count:
///
/// ```sh
/// CODABLE_STORE_NUMBER_SEED=0x1234 CODABLE_STORE_NUMBER_COUNT=200000 swift test --filter JSONNumberDifferential
/// ```
@Suite("JSON numbers against the C library")
struct JSONNumberDifferentialTests {
    static let seed: UInt64 = environment("CODABLE_STORE_NUMBER_SEED") ?? 0x5EED_0044
    static let generatedCount = Int(environment("CODABLE_STORE_NUMBER_COUNT") ?? 3_000)

    private static func environment(_ name: String) -> UInt64? {
        guard let value = getenv(name).map({ String(cString: $0) }) else { return nil }
        return value.hasPrefix("0x") ? UInt64(value.dropFirst(2), radix: 16) : UInt64(value)
    }

    /// Records the mismatches (the first 30 in full) with the seed that made them.
    private func expectAgreement(_ texts: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let mismatches = NumberDifferential.mismatches(texts)
        let total = texts.count * NumberDifferential.conversions.count
        let report = "\(mismatches.count) of \(total) conversions of \(what) disagree (seed 0x\(String(Self.seed, radix: 16))):\n"
            + mismatches.prefix(30).joined(separator: "\n")
        #expect(mismatches.isEmpty, Comment(rawValue: report), sourceLocation: sourceLocation)
    }

    // MARK: - Tables

    @Test func zerosOfEveryForm() {
        expectAgreement(NumberTextGenerator.zeros, "zeros")
    }

    /// The limits of every integer width and their neighbours, each in every notation (plain, `.000`, `e0`,
    /// `E+0`, `e-00`, scientific, scaled with a negative exponent, `0.…E+N`, a point inside the digits, a fraction
    /// after them); multiples of 2^63, 2^64, 10^19 and 10^20 and powers of ten to 10^40 with their neighbours,
    /// each plain and in two notations drawn from the seed.
    @Test func interestingIntegersInEveryNotation() {
        var random = SplitMix64(seed: Self.seed)
        var texts: [String] = []
        let widths = Set(NumberTextGenerator.integerLimits)
        for integer in NumberTextGenerator.interestingIntegers {
            if widths.contains(integer) {
                texts += NumberTextGenerator.writings(of: integer, zeros: 1, point: 1, fraction: "5")
                texts += NumberTextGenerator.writings(of: integer, zeros: 3, point: -1, fraction: "0001")
            } else {
                let writings = NumberTextGenerator.writings(
                    of: integer, zeros: 1 + random.below(3), point: random.chance(50) ? -1 : 1 + random.below(20),
                    fraction: String(random.below(100)))
                texts += [integer, random.element(of: writings), random.element(of: writings)]
            }
        }
        #expect(texts.count > 2_500)
        expectAgreement(texts, "integers at the edges")
    }

    /// Every count of digits from 1 to 40, with and without a sign, as nines, as a power of ten, as the start of
    /// 2^64's multiples and at random; plain, with fractions and with exponents.
    @Test func everyDigitCountFrom1To40() {
        var random = SplitMix64(seed: Self.seed)
        var texts: [String] = []
        for count in 1...40 {
            var runs = [String(repeating: "9", count: count), "1" + String(repeating: "0", count: count - 1)]
            runs.append(String(String(repeating: "18446744073709551616", count: 2).prefix(count)))
            var run = String(1 + random.below(9))
            for _ in 1..<count { run += String(random.below(10)) }
            runs.append(run)
            for run in runs {
                for (index, form) in ["#", "#.0", "#.5", "#e3", "#e-3", "#E+21", "#.25e-300", "0.000#"].enumerated() {
                    let sign = (index + run.utf8.count) % 2 == 0 ? "" : "-"
                    texts.append(sign + form.replacingOccurrences(of: "#", with: run))
                }
            }
        }
        expectAgreement(texts, "every digit count")
    }

    @Test func theEdgesOfDoubleAndFloat() {
        let texts = NumberTextGenerator.floatingPointEdges.flatMap { [$0, "-" + $0] }
        expectAgreement(texts, "floating-point edges")
    }

    // MARK: - Generated

    /// Numbers from the seeded generator: every kind of ``NumberTextGenerator``, and they reach every outcome of
    /// every conversion (so a generator gone wrong cannot make the comparison vacuous).
    @Test func generatedNumbersAgreeWithTheCLibrary() {
        var generator = NumberTextGenerator(seed: Self.seed)
        let texts = (0..<Self.generatedCount).map { _ in generator.next() }
        expectAgreement(texts, "generated numbers")

        var reached: [String: Set<String>] = [:]
        var digitCounts: Set<Int> = []
        for text in texts {
            for (conversion, outcome) in NumberDifferential.expectedOutcomes(text) {
                reached[conversion, default: []].insert(outcome.isValue ? "value" : outcome.description)
            }
            digitCounts.insert(text.utf8.prefix { $0 != UInt8(ascii: ".") && $0 | 0x20 != UInt8(ascii: "e") }.count {
                $0 != UInt8(ascii: "-")
            })
        }
        #expect(reached["double()"] == ["value", "overflow", "underflow"])
        #expect(reached["float()"] == ["value", "overflow", "underflow"])
        for conversion in NumberDifferential.conversions.dropFirst(2) {
            #expect(reached[conversion.name] == ["value", "overflow", "not an integer"], "\(conversion.name)")
        }
        #expect(digitCounts.isSuperset(of: 1...40))
    }

    // MARK: - The oracle itself

    /// The oracle against answers worked out by hand, so that a broken oracle cannot agree with a broken
    /// conversion.
    @Test(arguments: [
        ("-18446744073709551616", "double()", NumberOutcome.value(-18_446_744_073_709_551_616.0)),
        ("18446744073709551616.0", "double()", .value(18_446_744_073_709_551_616.0)),
        ("1844674407370955161.6", "double()", .value(1_844_674_407_370_955_161.6)),
        ("-0", "double()", .value(-0.0)), ("-0e-5", "double()", .value(-0.0)), ("0.0", "double()", .value(0.0)),
        ("1e400", "double()", .overflow), ("-1e400", "double()", .overflow), ("1e-400", "double()", .underflow),
        ("4.9e-324", "double()", .value(Double.leastNonzeroMagnitude)), ("2e-324", "double()", .underflow),
        ("1.7976931348623158e308", "double()", .value(Double.greatestFiniteMagnitude)),
        ("1.7976931348623159e308", "double()", .overflow),
        ("3.4028235677973366e38", "float()", .value(Float.greatestFiniteMagnitude)),
        ("3.40282357e38", "float()", .overflow), ("1e-50", "float()", .underflow),
        ("1.4e-45", "float()", .value(Float.leastNonzeroMagnitude)),
        ("12.5e1", "integer(as: UInt8)", .value(UInt8(125))), ("256", "integer(as: UInt8)", .overflow),
        ("-128", "integer(as: Int8)", .value(Int8.min)), ("-129", "integer(as: Int8)", .overflow),
        ("-0", "uint64()", .value(UInt64(0))), ("-0.0e5", "integer(as: UInt8)", .value(UInt8(0))),
        ("-1", "uint64()", .overflow), ("-1e-400", "uint64()", .notAnInteger),
        ("1e19", "int64()", .overflow), ("1e19", "uint64()", .value(UInt64(10_000_000_000_000_000_000))),
        ("-9223372036854775808", "int64()", .value(Int64.min)), ("-9223372036854775809", "int64()", .overflow),
        ("-92233720368547758.08e2", "integer(as: Int)", .value(Int.min)),
        ("18446744073709551615", "integer(as: UInt)", .value(UInt.max)),
        ("1.8446744073709551616e19", "uint64()", .overflow), ("1.5", "int64()", .notAnInteger),
        ("1.5e400", "int64()", .overflow), ("1e-400", "int64()", .notAnInteger),
        ("100000000000000000000000000000000000000000.5", "integer(as: Int16)", .notAnInteger),
        ("0.000e999999999999999999", "integer(as: Int32)", .value(Int32(0))),
    ])
    func theOracleGivesKnownAnswers(_ text: String, _ conversion: String, _ outcome: NumberOutcome) throws {
        let expected = try #require(NumberDifferential.conversions.first { $0.name == conversion })
            .expected(NumberOracle(text))
        #expect(expected == outcome)
    }

    @Test func exactDecimalsAndDecimalText() {
        let value = ExactDecimal("-12.50e3")
        #expect(value.isNegative && value.digits == Array("125".utf8) && value.exponent == 2)
        #expect(ExactDecimal("0.00e-999999999999999999999").isZero)
        #expect(ExactDecimal("1e99999999999999999999").exponent == 1_000_000_000_000_000)
        #expect(ExactDecimal("1.5e1").integerMagnitude() == "15")
        #expect(ExactDecimal("1e100").integerMagnitude(limit: 22) == "1" + String(repeating: "0", count: 21))
        #expect(DecimalText.adding(1, to: "-1") == "0")
        #expect(DecimalText.adding(-1, to: "0") == "-1")
        #expect(DecimalText.adding(-1, to: "-9223372036854775808") == "-9223372036854775809")
        #expect(DecimalText.adding(1, to: "18446744073709551615") == "18446744073709551616")
        #expect(DecimalText.adding(-1, to: "1000") == "999")
        #expect(DecimalText.multiplying("18446744073709551616", by: 3) == "55340232221128654848")
        let integers = Set(NumberTextGenerator.interestingIntegers)
        for edge in ["-129", "-128", "-127", "126", "127", "128", "-1", "0", "1", "254", "255", "256",
            "-9223372036854775809", "9223372036854775808", "18446744073709551616", "-36893488147419103232",
            "92233720368547758080", "200000000000000000001", "9999999999999999999999999999999999999999",
            "9007199254740993"]
        {
            #expect(integers.contains(edge), "\(edge)")
        }
    }
}

extension String {
    /// Every `target` replaced (the standard library has no such method without Foundation).
    fileprivate func replacingOccurrences(of target: Character, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
