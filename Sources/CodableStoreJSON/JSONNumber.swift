/// A JSON number, kept as its exact source text, with conversions that are exact or throw.
///
/// The reader never converts numbers: `123456789012345678901234567890`, `1e400`, `-9223372036854775808` and
/// `1e-400` all arrive as text. The conversions give the value or a ``JSONNumberError``, never a wrong value:
/// - ``int64()``, ``uint64()`` and ``integer(as:)`` accept any notation whose value is an integer in range
///   (`100`, `1e2`, `100.0`, `-0`), computed on the decimal digits (no detour through `Double`), and throw
///   `notAnInteger` (`1.5`) or `overflow` (`1e20` for `Int64`, `-1` for `UInt64`). A number with a fractional part
///   is `notAnInteger` whatever its size (`1e-400`, `100000000000000000000.5`).
/// - ``double()`` and ``float()`` round to the nearest value, as every JSON parser does (`0.1`), and throw
///   `overflow` when the number is beyond the type's range (`1e400`) and `underflow` when a non-zero number would
///   round to zero (`1e-400`). A subnormal result is a value (`5e-324`). Zero keeps its sign (`-0.0`).
/// - ``decimalText`` is the text, for `Decimal(string:)`.
///
/// These are the values and errors of the C library's `strtod`, `strtof`, `strtoll` and `strtoull` for the same
/// text: an infinity is `overflow`, a zero for a non-zero number is `underflow`, `ERANGE` for an integer is
/// `overflow` (the tests and the fuzzer compare them on generated numbers).
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number exactly as written in the source.
    public let text: String

    /// A number from its JSON text; nil if `text` is not a JSON number (RFC 8259 grammar).
    public init?(_ text: String) {
        var text = text
        let isValid = text.withUTF8 { JSONNumber.isValidSyntax(UnsafeRawBufferPointer($0)) }
        guard isValid else { return nil }
        self.text = text
    }

    init(unchecked text: String) {
        self.text = text
    }

    public var description: String { text }

    /// The text to give to `Decimal(string:)`.
    public var decimalText: String { text }

    /// Whether the text has neither a fraction nor an exponent.
    public var isInteger: Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    public func int64() throws(JSONNumberError) -> Int64 {
        try withBytes { bytes throws(JSONNumberError) in try Self.int64(bytes) }
    }

    public func uint64() throws(JSONNumberError) -> UInt64 {
        try withBytes { bytes throws(JSONNumberError) in try Self.uint64(bytes) }
    }

    /// The value as any fixed-width integer type (`Int`, `Int8`, `UInt32`…), exactly.
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) throws(JSONNumberError) -> T {
        try withBytes { bytes throws(JSONNumberError) in try Self.integer(bytes, as: type) }
    }

    public func double() throws(JSONNumberError) -> Double {
        try withBytes { bytes throws(JSONNumberError) in try Self.double(bytes) }
    }

    public func float() throws(JSONNumberError) -> Float {
        try withBytes { bytes throws(JSONNumberError) in try Self.float(bytes) }
    }

    private func withBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws(JSONNumberError) -> Result
    ) throws(JSONNumberError) -> Result {
        var text = text
        let result: Swift.Result<Result, JSONNumberError> = text.withUTF8 { buffer in
            do throws(JSONNumberError) {
                return .success(try body(UnsafeRawBufferPointer(buffer)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// A JSON number that does not fit the requested type.
public struct JSONNumberError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Beyond the range of the type (`1e400` for `Double`, `256` for `UInt8`, `-1` for `UInt64`).
        case overflow
        /// A non-zero number that would round to zero (`1e-400` for `Double`).
        case underflow
        /// Has a fractional part, asked for an integer type (`1.5`).
        case notAnInteger
    }

    /// The number's text.
    public var text: String
    /// The requested type, `Int64`.
    public var type: String
    public var reason: Reason

    public init(text: String, type: String, reason: Reason) {
        self.text = text
        self.type = type
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .overflow: return "number \(text) does not fit in \(type)"
        case .underflow: return "number \(text) does not fit in \(type) (too small, it would round to zero)"
        case .notAnInteger: return "number \(text) is not an integer, it does not fit in \(type)"
        }
    }
}

// MARK: - Conversions on the raw text

extension JSONNumber {
    private static func failure(_ bytes: UnsafeRawBufferPointer, _ type: Any.Type, _ reason: JSONNumberError.Reason)
        -> JSONNumberError
    {
        JSONNumberError(text: String(decoding: bytes, as: UTF8.self), type: "\(type)", reason: reason)
    }

    static func int64(_ bytes: UnsafeRawBufferPointer) throws(JSONNumberError) -> Int64 {
        let (negative, magnitude) = try integerParts(bytes, Int64.self)
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw failure(bytes, Int64.self, .overflow) }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw failure(bytes, Int64.self, .overflow) }
        return Int64(magnitude)
    }

    static func uint64(_ bytes: UnsafeRawBufferPointer) throws(JSONNumberError) -> UInt64 {
        let (negative, magnitude) = try integerParts(bytes, UInt64.self)
        guard !negative || magnitude == 0 else { throw failure(bytes, UInt64.self, .overflow) }
        return magnitude
    }

    static func integer<T: FixedWidthInteger>(
        _ bytes: UnsafeRawBufferPointer,
        as type: T.Type
    ) throws(JSONNumberError) -> T {
        let (negative, magnitude) = try integerParts(bytes, type)
        if negative {
            guard magnitude != 0 else { return 0 }
            // -(magnitude - 1) - 1 stays in range down to T.min.
            guard T.isSigned, let below = T(exactly: magnitude - 1) else { throw failure(bytes, type, .overflow) }
            return 0 - below - 1
        }
        guard let value = T(exactly: magnitude) else { throw failure(bytes, type, .overflow) }
        return value
    }

    /// The sign and magnitude of an integral number, exactly, from the decimal digits.
    private static func integerParts(
        _ bytes: UnsafeRawBufferPointer,
        _ type: Any.Type
    ) throws(JSONNumberError) -> (negative: Bool, magnitude: UInt64) {
        let count = bytes.count
        let negative = bytes[0] == UInt8(ascii: "-")
        let first = negative ? 1 : 0
        var index = first
        var magnitude: UInt64 = 0
        while index < count, let digit = digitValue(bytes[index]) {
            if index - first < 19 {
                magnitude = magnitude &* 10 &+ UInt64(digit)
            } else {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
                guard !overflow1, !overflow2 else { return try slowIntegerParts(bytes, type) }
                magnitude = sum
            }
            index += 1
        }
        if index == count { return (negative, magnitude) }
        return try slowIntegerParts(bytes, type)
    }

    /// Integers written with a fraction or an exponent (`1e2`, `100.0`), or too long for the fast path.
    private static func slowIntegerParts(
        _ bytes: UnsafeRawBufferPointer,
        _ type: Any.Type
    ) throws(JSONNumberError) -> (negative: Bool, magnitude: UInt64) {
        let parts = decompose(bytes)
        var digits = parts.digits
        var exponent = parts.exponent
        while let last = digits.last, last == 0 {
            digits.removeLast()
            exponent += 1
        }
        guard !digits.isEmpty else { return (parts.negative, 0) }
        guard exponent >= 0 else { throw failure(bytes, type, .notAnInteger) }
        guard digits.count + exponent <= 20 else { throw failure(bytes, type, .overflow) }
        var magnitude: UInt64 = 0
        for digit in digits + Array(repeating: 0, count: exponent) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { throw failure(bytes, type, .overflow) }
            magnitude = sum
        }
        return (parts.negative, magnitude)
    }

    /// Sign, significant digits (no leading zeros) and decimal exponent: value = digits × 10^exponent.
    /// The exponent saturates far beyond any representable value.
    private static func decompose(_ bytes: UnsafeRawBufferPointer) -> (negative: Bool, digits: [UInt8], exponent: Int) {
        let count = bytes.count
        let negative = bytes[0] == UInt8(ascii: "-")
        var index = negative ? 1 : 0
        var digits: [UInt8] = []
        var exponent = 0
        while index < count, let digit = digitValue(bytes[index]) {
            if !(digits.isEmpty && digit == 0) { digits.append(digit) }
            index += 1
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < count, let digit = digitValue(bytes[index]) {
                if !(digits.isEmpty && digit == 0) { digits.append(digit) }
                exponent -= 1
                index += 1
            }
        }
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var value = 0
            while index < count, let digit = digitValue(bytes[index]) {
                value = min(value * 10 + Int(digit), 1_000_000_000)
                index += 1
            }
            exponent += exponentNegative ? -value : value
        }
        return (negative, digits, exponent)
    }

    static func double(_ bytes: UnsafeRawBufferPointer) throws(JSONNumberError) -> Double {
        let value = fastDouble(bytes) ?? Double(String(decoding: bytes, as: UTF8.self))!
        if value.isInfinite { throw failure(bytes, Double.self, .overflow) }
        if value == 0, hasNonZeroDigit(bytes) { throw failure(bytes, Double.self, .underflow) }
        return value
    }

    static func float(_ bytes: UnsafeRawBufferPointer) throws(JSONNumberError) -> Float {
        let value = Float(String(decoding: bytes, as: UTF8.self))!
        if value.isInfinite { throw failure(bytes, Float.self, .overflow) }
        if value == 0, hasNonZeroDigit(bytes) { throw failure(bytes, Float.self, .underflow) }
        return value
    }

    private static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// Exact when the significand fits in 53 bits and the power of ten is exact (Clinger's fast path): one
    /// correctly rounded multiplication or division. Nil otherwise.
    ///
    /// The digits accumulate in a `UInt64` without overflow checks, which is exact for up to 19 significant digits
    /// (10^19 - 1 < 2^64). More can wrap around, and a wrapped significand can pass the 2^53 test: 2^64
    /// (`18446744073709551616`, 20 digits) wraps to 0, and so does any multiple of it. The digits are therefore
    /// counted from their positions, not from the significand, and a number with more than 19 significant digits
    /// goes to the slow path. Leading zeros (`0.000…`) are counted only then, off the path of short numbers.
    private static func fastDouble(_ bytes: UnsafeRawBufferPointer) -> Double? {
        let count = bytes.count
        let negative = bytes[0] == UInt8(ascii: "-")
        let start = negative ? 1 : 0
        var index = start
        var significand: UInt64 = 0
        while index < count, let digit = digitValue(bytes[index]) {
            significand = significand &* 10 &+ UInt64(digit)
            index += 1
        }
        var digitCount = index - start
        var exponent = 0
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let fractionStart = index
            while index < count, let digit = digitValue(bytes[index]) {
                significand = significand &* 10 &+ UInt64(digit)
                index += 1
            }
            exponent = fractionStart - index
            digitCount -= exponent
        }
        guard index == count, exponent >= -22 else { return nil }
        if digitCount > 19, digitCount - leadingZeroCount(bytes, from: start) > 19 { return nil }
        guard significand <= 1 << 53 else { return nil }
        var value = Double(significand)
        if exponent < 0 { value /= powersOfTen[-exponent] }
        return negative ? -value : value
    }

    /// The zeros before the first non-zero digit of a number's digits (`0.000125`: 4), skipping the point.
    private static func leadingZeroCount(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var zeros = 0
        for byte in bytes[start...] {
            if byte == UInt8(ascii: "0") {
                zeros += 1
            } else if byte != UInt8(ascii: ".") {
                break
            }
        }
        return zeros
    }

    private static func hasNonZeroDigit(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for byte in bytes {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }

    @inline(__always)
    private static func digitValue(_ byte: UInt8) -> UInt8? {
        let digit = byte &- UInt8(ascii: "0")
        return digit < 10 ? digit : nil
    }

    /// Whether `bytes` is a number by the RFC 8259 grammar.
    static func isValidSyntax(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        func digits() -> Int {
            let start = index
            while index < count, digitValue(bytes[index]) != nil { index += 1 }
            return index - start
        }
        if index < count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return index == count
    }
}
