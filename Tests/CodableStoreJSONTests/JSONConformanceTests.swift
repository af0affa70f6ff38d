import Foundation
import Testing

@testable import CodableStoreJSON

/// The `Fixtures/json/pass` and `Fixtures/json/fail` corpus, parsed whole and in every chunking.
@Suite("JSON conformance corpus")
struct JSONConformanceTests {
    /// The exact error of every fail file: offset, line, column and reason.
    static let expectedErrors: [String: ErrorSummary] = [
        "above-10ffff.json": .init(2, 1, 3, "UTF-8 sequence above U+10FFFF 0xF4 0x90"),
        "bad-literal.json": .init(1, 1, 2, "invalid literal 'nul', expected 'null'"),
        "bad-unicode-escape.json": .init(2, 1, 3, "invalid escape '\\u12G', expected 4 hex digits"),
        "bom-only.json": .init(3, 1, 1, "empty input"),
        "bom-twice.json": .init(3, 1, 1, "unexpected byte 0xEF, expected a JSON value"),
        "comment-block.json": .init(0, 1, 1, "comments are not allowed"),
        "comment-line.json": .init(3, 1, 4, "comments are not allowed"),
        "deep-513.json": .init(512, 1, 513, "nesting deeper than 512"),
        "empty.json": .init(0, 1, 1, "empty input"),
        "encoded-surrogate.json": .init(2, 1, 3, "UTF-8 encoded surrogate 0xED 0xA0"),
        "exponent-no-digits.json": .init(3, 1, 4, "unexpected character ']', expected a digit in the exponent"),
        "extra-close.json": .init(3, 1, 4, "unexpected character ']' after the top-level value"),
        "form-feed-in-string.json": .init(3, 1, 4, "unescaped form feed (0x0C) in string"),
        "form-feed.json": .init(3, 1, 4, "unexpected form feed (0x0C), not JSON whitespace"),
        "hex-number.json": .init(2, 1, 3, "unexpected character 'x', expected ',' or ']'"),
        "high-then-non-low.json": .init(2, 1, 3, "lone surrogate \\uD800"),
        "high-then-other-escape.json": .init(2, 1, 3, "lone surrogate \\uD800"),
        "infinity.json": .init(2, 1, 3, "unexpected character 'I', expected a digit after '-'"),
        "invalid-escape.json": .init(2, 1, 3, "invalid escape '\\x'"),
        "invalid-lead-byte.json": .init(2, 1, 3, "invalid UTF-8 byte 0xFF"),
        "leading-dot.json": .init(1, 1, 2, "unexpected character '.', expected a value or ']'"),
        "leading-zero-negative.json": .init(3, 1, 4, "leading zeros are not allowed"),
        "leading-zero.json": .init(2, 1, 3, "leading zeros are not allowed"),
        "lone-continuation.json": .init(2, 1, 3, "unexpected UTF-8 continuation byte 0x80"),
        "lone-high-surrogate.json": .init(2, 1, 3, "lone surrogate \\uD800"),
        "lone-low-surrogate.json": .init(2, 1, 3, "lone surrogate \\uDC00"),
        "minus-alone.json": .init(2, 1, 3, "unexpected character ']', expected a digit after '-'"),
        "mismatched-bracket.json": .init(2, 1, 3, "unexpected character '}', expected ',' or ']'"),
        "missing-colon.json": .init(5, 1, 6, "unexpected character '1', expected ':' after the key"),
        "missing-comma.json": .init(3, 1, 4, "unexpected character '2', expected ',' or ']'"),
        "multiline-error.json": .init(29, 3, 17, "trailing comma before ']'"),
        "nan.json": .init(1, 1, 2, "unexpected character 'N', expected a value or ']'"),
        "newline-in-string.json": .init(3, 1, 4, "unescaped newline (0x0A) in string"),
        "non-ascii-outside-string.json": .init(1, 1, 2, "unexpected byte 0xC3, expected a value or ']'"),
        "nul-byte-in-string.json": .init(3, 1, 4, "unescaped NUL (0x00) in string"),
        "number-key.json": .init(1, 1, 2, "unexpected character '1', expected a string key or '}'"),
        "overlong-2-byte.json": .init(2, 1, 3, "invalid UTF-8 byte 0xC0 (overlong encoding)"),
        "overlong-3-byte.json": .init(2, 1, 3, "overlong UTF-8 sequence 0xE0 0x80"),
        "overlong-4-byte.json": .init(2, 1, 3, "overlong UTF-8 sequence 0xF0 0x80"),
        "plus-sign.json": .init(1, 1, 2, "unexpected character '+', expected a value or ']'"),
        "reversed-surrogates.json": .init(2, 1, 3, "lone surrogate \\uDC00"),
        "single-quotes.json": .init(1, 1, 2, "single-quoted strings are not allowed, use double quotes"),
        "tab-in-string.json": .init(3, 1, 4, "unescaped tab (0x09) in string"),
        "trailing-comma-array.json": .init(6, 1, 7, "trailing comma before ']'"),
        "trailing-comma-object.json": .init(8, 1, 9, "trailing comma before '}'"),
        "trailing-garbage.json": .init(4, 1, 5, "unexpected character 'x' after the top-level value"),
        "truncated-literal.json": .init(1, 1, 2, "unexpected end of input in literal 'tru'"),
        "truncated-number.json": .init(3, 1, 4, "unexpected end of input, expected a digit after the decimal point"),
        "truncated-object.json": .init(11, 1, 12, "unexpected end of input, expected ',' or ']'"),
        "truncated-string.json": .init(5, 1, 6, "unexpected end of input in string"),
        "truncated-utf8.json": .init(2, 1, 3, "truncated UTF-8 sequence 0xE2 0x82 before '\"'"),
        "two-values.json": .init(3, 1, 4, "unexpected character '{' after the top-level value"),
        "unquoted-key.json": .init(1, 1, 2, "unexpected character 'a', expected a string key or '}'"),
        "uppercase-literal.json": .init(1, 1, 2, "unexpected character 'T', expected a value or ']'"),
        "vertical-tab.json": .init(3, 1, 4, "unexpected vertical tab (0x0B), not JSON whitespace"),
        "whitespace-only.json": .init(4, 2, 3, "empty input"),
    ]

    @Test("every fail file has an expected error")
    func everyFailFileIsListed() {
        #expect(Set(JSONFixture.failNames) == Set(Self.expectedErrors.keys))
        #expect(JSONFixture.passNames.count >= 20)
    }

    @Test("pass files parse, with the same tape in every chunking", arguments: JSONFixture.passNames)
    func passFile(_ name: String) throws {
        let bytes = try JSONFixture.bytes("json/pass/\(name)")
        let expected = try parseTape(bytes)
        #expect(!expected.isEmpty)
        for chunking in Chunking.all.dropFirst() {
            let tape = try parseTape(bytes, chunking: chunking)
            #expect(tape == expected, "\(chunking)")
        }
    }

    @Test("fail files fail at the same place, for the same reason, in every chunking", arguments: JSONFixture.failNames)
    func failFile(_ name: String) throws {
        let bytes = try JSONFixture.bytes("json/fail/\(name)")
        let error = try #require(syntaxError(bytes))
        #expect(ErrorSummary(error) == Self.expectedErrors[name], "\(error)")
        for chunking in Chunking.all.dropFirst() {
            let other = try #require(syntaxError(bytes, chunking: chunking), "\(chunking)")
            #expect(ErrorSummary(other) == ErrorSummary(error), "\(chunking)")
        }
    }

    // MARK: - What the pass files contain

    @Test func bigNumbersArriveAsText() throws {
        let tape = try parseTape(try JSONFixture.bytes("json/pass/big-integers.json"))
        let texts = tape.elements(of: tape.root).map { tape.number(at: $0)?.text }
        #expect(texts == ["123456789012345678901234567890", "-123456789012345678901234567890", "18446744073709551616"])

        let huge = try parseTape(try JSONFixture.bytes("json/pass/huge-exponent.json"))
        #expect(
            huge.elements(of: huge.root).map { huge.number(at: $0)?.text } == ["1e400", "-1E+400", "1.5e999999999999"]
        )

        let bounds = try parseTape(try JSONFixture.bytes("json/pass/int64-bounds.json"))
        let numbers = bounds.elements(of: bounds.root).compactMap { bounds.number(at: $0) }
        #expect(try numbers[0].int64() == Int64.min)
        #expect(try numbers[1].int64() == Int64.max)
        #expect(try numbers[2].uint64() == UInt64.max)
        #expect(throws: JSONNumberError.self) { try numbers[3].int64() }

        let tiny = try parseTape(try JSONFixture.bytes("json/pass/tiny-exponent.json"))
        #expect(tiny.elements(of: tiny.root).map { tiny.number(at: $0)?.text } == ["1e-400", "4.9e-324", "-2.5E-999"])
    }

    @Test func stringsAreDecoded() throws {
        let pairs = try parseTape(try JSONFixture.bytes("json/pass/surrogate-pairs.json"))
        #expect(pairs.elements(of: pairs.root).map { pairs.string(at: $0) } == ["😀", "𝄞", "a\u{10FFFF}b"])

        let nul = try parseTape(try JSONFixture.bytes("json/pass/nul-escape.json"))
        let members = nul.members(of: nul.root).map { (nul.string(at: $0.key)!, nul.string(at: $0.value)!) }
        #expect(members.map(\.0) == ["a\u{0}b", "z"])
        #expect(members.map(\.1) == ["\u{0}", "x\u{0}"])
        #expect(nul.value(forKey: "a\u{0}b", in: nul.root).flatMap(nul.string(at:)) == "\u{0}")

        let unicode = try parseTape(try JSONFixture.bytes("json/pass/unicode.json"))
        #expect(unicode.value(forKey: "emoji", in: unicode.root).flatMap(unicode.string(at:)) == "😀")
        #expect(unicode.value(forKey: "max", in: unicode.root).flatMap(unicode.string(at:)) == "\u{10FFFF}")
        #expect(
            unicode.value(forKey: "escapes", in: unicode.root).flatMap(unicode.string(at:))
                == "\u{8}\u{C}\n\r\t\"\\/é€"
        )

        let del = try parseTape(try JSONFixture.bytes("json/pass/del-char.json"))
        #expect(del.string(at: del.element(0, of: del.root)!) == "a\u{7F}b")
    }

    @Test func byteOrderMarkIsSkipped() throws {
        let tape = try parseTape(try JSONFixture.bytes("json/pass/bom.json"))
        #expect(tape.jsonText(of: tape.root) == #"{"bom":true}"#)
        // Offsets count the byte order mark.
        #expect(tape.byteOffset(of: tape.root) == 3)
    }

    @Test func nestingLimitIsConfigurable() throws {
        let deep = try JSONFixture.bytes("json/pass/deep-512.json")
        #expect(try parseTape(deep).nodeCount == 512)
        let error = try #require(syntaxError(deep, maximumDepth: 10))
        #expect(ErrorSummary(error) == .init(10, 1, 11, "nesting deeper than 10"))
        #expect(try parseTape(Array("[[[]]]".utf8), maximumDepth: 3).nodeCount == 3)
    }
}

/// yajl 2.1 alone, to show that each defect the reader fixes is real (if yajl changes, these tell).
@Suite("yajl 2.1 defects")
struct YajlDefectTests {
    @Test func formFeedAndVerticalTabAreWhitespace() {
        #expect(YajlProbe.run(Array("[1,\u{C}2]".utf8), number: true).accepted)
        #expect(YajlProbe.run(Array("[1,\u{B}2]".utf8), number: true).accepted)
        #expect(syntaxError("[1,\u{C}2]") != nil)
    }

    @Test func invalidUTF8Passes() {
        for bytes: [UInt8] in [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE0, 0x80, 0xAF]] {
            let document = [0x22] + bytes + [0x22]
            #expect(YajlProbe.run(document).accepted, "\(bytes)")
            #expect(syntaxError(document) != nil, "\(bytes)")
        }
    }

    @Test func surrogateEscapesAreMangled() {
        // A lone high surrogate becomes "?", a lone low one invalid UTF-8, a high one eats the next escape.
        #expect(YajlProbe.run(Array(#""\uD800""#.utf8)) == .init(accepted: true, events: ["string(3F)"]))
        #expect(YajlProbe.run(Array(#""\uDC00""#.utf8)) == .init(accepted: true, events: ["string(ED B0 80)"]))
        #expect(YajlProbe.run(Array(#""\uD800\u0041""#.utf8)).accepted)
        #expect(syntaxError(#""\uD800\u0041""#) != nil)
    }

    @Test func numbersAreLostOrWrongWithoutTheNumberCallback() {
        let both = { (text: String) in YajlProbe.run(Array(text.utf8), integer: true, double: true) }
        #expect(!both("123456789012345678901234567890").accepted)
        #expect(!both("1e400").accepted)
        #expect(!both("-9223372036854775808").accepted)
        #expect(both("1e-400") == .init(accepted: true, events: ["double(0.0)"]))
        // Only one of the two callbacks: the other kind of number is dropped silently.
        #expect(YajlProbe.run(Array("[1.5, 2]".utf8), integer: true) == .init(accepted: true, events: ["integer(2)"]))
        #expect(YajlProbe.run(Array("[1.5, 2]".utf8), double: true) == .init(accepted: true, events: ["double(1.5)"]))
        // With the number callback, everything arrives as text: what the reader uses.
        #expect(
            YajlProbe.run(Array("[1e400, -9223372036854775808]".utf8), number: true)
                == .init(accepted: true, events: ["number(1e400)", "number(-9223372036854775808)"])
        )
    }

    @Test func noNestingLimit() {
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect(YajlProbe.run(Array(deep.utf8)).accepted)
        #expect(syntaxError(deep) != nil)
    }
}
