#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Shared by the JSON tests and the fuzzer (Fuzz/Sources/StoreFuzzer/NumberOracle.swift is a symbolic link to this
// file): it depends on the C library alone.

/// What a conversion of a JSON number gives: a value (bit for bit) or the class of error ``JSONNumber`` throws.
enum NumberOutcome: Hashable, Sendable, CustomStringConvertible {
    /// A `Double`, by its bits (so that `0.0` and `-0.0` differ).
    case double(UInt64)
    /// A `Float`, by its bits.
    case float(UInt32)
    /// A value of a signed integer type.
    case signed(Int64)
    /// A value of an unsigned integer type.
    case unsigned(UInt64)
    case overflow
    case underflow
    case notAnInteger
    /// Neither a value nor a well-formed error: the C function stopped before the end of the text or did not set
    /// `ERANGE` (a bug in the oracle or the generator), or a `JSONNumberError` named another text or type.
    case invalid(String)

    static func value(_ value: Double) -> NumberOutcome { .double(value.bitPattern) }

    static func value(_ value: Float) -> NumberOutcome { .float(value.bitPattern) }

    static func value<T: FixedWidthInteger>(_ value: T) -> NumberOutcome {
        T.isSigned ? .signed(Int64(value)) : .unsigned(UInt64(value))
    }

    /// Whether this is a value rather than an error.
    var isValue: Bool {
        switch self {
        case .double, .float, .signed, .unsigned: true
        case .overflow, .underflow, .notAnInteger, .invalid: false
        }
    }

    var description: String {
        switch self {
        case .double(let bits): "\(Double(bitPattern: bits)) (0x\(String(bits, radix: 16)))"
        case .float(let bits): "\(Float(bitPattern: bits)) (0x\(String(bits, radix: 16)))"
        case .signed(let value): String(value)
        case .unsigned(let value): String(value)
        case .overflow: "overflow"
        case .underflow: "underflow"
        case .notAnInteger: "not an integer"
        case .invalid(let why): "invalid (\(why))"
        }
    }
}

/// The exact value of a JSON number's text, by string manipulation: sign, significant digits and decimal exponent.
///
/// `-12.50e3` is `-(125 × 10^2)`: `isNegative`, digits `125`, exponent `2`. Zero has no digits. The exponent
/// saturates at ±10^15, where every type has long overflowed or underflowed.
struct ExactDecimal: Sendable {
    var isNegative: Bool
    /// ASCII digits, without leading or trailing zeros; empty for zero.
    var digits: [UInt8]
    var exponent: Int

    /// The decomposition of `text`, which must be a JSON number (RFC 8259 grammar).
    init(_ text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        isNegative = bytes.first == UInt8(ascii: "-")
        if isNegative { index += 1 }
        var digits: [UInt8] = []
        var exponent = 0
        func isDigit(_ index: Int) -> Bool {
            index < bytes.count && bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9")
        }
        while isDigit(index) {
            digits.append(bytes[index])
            index += 1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while isDigit(index) {
                digits.append(bytes[index])
                exponent -= 1
                index += 1
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var exponentIsNegative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentIsNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var written = 0
            while isDigit(index) {
                written = min(written * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1_000_000_000_000_000)
                index += 1
            }
            exponent += exponentIsNegative ? -written : written
        }
        while digits.first == UInt8(ascii: "0") { digits.removeFirst() }
        while digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        self.digits = digits
        self.exponent = digits.isEmpty ? 0 : exponent
    }

    var isZero: Bool { digits.isEmpty }

    /// Whether the value has no fractional part.
    var isInteger: Bool { exponent >= 0 }

    /// The decimal digits of the integer's magnitude, without sign; at most `limit` of them (a longer value is cut
    /// to `limit` digits, which keeps it beyond every 64-bit range).
    func integerMagnitude(limit: Int = 64) -> String {
        guard !isZero else { return "0" }
        var text = String(decoding: digits.prefix(limit), as: UTF8.self)
        text += String(repeating: "0", count: max(0, min(exponent, limit - text.utf8.count)))
        return text
    }
}

/// What the C library makes of a JSON number's text, turned into what ``JSONNumber`` promises for the same text:
/// - `Double` and `Float`: `strtod` and `strtof`, which round correctly. Where they return an infinity (with
///   `ERANGE`), `JSONNumber` throws `overflow`; where they return zero for a number that is not zero (with
///   `ERANGE`), `underflow`. A subnormal result is a value (gradual underflow, as `strtod` gives it). Values are
///   compared bit for bit, so the sign of zero counts.
/// - Integers: `strtoll` and `strtoull` with `errno`, on the exact integer built from the text by string
///   manipulation (`12.5e1` is `125`, never a detour through `Double`): a value with a fractional part is
///   `notAnInteger` whatever its size (`1.5`, `1e-400`, `1e30.5` would be too), an integer beyond `ERANGE` or the
///   type's range is `overflow`, and a negative number is `overflow` for an unsigned type, except `-0` (zero).
///
/// The C functions run once for a text, and the answer for each type is derived from theirs.
struct NumberOracle {
    let double: NumberOutcome
    let float: NumberOutcome
    /// `strtoll`'s answer: `.signed`, `.overflow` or `.notAnInteger`.
    private let signed: NumberOutcome
    /// `strtoull`'s answer with the sign checked: `.unsigned`, `.overflow` or `.notAnInteger`.
    private let unsigned: NumberOutcome

    /// - Parameter text: a JSON number (RFC 8259 grammar).
    init(_ text: String) {
        let exact = ExactDecimal(text)
        let (double, doubleError, doubleStop) = Self.call(text) { strtod($0, $1) }
        self.double = Self.floatingPoint(double, doubleError, doubleStop, exact, "strtod", NumberOutcome.value(_:))
        let (float, floatError, floatStop) = Self.call(text) { strtof($0, $1) }
        self.float = Self.floatingPoint(float, floatError, floatStop, exact, "strtof", NumberOutcome.value(_:))
        guard exact.isInteger else {
            (signed, unsigned) = (.notAnInteger, .notAnInteger)
            return
        }
        let magnitude = exact.integerMagnitude()
        let (signed, signedError, signedStop) = Self.call((exact.isNegative ? "-" : "") + magnitude) {
            strtoll($0, $1, 10)
        }
        if let signedStop {
            self.signed = .invalid("strtoll stopped at \(signedStop)")
        } else {
            self.signed = signedError == ERANGE ? .overflow : .signed(signed)
        }
        // strtoull negates a negative number (-1 is ULLONG_MAX): the sign is ours to check.
        let (unsigned, unsignedError, unsignedStop) = Self.call(magnitude) { strtoull($0, $1, 10) }
        if let unsignedStop {
            self.unsigned = .invalid("strtoull stopped at \(unsignedStop)")
        } else if unsignedError == ERANGE || (exact.isNegative && !exact.isZero) {
            self.unsigned = .overflow
        } else {
            self.unsigned = .unsigned(unsigned)
        }
    }

    /// The answer for an integer type: the 64-bit one's, `overflow` beyond the type's range.
    func integer<T: FixedWidthInteger>(as type: T.Type) -> NumberOutcome {
        let value: T?
        switch T.isSigned ? signed : unsigned {
        case .signed(let signed): value = T(exactly: signed)
        case .unsigned(let unsigned): value = T(exactly: unsigned)
        case let other: return other
        }
        guard let value else { return .overflow }
        return .value(value)
    }

    private static func floatingPoint<F: BinaryFloatingPoint>(
        _ value: F,
        _ error: Int32,
        _ stoppedAt: Int?,
        _ exact: ExactDecimal,
        _ function: String,
        _ render: (F) -> NumberOutcome
    ) -> NumberOutcome {
        if let stoppedAt { return .invalid("\(function) stopped at \(stoppedAt)") }
        if value.isInfinite {
            return error == ERANGE ? .overflow : .invalid("\(function) gave \(value) without ERANGE")
        }
        if value == 0, !exact.isZero {
            return error == ERANGE ? .underflow : .invalid("\(function) gave \(value) without ERANGE")
        }
        return render(value)
    }

    /// Calls a `strto…` function on `text` with `errno` cleared: its result, `errno`, and where it stopped if it
    /// did not read the whole text.
    private static func call<Value>(
        _ text: String,
        _ function: (UnsafePointer<CChar>, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Value
    ) -> (Value, Int32, stoppedAt: Int?) {
        text.withCString { start in
            var end: UnsafeMutablePointer<CChar>? = nil
            errno = 0
            let value = function(start, &end)
            let error = errno
            let consumed = end.map { UnsafePointer($0) - start } ?? 0
            return (value, error, consumed == strlen(start) ? nil : consumed)
        }
    }
}
