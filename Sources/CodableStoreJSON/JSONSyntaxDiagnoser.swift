/// Finds the exact position and a precise reason for an error yajl reported.
///
/// yajl's own reports are poor (about 30 bytes of flattened context, offsets into the last chunk that point after or
/// before the offending byte depending on the error). So when yajl fails, the reader runs this small strict JSON
/// grammar checker from the end of the last token yajl accepted (the *resume point*), with the parser state the
/// reader tracked from the events (the open containers and what was expected next). The error is always in the
/// separators and the one token after that point, and the checker finds it in a handful of bytes. It only runs on
/// the error path, so it is written for clarity rather than speed.
struct JSONSyntaxDiagnoser {
    /// What the grammar expects next.
    enum Expectation: Equatable {
        /// The top-level value (nothing read yet).
        case topValue
        /// A value or `]` (right after `[`).
        case arrayFirst
        /// A value (after `,` in an array).
        case arrayNext
        /// A key or `}` (right after `{`).
        case objectFirst
        /// A key (after `,` in an object).
        case objectNext
        /// `:` after a key.
        case colon
        /// A value (after `:`).
        case memberValue
        /// `,` or the end of the container, or the end of input at the top level.
        case afterValue
    }

    /// The bytes available from `windowStart`.
    var window: UnsafeRawBufferPointer
    var windowStart: Int
    /// Whether the window ends at the end of the input (or line, in JSON Lines).
    var atEnd: Bool
    /// `input` or `line`.
    var endName: String
    /// Whether several top-level values are separated by lines (changes the trailing-garbage wording only).
    var isJSONLines: Bool

    /// An error: absolute offset and reason.
    typealias Finding = (offset: Int, reason: String)

    /// Runs the grammar from `resumeOffset` with `expectation` and the open containers (`true` for an object,
    /// innermost last). `zeroNumberEnd` is the end offset of the last number token if it was `0` or `-0`, to
    /// recognize a leading zero (yajl reads `01` as the numbers `0` and `1`). Returns nil if no error is found.
    func diagnose(
        resumeOffset: Int,
        expectation: Expectation,
        containers: [Bool],
        zeroNumberEnd: Int
    ) -> Finding? {
        var index = resumeOffset - windowStart
        guard index >= 0, index <= window.count else { return nil }
        var state = expectation
        var stack = containers
        let count = window.count
        var sawAnything = false

        func offset(_ index: Int) -> Int { windowStart + index }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        while true {
            // Whitespace.
            while index < count {
                let byte = window[index]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { break }
                index += 1
            }
            guard index < count else {
                guard atEnd else { return nil }
                if state == .topValue && !sawAnything { return (offset(count), "empty input") }
                if state == .afterValue && stack.isEmpty { return nil }
                return (offset(count), "unexpected end of \(endName), " + expected(state, stack))
            }
            sawAnything = true
            let byte = window[index]
            let here = offset(index)

            switch state {
            case .afterValue:
                if stack.isEmpty {
                    if zeroNumberEnd == here, isDigit(byte) {
                        return (here, "leading zeros are not allowed")
                    }
                    let after = isJSONLines ? "after the value (one value per line)" : "after the top-level value"
                    return (here, JSONSyntaxError.unexpected(byte) + " " + after)
                }
                let isObject = stack[stack.count - 1]
                if byte == UInt8(ascii: ",") {
                    state = isObject ? .objectNext : .arrayNext
                    index += 1
                } else if byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    stack.removeLast()
                    state = .afterValue
                    index += 1
                } else if zeroNumberEnd == here, isDigit(byte) {
                    return (here, "leading zeros are not allowed")
                } else {
                    return (here, unexpected(byte, state, stack))
                }

            case .colon:
                guard byte == UInt8(ascii: ":") else { return (here, unexpected(byte, state, stack)) }
                state = .memberValue
                index += 1

            case .objectFirst, .objectNext:
                if byte == UInt8(ascii: "\"") {
                    switch lexString(from: index) {
                    case .failure(let finding): return finding
                    case .incomplete: return nil
                    case .complete(let next):
                        index = next
                        state = .colon
                    }
                } else if byte == UInt8(ascii: "}") {
                    guard state == .objectFirst else { return (here, "trailing comma before '}'") }
                    stack.removeLast()
                    state = .afterValue
                    index += 1
                } else {
                    return (here, unexpected(byte, state, stack))
                }

            case .topValue, .arrayFirst, .arrayNext, .memberValue:
                if byte == UInt8(ascii: "]") && (state == .arrayFirst || state == .arrayNext) {
                    guard state == .arrayFirst else { return (here, "trailing comma before ']'") }
                    stack.removeLast()
                    state = .afterValue
                    index += 1
                    continue
                }
                switch byte {
                case UInt8(ascii: "{"):
                    stack.append(true)
                    state = .objectFirst
                    index += 1
                case UInt8(ascii: "["):
                    stack.append(false)
                    state = .arrayFirst
                    index += 1
                case UInt8(ascii: "\""):
                    switch lexString(from: index) {
                    case .failure(let finding): return finding
                    case .incomplete: return nil
                    case .complete(let next):
                        index = next
                        state = .afterValue
                    }
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    switch lexNumber(from: index) {
                    case .failure(let finding): return finding
                    case .incomplete: return nil
                    case .complete(let next):
                        index = next
                        state = .afterValue
                    }
                case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                    switch lexLiteral(from: index) {
                    case .failure(let finding): return finding
                    case .incomplete: return nil
                    case .complete(let next):
                        index = next
                        state = .afterValue
                    }
                default:
                    return (here, unexpected(byte, state, stack))
                }
            }
        }
    }

    // MARK: - Tokens

    private enum Lexed {
        case complete(Int)
        case incomplete
        case failure(Finding)
    }

    private func lexString(from start: Int) -> Lexed {
        var index = start + 1
        let count = window.count
        while index < count {
            let byte = window[index]
            switch byte {
            case UInt8(ascii: "\""):
                return .complete(index + 1)
            case UInt8(ascii: "\\"):
                guard index + 1 < count else { return endInString(count) }
                let escaped = window[index + 1]
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    var digit = index + 2
                    while digit < index + 6 {
                        guard digit < count else { return endInString(count) }
                        guard window[digit].isHexDigit else {
                            return .failure((windowStart + index, "invalid escape, expected 4 hex digits after '\\u'"))
                        }
                        digit += 1
                    }
                    index = digit
                default:
                    return .failure((windowStart + index, "invalid escape after '\\'"))
                }
            case 0x00..<0x20:
                return .failure((windowStart + index, "unescaped \(JSONSyntaxError.describe(byte: byte)) in string"))
            default:
                index += 1
            }
        }
        return endInString(count)
    }

    private func endInString(_ count: Int) -> Lexed {
        atEnd ? .failure((windowStart + count, "unexpected end of \(endName) in string")) : .incomplete
    }

    private func lexNumber(from start: Int) -> Lexed {
        var index = start
        let count = window.count
        func isDigit(_ index: Int) -> Bool {
            index < count && window[index] >= UInt8(ascii: "0") && window[index] <= UInt8(ascii: "9")
        }
        func need(_ what: String) -> Lexed {
            if index >= count {
                return atEnd ? .failure((windowStart + index, "unexpected end of \(endName), \(what)")) : .incomplete
            }
            return .failure((windowStart + index, JSONSyntaxError.unexpected(window[index]) + ", \(what)"))
        }
        if window[index] == UInt8(ascii: "-") {
            index += 1
            guard isDigit(index) else { return need("expected a digit after '-'") }
        }
        if window[index] == UInt8(ascii: "0") {
            index += 1
            if isDigit(index) { return .failure((windowStart + index, "leading zeros are not allowed")) }
        } else {
            while isDigit(index) { index += 1 }
        }
        if index < count, window[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { return need("expected a digit after the decimal point") }
            while isDigit(index) { index += 1 }
        }
        if index < count, window[index] == UInt8(ascii: "e") || window[index] == UInt8(ascii: "E") {
            index += 1
            if index < count, window[index] == UInt8(ascii: "+") || window[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard isDigit(index) else { return need("expected a digit in the exponent") }
            while isDigit(index) { index += 1 }
        }
        if index >= count && !atEnd { return .incomplete }
        return .complete(index)
    }

    private func lexLiteral(from start: Int) -> Lexed {
        let literal: [UInt8]
        switch window[start] {
        case UInt8(ascii: "t"): literal = Array("true".utf8)
        case UInt8(ascii: "f"): literal = Array("false".utf8)
        default: literal = Array("null".utf8)
        }
        let count = window.count
        for position in 1..<literal.count {
            let index = start + position
            guard index < count else {
                guard atEnd else { return .incomplete }
                let text = String(decoding: window[start..<index], as: UTF8.self)
                return .failure((windowStart + start, "unexpected end of \(endName) in literal '\(text)'"))
            }
            if window[index] != literal[position] {
                var end = index
                if window[index].isLetter { end += 1 }
                let text = String(decoding: window[start..<end], as: UTF8.self)
                let name = String(decoding: literal, as: UTF8.self)
                return .failure((windowStart + start, "invalid literal '\(text)', expected '\(name)'"))
            }
        }
        return .complete(start + literal.count)
    }

    // MARK: - Wording

    private func expected(_ state: Expectation, _ stack: [Bool]) -> String {
        switch state {
        case .topValue: return "expected a JSON value"
        case .arrayFirst: return "expected a value or ']'"
        case .arrayNext, .memberValue: return "expected a value"
        case .objectFirst: return "expected a string key or '}'"
        case .objectNext: return "expected a string key"
        case .colon: return "expected ':' after the key"
        case .afterValue:
            guard let isObject = stack.last else { return "expected the end of \(endName)" }
            return isObject ? "expected ',' or '}'" : "expected ',' or ']'"
        }
    }

    private func unexpected(_ byte: UInt8, _ state: Expectation, _ stack: [Bool]) -> String {
        switch (byte, state) {
        case (UInt8(ascii: "'"), .objectFirst), (UInt8(ascii: "'"), .objectNext), (UInt8(ascii: "'"), .topValue),
            (UInt8(ascii: "'"), .arrayFirst), (UInt8(ascii: "'"), .arrayNext), (UInt8(ascii: "'"), .memberValue):
            return "single-quoted strings are not allowed, use double quotes"
        case (UInt8(ascii: "/"), _):
            return "comments are not allowed"
        default:
            return JSONSyntaxError.unexpected(byte) + ", " + expected(state, stack)
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }

    fileprivate var isLetter: Bool {
        (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
