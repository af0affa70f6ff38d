// Shared by the JSON tests and the fuzzer (Fuzz/Sources/StoreFuzzer/NumberTextGenerator.swift is a symbolic link
// to this file): it depends on the standard library alone.

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014): a tiny generator
/// whose sequence depends on the seed alone, on every platform and toolchain (``below(_:)`` and ``chance(_:)``
/// too; the standard library's `random(in:using:)` may change its algorithm).
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (multiply-shift; the bias is negligible for the small bounds used here).
    mutating func below(_ bound: Int) -> Int {
        Int(((next() >> 32) &* UInt64(bound)) >> 32)
    }

    /// True `percent` times in a hundred.
    mutating func chance(_ percent: Int) -> Bool {
        below(100) < percent
    }

    mutating func element<C: RandomAccessCollection>(of collection: C) -> C.Element where C.Index == Int {
        collection[collection.startIndex + below(collection.count)]
    }
}

/// JSON number texts (RFC 8259 grammar) that reach the edges of the conversions: every digit count to 40, signs,
/// zeros, fractions, exponents from small to absurd, the limits of every integer width, multiples of 2^63, 2^64,
/// 10^19 and 10^20, and the limits of `Double` and `Float`, written in every notation.
///
/// ```swift
/// var generator = NumberTextGenerator(seed: 42)
/// let text = generator.next()   // "-1.8446744073709551616e19", "0e-5", "92233720368547758.07e2", …
/// ```
struct NumberTextGenerator: Sendable {
    var random: SplitMix64

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    /// A number of one of the kinds above, chosen at random.
    mutating func next() -> String {
        switch random.below(20) {
        case 0..<7: return freeForm()
        case 7..<13: return written(random.element(of: Self.interestingIntegers))
        case 13: return random.element(of: Self.zeros)
        case 14..<17: return nearFloatingPointEdge()
        default: return digitRun(count: 1 + random.below(40))
        }
    }

    // MARK: - Kinds

    /// An optional sign, 1 to 40 integer digits (or `0`), an optional fraction of up to 25 digits and an optional
    /// exponent, each part's size and digits drawn independently.
    mutating func freeForm() -> String {
        var text = random.chance(50) ? "-" : ""
        text += random.chance(20) ? "0" : digits(count: 1 + random.below(40), leadingNonZero: true)
        if random.chance(45) { text += "." + digits(count: 1 + random.below(25), leadingNonZero: false) }
        if random.chance(45) { text += exponent() }
        return text
    }

    /// `count` digits (a leading non-zero one), with or without a sign, a fraction or an exponent.
    mutating func digitRun(count: Int) -> String {
        var text = (random.chance(50) ? "-" : "") + digits(count: count, leadingNonZero: true)
        switch random.below(4) {
        case 0: text += "." + digits(count: 1 + random.below(5), leadingNonZero: false)
        case 1: text += exponent()
        default: break
        }
        return text
    }

    /// Near the largest finite value, the smallest normal and the smallest subnormal of `Double` and `Float`, the
    /// halfway points where rounding flips to infinity or zero, and the exact limits of Clinger's fast path:
    /// a listed value, or one with its last digits replaced or more digits after it.
    mutating func nearFloatingPointEdge() -> String {
        var text = random.element(of: Self.floatingPointEdges)
        if random.chance(50) {
            var bytes = Array(text.utf8)
            let mantissaEnd = bytes.firstIndex { $0 == UInt8(ascii: "e") } ?? bytes.count
            for _ in 0..<random.below(4) {
                let position = mantissaEnd - 1 - random.below(3)
                if position > 1, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                    bytes[position] = UInt8(ascii: "0") + UInt8(random.below(10))
                }
            }
            if random.chance(50) {
                let extra = digits(count: 1 + random.below(12), leadingNonZero: false)
                let hasPoint = bytes[..<mantissaEnd].contains(UInt8(ascii: "."))
                bytes.insert(contentsOf: Array(((hasPoint ? "" : ".") + extra).utf8), at: mantissaEnd)
            }
            text = String(decoding: bytes, as: UTF8.self)
        }
        if random.chance(30), !text.hasPrefix("-") { text = "-" + text }
        return text
    }

    /// An integer written in one of the notations of ``writings(of:zeros:point:fraction:)``, with random details.
    mutating func written(_ integer: String) -> String {
        let fraction = digits(count: 1 + random.below(4), leadingNonZero: false)
        let point = random.chance(50) ? -1 : 1 + random.below(25)
        let writings = Self.writings(of: integer, zeros: 1 + random.below(4), point: point, fraction: fraction)
        return random.element(of: writings)
    }

    /// An integer in the notations a JSON number allows for it, and made a fraction by a point in its digits or
    /// after them: for `-18446744073709551616`, `…616.00`, `…616e0`, `…616E+0`, `…616e-00`,
    /// `-1.8446744073709551616e19`, `…61600e-2`, `-0.18446744073709551616E+20`, `-1844674407370955161.6`,
    /// `…616.5`, and the plain text.
    ///
    /// - Parameters:
    ///   - zeros: how many zeros to add after a point, or before a negative exponent that takes them back.
    ///   - point: where to put a point inside the digits, counted from the start (from the end when negative);
    ///     clamped to leave a digit on each side.
    ///   - fraction: the digits of the fraction written after the integer.
    static func writings(of integer: String, zeros: Int, point: Int, fraction: String) -> [String] {
        let isNegative = integer.hasPrefix("-")
        let magnitude = isNegative ? String(integer.dropFirst()) : integer
        let sign = isNegative ? "-" : ""
        let count = magnitude.utf8.count
        let zeroText = String(repeating: "0", count: zeros)
        var texts = [
            integer, integer + "." + zeroText, integer + "e0", integer + "E+0", integer + "e-" + zeroText,
            integer + "." + fraction,
        ]
        if count > 1 {
            texts.append(sign + magnitude.prefix(1) + "." + magnitude.dropFirst() + "e" + String(count - 1))
            let position = min(max(point > 0 ? point : count + point, 1), count - 1)
            texts.append(sign + magnitude.prefix(position) + "." + magnitude.dropFirst(position))
        }
        if magnitude != "0" {
            texts.append(integer + zeroText + "e-" + String(zeros))
            texts.append(sign + "0." + magnitude + "E+" + String(count))
        }
        return texts
    }

    // MARK: - Parts

    /// `count` digits: uniform, or mostly nines, or mostly zeros, or the start of an interesting integer (which
    /// keeps carries and wrap-arounds within reach).
    mutating func digits(count: Int, leadingNonZero: Bool) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        switch random.below(5) {
        case 0:
            for _ in 0..<count { bytes.append(random.chance(85) ? UInt8(ascii: "9") : randomDigit()) }
        case 1:
            for _ in 0..<count { bytes.append(random.chance(85) ? UInt8(ascii: "0") : randomDigit()) }
        case 2:
            let source = random.element(of: Self.interestingIntegers).utf8.filter { $0 != UInt8(ascii: "-") }
            for index in 0..<count { bytes.append(index < source.count ? source[index] : randomDigit()) }
        default:
            for _ in 0..<count { bytes.append(randomDigit()) }
        }
        if leadingNonZero, bytes[0] == UInt8(ascii: "0") { bytes[0] = UInt8(ascii: "1") + UInt8(random.below(9)) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func randomDigit() -> UInt8 {
        UInt8(ascii: "0") + UInt8(random.below(10))
    }

    /// `e`/`E`, an optional sign, and a value that is small, around `Float`'s or `Double`'s limits, large, or
    /// absurd (up to 20 digits, with leading zeros sometimes).
    mutating func exponent() -> String {
        var text = random.element(of: ["e", "E", "e+", "E+", "e-", "E-"])
        let value: String
        switch random.below(8) {
        case 0, 1: value = String(random.below(10))
        case 2: value = String(random.below(40))
        case 3: value = String(15 + random.below(35))
        case 4: value = String(280 + random.below(70))
        case 5: value = String(random.below(400))
        case 6: value = String(repeating: "0", count: 1 + random.below(3)) + String(random.below(30))
        default: value = digits(count: 5 + random.below(16), leadingNonZero: true)
        }
        text += value
        return text
    }

    // MARK: - Tables

    /// `0`, `-0` and zero written with fractions and exponents of every sign and size.
    static let zeros: [String] = [
        "0", "-0", "0.0", "-0.0", "0e5", "-0e-5", "0E+0", "0e-0", "0.000", "-0.000e999", "0e999999999999999999999",
        "-0.0e-999999999999", "0.00000000000000000000000000000000000000000e400", "0E-400", "-0E+400",
    ]

    /// Signed decimal texts of the integers where conversions change behaviour: for each integer width, its
    /// minimum and maximum and their neighbours; multiples of 2^63, 2^64, 10^19 and 10^20 (1 to 20 times, and
    /// their neighbours); powers of ten and the runs of nines below them up to 10^40; 2^53 and its neighbours.
    static let interestingIntegers: [String] = {
        var values = Set(integerLimits)
        func addWithNeighbours(_ text: String) {
            values.insert(text)
            values.insert(DecimalText.adding(1, to: text))
            values.insert(DecimalText.adding(-1, to: text))
        }
        let bases = ["9223372036854775808", "18446744073709551616", "1" + String(repeating: "0", count: 19),
            "1" + String(repeating: "0", count: 20)]
        for base in bases {
            for factor in 1...20 {
                let multiple = DecimalText.multiplying(base, by: factor)
                addWithNeighbours(multiple)
                addWithNeighbours("-" + multiple)
            }
        }
        for exponent in 0...40 {
            let power = "1" + String(repeating: "0", count: exponent)
            addWithNeighbours(power)
            addWithNeighbours("-" + power)
        }
        addWithNeighbours("9007199254740992")
        addWithNeighbours("-9007199254740992")
        return values.sorted()
    }()

    /// The minimum and maximum of every integer width (`Int8` to `Int64`, `UInt8` to `UInt64`, `Int`, `UInt`), each
    /// with its neighbours (`-129`, `-128`, `-127`, …, `18446744073709551616`).
    static let integerLimits: [String] = {
        var limits: [String] = []
        func add<T: FixedWidthInteger>(_ type: T.Type) {
            limits += [String(T.min), String(T.max)]
        }
        add(Int8.self)
        add(Int16.self)
        add(Int32.self)
        add(Int64.self)
        add(Int.self)
        add(UInt8.self)
        add(UInt16.self)
        add(UInt32.self)
        add(UInt64.self)
        add(UInt.self)
        let withNeighbours = limits.flatMap { [DecimalText.adding(-1, to: $0), $0, DecimalText.adding(1, to: $0)] }
        return Set(withNeighbours).sorted()
    }()

    /// Decimal texts at the edges of `Double` and `Float` (see ``nearFloatingPointEdge()``).
    static let floatingPointEdges: [String] = [
        // Double: largest finite, the halfway point to 2^1024 (rounds to infinity), just below it.
        "1.7976931348623157e308", "1.7976931348623158e308", "1.797693134862315807937289714053034150799e308",
        "1.797693134862315708145274237317043567980e308", "1.7976931348623159e308", "179769313486231570000e288",
        // Double: smallest normal, largest subnormal, smallest subnormal, the halfway point to zero.
        "2.2250738585072014e-308", "2.2250738585072009e-308", "4.9406564584124654e-324", "5e-324",
        "2.4703282292062327208828439643411068618252990130716238221279284125033775364e-324",
        "2.4703282292062327e-324", "2.4703282292062328e-324", "2.4703282292062326e-324",
        // Float: largest finite, the halfway point to 2^128, smallest normal, smallest subnormal, halfway to zero.
        "3.4028234663852886e38", "3.4028235677973366e38", "3.4028235677973365e38", "3.40282357e38",
        "1.1754943508222875e-38", "1.401298464324817e-45", "7.006492321624085e-46", "7.006492321624086e-46",
        "7.0064923216240853546e-46",
        // Clinger's fast path: 2^53 and its neighbours, the largest exact powers of ten, 19 and 20 digits.
        "9007199254740993", "9007199254740992.5", "900719925474099.3", "1e22", "1e23", "1e-22", "1e-23",
        "4503599627370496.5", "4503599627370497.5", "1234567890123456789", "12345678901234567890",
        "0.0000000000000000000001", "0.00000000000000000000001", "1844674407370955161.6", "0.18446744073709551616",
        "9007199254740991e-22", "9007199254740993e-22",
    ]
}

/// Arithmetic on signed decimal texts, for the tables above (no width limit, no `Int128` needed).
enum DecimalText {
    /// `text + delta`, for a delta of -1, 0 or 1.
    static func adding(_ delta: Int, to text: String) -> String {
        let isNegative = text.hasPrefix("-")
        let magnitude = isNegative ? String(text.dropFirst()) : text
        if delta == 0 { return text }
        if magnitude == "0" { return delta > 0 ? "1" : "-1" }
        // Away from zero: the magnitude grows; towards zero: it shrinks.
        let grows = (delta > 0) != isNegative
        let result = grows ? increment(magnitude) : decrement(magnitude)
        return result == "0" ? "0" : (isNegative ? "-" : "") + result
    }

    /// `magnitude × factor`, both non-negative.
    static func multiplying(_ magnitude: String, by factor: Int) -> String {
        var result: [UInt8] = []
        var carry = 0
        for byte in magnitude.utf8.reversed() {
            let product = Int(byte - UInt8(ascii: "0")) * factor + carry
            result.append(UInt8(ascii: "0") + UInt8(product % 10))
            carry = product / 10
        }
        while carry > 0 {
            result.append(UInt8(ascii: "0") + UInt8(carry % 10))
            carry /= 10
        }
        while result.count > 1, result.last == UInt8(ascii: "0") { result.removeLast() }
        return String(decoding: result.reversed(), as: UTF8.self)
    }

    private static func increment(_ magnitude: String) -> String {
        var bytes = Array(magnitude.utf8)
        var index = bytes.count - 1
        while index >= 0, bytes[index] == UInt8(ascii: "9") {
            bytes[index] = UInt8(ascii: "0")
            index -= 1
        }
        if index < 0 { bytes.insert(UInt8(ascii: "1"), at: 0) } else { bytes[index] += 1 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `magnitude - 1`, for a magnitude of at least 1.
    private static func decrement(_ magnitude: String) -> String {
        var bytes = Array(magnitude.utf8)
        var index = bytes.count - 1
        while bytes[index] == UInt8(ascii: "0") {
            bytes[index] = UInt8(ascii: "9")
            index -= 1
        }
        bytes[index] -= 1
        while bytes.count > 1, bytes[0] == UInt8(ascii: "0") { bytes.removeFirst() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
