import CodableStoreJSON

// Shared by the JSON tests and the fuzzer (Fuzz/Sources/StoreFuzzer/NumberDifferential.swift is a symbolic link to
// this file): it uses the public API of CodableStoreJSON alone.

/// Every conversion ``JSONNumber`` offers, and the same conversions read straight from a ``JSONTape``, compared with
/// what ``NumberOracle`` (the C library) makes of the same text.
///
/// ```swift
/// let mismatches = NumberDifferential.mismatches(["-18446744073709551616", "1e400", "12.5e1"])
/// // [] when every conversion agrees; otherwise one line per conversion that does not
/// ```
enum NumberDifferential {
    /// One conversion: what it is called, the type its errors name, the oracle's answer, and the conversion itself
    /// on a number and on a tape's node, as outcomes.
    struct Conversion: Sendable {
        let name: String
        let expected: @Sendable (NumberOracle) -> NumberOutcome
        let onNumber: @Sendable (JSONNumber) -> NumberOutcome
        let onTape: @Sendable (JSONTape, JSONTape.Index) -> NumberOutcome
    }

    /// `double()`, `float()`, `int64()`, `uint64()` and `integer(as:)` for every fixed-width integer type.
    static let conversions: [Conversion] = [
        conversion(
            "double()", Double.self, \.double, NumberOutcome.value(_:),
            { number throws(JSONNumberError) in try number.double() },
            { tape, node throws(JSONNumberError) in try tape.double(at: node) }),
        conversion(
            "float()", Float.self, \.float, NumberOutcome.value(_:),
            { number throws(JSONNumberError) in try number.float() },
            { tape, node throws(JSONNumberError) in try tape.float(at: node) }),
        conversion(
            "int64()", Int64.self, { $0.integer(as: Int64.self) }, NumberOutcome.value(_:),
            { number throws(JSONNumberError) in try number.int64() },
            { tape, node throws(JSONNumberError) in try tape.int64(at: node) }),
        conversion(
            "uint64()", UInt64.self, { $0.integer(as: UInt64.self) }, NumberOutcome.value(_:),
            { number throws(JSONNumberError) in try number.uint64() },
            { tape, node throws(JSONNumberError) in try tape.uint64(at: node) }),
        integer(Int8.self), integer(Int16.self), integer(Int32.self), integer(Int64.self), integer(Int.self),
        integer(UInt8.self), integer(UInt16.self), integer(UInt32.self), integer(UInt64.self), integer(UInt.self),
    ]

    /// `double()`, `float()`, `int64()` and `uint64()`, before the `integer(as:)` of each width in ``conversions``.
    private static let directConversionCount = 4

    private static func integer<T: FixedWidthInteger & Sendable>(_ type: T.Type) -> Conversion {
        conversion(
            "integer(as: \(T.self))", type, { $0.integer(as: type) }, NumberOutcome.value(_:),
            { number throws(JSONNumberError) in try number.integer(as: type) },
            { tape, node throws(JSONNumberError) in try tape.integer(at: node, as: type) })
    }

    private static func conversion<T>(
        _ name: String,
        _ type: T.Type,
        _ expected: @escaping @Sendable (NumberOracle) -> NumberOutcome,
        _ render: @escaping @Sendable (T) -> NumberOutcome,
        _ onNumber: @escaping @Sendable (JSONNumber) throws(JSONNumberError) -> T,
        _ onTape: @escaping @Sendable (JSONTape, JSONTape.Index) throws(JSONNumberError) -> T?
    ) -> Conversion {
        let typeName = "\(T.self)"
        /// The value, or the class of the error when it names the number's text and the requested type.
        @Sendable func outcome(_ text: () -> String, _ body: () throws(JSONNumberError) -> T?) -> NumberOutcome {
            do throws(JSONNumberError) {
                guard let value = try body() else { return .invalid("nil, as if the node were not a number") }
                return render(value)
            } catch {
                guard error.text == text(), error.type == typeName else {
                    return .invalid("\(error.reason) naming \(error.text) as \(error.type)")
                }
                switch error.reason {
                case .overflow: return .overflow
                case .underflow: return .underflow
                case .notAnInteger: return .notAnInteger
                }
            }
        }
        return Conversion(
            name: name,
            expected: expected,
            onNumber: { number in outcome({ number.text }) { () throws(JSONNumberError) in try onNumber(number) } },
            onTape: { tape, node in
                outcome({ tape.number(at: node)?.text ?? "" }) { () throws(JSONNumberError) in
                    try onTape(tape, node)
                }
            })
    }

    /// The conversions of `texts` that disagree with the C library, one line each (`text: conversion: JSONNumber
    /// gave …, the C library …`), read from ``JSONNumber`` and from a tape of all of them; empty when all agree.
    ///
    /// - Parameter texts: JSON numbers; a text that is not one is reported too.
    static func mismatches(_ texts: [String]) -> [String] {
        var lines: [String] = []
        var numbers: [JSONNumber] = []
        for text in texts {
            guard let number = JSONNumber(text) else {
                lines.append("\(text): not a JSON number for JSONNumber(_:)")
                continue
            }
            numbers.append(number)
        }
        let tape: JSONTape
        do {
            tape = try JSONTape.parse("[" + numbers.map(\.text).joined(separator: ",") + "]")
        } catch {
            return lines + ["the tape of \(numbers.count) numbers does not parse: \(error)"]
        }
        for (position, (number, node)) in zip(numbers, tape.elements(of: tape.root)).enumerated() {
            let text = number.text
            let oracle = NumberOracle(text)
            for (index, conversion) in conversions.enumerated() {
                let expected = conversion.expected(oracle)
                let direct = conversion.onNumber(number)
                if direct != expected {
                    lines.append("\(text): \(conversion.name): JSONNumber gave \(direct), the C library \(expected)")
                }
                // The tape's `integer(at:as:)` hands the same bytes to the same function for every width: one width
                // per number, in turn, keeps the suite fast. Its other conversions are checked for every number.
                let widthIndex = index - directConversionCount
                guard widthIndex < 0 || widthIndex == position % (conversions.count - directConversionCount) else {
                    continue
                }
                let inPlace = conversion.onTape(tape, node)
                if inPlace != direct {
                    lines.append("\(text): \(conversion.name): the tape gave \(inPlace), JSONNumber \(direct)")
                }
            }
        }
        return lines
    }

    /// The oracle's outcome of every conversion of `text`, for counting which classes a set of numbers reaches.
    static func expectedOutcomes(_ text: String) -> [(conversion: String, outcome: NumberOutcome)] {
        let oracle = NumberOracle(text)
        return conversions.map { ($0.name, $0.expected(oracle)) }
    }
}
