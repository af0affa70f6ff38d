import Testing

@testable import CodableStoreJSON

@Suite("JSON numbers")
struct JSONNumberTests {
    private func number(_ text: String) throws -> JSONNumber {
        try #require(JSONNumber(text))
    }

    @Test(arguments: [
        ("0", Int64(0)), ("-0", 0), ("7", 7), ("-7", -7),
        ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min),
        ("1e2", 100), ("1E+2", 100), ("100.0", 100), ("100.00e0", 100), ("12.5e1", 125), ("-1.5e1", -15),
        ("0.0", 0), ("0e999999999", 0), ("92233720368547758.07e2", Int64.max), ("10000000000e-10", 1),
    ])
    func int64(_ text: String, _ value: Int64) throws {
        #expect(try number(text).int64() == value)
    }

    @Test(arguments: [
        ("9223372036854775808", JSONNumberError.Reason.overflow),
        ("-9223372036854775809", .overflow),
        ("123456789012345678901234567890", .overflow),
        ("1e19", .overflow), ("1e400", .overflow), ("-1e999999999999", .overflow),
        ("1.5", .notAnInteger), ("1e-1", .notAnInteger), ("-0.5", .notAnInteger), ("1e-400", .notAnInteger),
        ("123456789012345678901234567890e-30", .notAnInteger),
    ])
    func int64Failures(_ text: String, _ reason: JSONNumberError.Reason) throws {
        let error = try #require(throws: JSONNumberError.self) { try number(text).int64() }
        #expect(error.reason == reason)
        #expect(error.text == text)
        #expect(error.type == "Int64")
    }

    @Test func uint64() throws {
        #expect(try number("18446744073709551615").uint64() == UInt64.max)
        #expect(try number("1.8446744073709551615e19").uint64() == UInt64.max)
        #expect(try number("-0").uint64() == 0)
        #expect(throws: JSONNumberError(text: "18446744073709551616", type: "UInt64", reason: .overflow)) {
            try number("18446744073709551616").uint64()
        }
        #expect(throws: JSONNumberError(text: "-1", type: "UInt64", reason: .overflow)) { try number("-1").uint64() }
    }

    @Test func otherIntegerTypes() throws {
        #expect(try number("127").integer(as: Int8.self) == 127)
        #expect(try number("-128").integer(as: Int8.self) == -128)
        #expect(try number("255").integer(as: UInt8.self) == 255)
        #expect(try number("-2147483648").integer(as: Int32.self) == Int32.min)
        #expect(try number("4294967295").integer(as: UInt32.self) == UInt32.max)
        #expect(try number("-9223372036854775808").integer(as: Int.self) == Int.min)
        #expect(throws: JSONNumberError(text: "128", type: "Int8", reason: .overflow)) {
            try number("128").integer(as: Int8.self)
        }
        #expect(throws: JSONNumberError(text: "-129", type: "Int8", reason: .overflow)) {
            try number("-129").integer(as: Int8.self)
        }
        #expect(throws: JSONNumberError(text: "-1", type: "UInt8", reason: .overflow)) {
            try number("-1").integer(as: UInt8.self)
        }
        #expect(throws: JSONNumberError(text: "2.5", type: "UInt16", reason: .notAnInteger)) {
            try number("2.5").integer(as: UInt16.self)
        }
    }

    @Test(arguments: [
        ("0", 0.0), ("-0", -0.0), ("1.5", 1.5), ("-0.5e-3", -0.0005), ("0.1", 0.1), ("1e22", 1e22), ("1e23", 1e23),
        ("9007199254740993", 9_007_199_254_740_992), ("123456789012345678901234567890", 1.2345678901234568e29),
        ("1.7976931348623157e308", Double.greatestFiniteMagnitude), ("4.9e-324", Double.leastNonzeroMagnitude),
        ("2.2250738585072014e-308", 2.2250738585072014e-308), ("0.000001", 1e-6), ("3.141592653589793", Double.pi),
        // 20 digits or more that wrap around a UInt64 to a small significand (2^64 to 0) are not read as it.
        ("-18446744073709551616", -18_446_744_073_709_551_616), ("18446744073709551616.0", 18_446_744_073_709_551_616),
        ("36893488147419103232", 36_893_488_147_419_103_232), ("-1844674407370955161.6", -1_844_674_407_370_955_161.6),
        ("0.18446744073709551616", 0.18446744073709551616), ("92233720368547758080", 92_233_720_368_547_758_080),
        // Leading zeros are not significant digits: still exact on the fast path.
        ("0.0000000000000000000012", 1.2e-21), ("-0.00000000000000000000", -0.0),
    ])
    func double(_ text: String, _ value: Double) throws {
        let result = try number(text).double()
        #expect(result == value)
        #expect(result.sign == value.sign)
    }

    @Test func doubleFailures() throws {
        #expect(throws: JSONNumberError(text: "1e400", type: "Double", reason: .overflow)) {
            try number("1e400").double()
        }
        #expect(throws: JSONNumberError(text: "-1.8e308", type: "Double", reason: .overflow)) {
            try number("-1.8e308").double()
        }
        #expect(throws: JSONNumberError(text: "1e-400", type: "Double", reason: .underflow)) {
            try number("1e-400").double()
        }
        // Zero written small is still zero.
        #expect(try number("0e-400").double() == 0)
        #expect(try number("0.000e5").double() == 0)
    }

    @Test func float() throws {
        #expect(try number("1.5").float() == 1.5)
        #expect(try number("3.4028235e38").float() == Float.greatestFiniteMagnitude)
        #expect(throws: JSONNumberError(text: "1e39", type: "Float", reason: .overflow)) { try number("1e39").float() }
        #expect(throws: JSONNumberError(text: "1e-50", type: "Float", reason: .underflow)) {
            try number("1e-50").float()
        }
    }

    @Test func textForDecimal() throws {
        let value = try number("-123456789012345678901234567890.123456789e-5")
        #expect(value.decimalText == "-123456789012345678901234567890.123456789e-5")
        #expect(!value.isInteger)
        #expect(try number("12").isInteger)
    }

    @Test func descriptions() {
        #expect(
            JSONNumberError(text: "1e400", type: "Double", reason: .overflow).description
                == "number 1e400 does not fit in Double"
        )
        #expect(
            JSONNumberError(text: "1.5", type: "Int64", reason: .notAnInteger).description
                == "number 1.5 is not an integer, it does not fit in Int64"
        )
        #expect(
            JSONNumberError(text: "1e-400", type: "Double", reason: .underflow).description
                == "number 1e-400 does not fit in Double (too small, it would round to zero)"
        )
    }

    @Test(arguments: ["", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x1", "1 ", "NaN", "Infinity", "--1", "1.2.3"])
    func invalidText(_ text: String) {
        #expect(JSONNumber(text) == nil)
    }

    @Test func numbersFromATape() throws {
        let tape = try JSONTape.parse("[18446744073709551615, -1, 2.5]")
        let values = tape.elements(of: tape.root).map { tape.number(at: $0)! }
        #expect(try values[0].uint64() == UInt64.max)
        #expect(try values[1].int64() == -1)
        #expect(try values[2].double() == 2.5)
        #expect(tape.number(at: tape.root) == nil)
    }

    /// Plain digits are read in place: the same value, or the same error, as the general path for every form.
    @Test func integersReadInPlaceAgreeWithTheGeneralPath() throws {
        var texts = [
            "0", "-0", "7", "-7", "10", "999999999999999999", "1000000000000000000", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "1e2", "100.0", "1.5", "12345678901234567", "0.0",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let digits = Int(state >> 60) + 1  // 1 to 16, and longer below
            var text = String(state % 9 + 1)
            var more = state
            for _ in 1..<digits {
                more = more &* 6_364_136_223_846_793_005 &+ 1
                text += String(more >> 60 % 10)
            }
            switch state % 5 {
            case 0: text = "-" + text
            case 1: text += String(state % 7)  // a digit more
            case 2: text += "3" + String(repeating: "9", count: Int(state % 5))
            default: break
            }
            texts.append(text)
        }
        let tape = try JSONTape.parse("[" + texts.joined(separator: ",") + "]")
        for (text, node) in zip(texts, tape.elements(of: tape.root)) {
            let expected = Result { try number(text).int64() }
            let read = Result { try tape.int64(at: node) }
            switch (expected, read) {
            case (.success(let a), .success(let b?)): #expect(a == b, "\(text)")
            case (.failure(let a as JSONNumberError), .failure(let b as JSONNumberError)): #expect(a == b, "\(text)")
            default: Issue.record("\(text): \(expected) against \(read)")
            }
        }
    }

    @Test func conversionsStraightFromTheTape() throws {
        let tape = try JSONTape.parse(#"[18446744073709551615, -128, 2.5, "7", 1e400]"#)
        let values = Array(tape.elements(of: tape.root))
        #expect(try tape.uint64(at: values[0]) == UInt64.max)
        #expect(throws: JSONNumberError(text: "18446744073709551615", type: "Int64", reason: .overflow)) {
            try tape.int64(at: values[0])
        }
        #expect(try tape.integer(at: values[1], as: Int8.self) == -128)
        #expect(try tape.double(at: values[2]) == 2.5)
        #expect(try tape.float(at: values[2]) == 2.5)
        #expect(try tape.int64(at: values[3]) == nil)
        #expect(throws: JSONNumberError(text: "1e400", type: "Double", reason: .overflow)) {
            try tape.double(at: values[4])
        }
    }
}
