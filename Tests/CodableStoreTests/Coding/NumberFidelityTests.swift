import CodableStore
import Foundation
import Testing

/// One attribute of every integer width, plus a `Double`, so that each can be decoded on its own.
@Entity final class NumberBox {
    var id: Int
    var int8: Int8?
    var int16: Int16?
    var int32: Int32?
    var int64: Int64?
    var uint: UInt?
    var uint8: UInt8?
    var uint16: UInt16?
    var uint32: UInt32?
    var uint64: UInt64?
    var double: Double?
    var float: Float?
    var decimal: Decimal?

    static let identity = Identity(\NumberBox.id)

    init(id: Int) { self.id = id }
}

/// An entity keyed by a narrow integer, to check identities of every width.
@Entity final class SmallKeyed {
    var key: Int16
    var name: String?

    static let identity = Identity(\SmallKeyed.key)

    init(key: Int16) { self.key = key }
}

/// Numbers are never silently changed: an integer attribute takes a number only when its value is an integer in
/// the attribute type's range, and a different number is never stored as a rounded neighbour.
@Suite struct NumberFidelityTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let field: String
        let json: String
        /// What the column holds afterwards, as the sqlite3 shell prints it; nil when decoding must fail.
        let stored: String?
        var testDescription: String { "\(field): \(json) → \(stored ?? "error")" }
    }

    static let cases: [Case] = [
        // Integers written as integers, at both ends of each range.
        Case(field: "int8", json: "-128", stored: "-128"), Case(field: "int8", json: "127", stored: "127"),
        Case(field: "int8", json: "128", stored: nil), Case(field: "int8", json: "-129", stored: nil),
        Case(field: "int16", json: "32767", stored: "32767"), Case(field: "int16", json: "32768", stored: nil),
        Case(field: "int32", json: "-2147483648", stored: "-2147483648"),
        Case(field: "int32", json: "2147483648", stored: nil),
        Case(field: "int64", json: "-9223372036854775808", stored: "-9223372036854775808"),
        Case(field: "int64", json: "-9223372036854775809", stored: nil),
        Case(field: "int64", json: "9223372036854775808", stored: nil),
        Case(field: "uint8", json: "255", stored: "255"), Case(field: "uint8", json: "256", stored: nil),
        Case(field: "uint8", json: "-1", stored: nil), Case(field: "uint16", json: "65536", stored: nil),
        Case(field: "uint32", json: "4294967295", stored: "4294967295"),
        Case(field: "uint32", json: "4294967296", stored: nil),
        // UInt64 is stored as its bit pattern (see AttributeValue).
        Case(field: "uint64", json: "18446744073709551615", stored: "X'FFFFFFFFFFFFFFFF'"),
        Case(field: "uint64", json: "18446744073709551616", stored: nil),
        Case(field: "uint", json: "-1", stored: nil),
        // Other notations of integer values are integers, as JSONDecoder reads them.
        Case(field: "int64", json: "1e2", stored: "100"), Case(field: "int8", json: "100.0", stored: "100"),
        Case(field: "int32", json: "-0", stored: "0"), Case(field: "uint64", json: "1e19", stored: "X'8AC7230489E80000'"),
        Case(field: "int64", json: "1.5e1", stored: "15"),
        // Fractions and numbers that only a Double rounding would make integers.
        Case(field: "int64", json: "1.5", stored: nil), Case(field: "int8", json: "0.1", stored: nil),
        Case(field: "int64", json: "123456789012345678.9", stored: nil),
        Case(field: "int64", json: "9223372036854775807.5", stored: nil),
        Case(field: "int64", json: "1e19", stored: nil), Case(field: "int64", json: "1e-400", stored: nil),
        Case(field: "uint64", json: "1e400", stored: nil),
        Case(field: "int64", json: "123456789012345678901234567890", stored: nil),
        // A Double attribute keeps accepting large integers (rounded to the nearest Double, as JSON parsers do).
        Case(field: "double", json: "9223372036854775808", stored: "9.22337203685478e+18"),
        Case(field: "double", json: "123456789012345678.9", stored: "1.23456789012346e+17"),
        Case(field: "double", json: "-18446744073709551616", stored: "-1.84467440737096e+19"),
        // A Float is read from the text, not rounded twice through a Double; below its range is no fit, not 0.
        Case(field: "float", json: "1.00000005960464477539062500001", stored: "1.00000011920929"),
        Case(field: "float", json: "3.4028235677973366e38", stored: "3.40282346638529e+38"),
        Case(field: "float", json: "1e-50", stored: nil), Case(field: "float", json: "3.5e38", stored: nil),
        // A Decimal keeps 38 significant digits; a longer number would be rounded into another one.
        Case(field: "decimal", json: "12345678901234567890.123456789", stored: "12345678901234567890.123456789"),
        Case(field: "decimal", json: "1000000000000000000000000000000000000000000000", stored: "1000000000000000000000000000000000000000000000"),
        Case(field: "decimal", json: "123456789012345678901234567890123456789012345", stored: nil),
        Case(field: "decimal", json: "0.123456789012345678901234567890123456789", stored: nil),
    ]

    @Test(arguments: cases)
    func integerAttributesTakeOnlyExactValuesInRange(_ testCase: Case) throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [NumberBox.self, SmallKeyed.self])
        let json = #"[{"id": 1}, {"id": 2, "\#(testCase.field)": \#(testCase.json)}]"#
        let decode = {
            try store.write { context in
                _ = try StoreDecoder().decode([NumberBox].self, from: Data(json.utf8), into: context)
            }
        }
        let raw = try RawDatabase(path)
        guard let stored = testCase.stored else {
            let error = try #require(throws: DecodingError.self, performing: decode)
            guard case .dataCorrupted(let context) = error else {
                Issue.record("expected dataCorrupted, got \(error)")
                return
            }
            #expect(context.codingPath.map(\.stringValue) == ["Index 1", testCase.field])
            #expect(context.debugDescription.hasPrefix("Parsed JSON number <\(testCase.json)> does not fit in "))
            #expect(try raw.value("SELECT count(*) FROM NumberBox") == "0")
            return
        }
        try decode()
        // Unsigned values above Int64.max are 8-byte big-endian blobs (so that they sort by value).
        let field = testCase.field
        #expect(try raw.value("SELECT CASE typeof(\(field)) WHEN 'blob' THEN quote(\(field)) ELSE \(field) END FROM NumberBox WHERE id = 2") == stored)
    }

    @Test func identitiesOutOfRangeAreRejectedNotCollapsedIntoOneRow() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [NumberBox.self, SmallKeyed.self])
        // Rounded through Double, both ids would be -9223372036854775808: one row for two records.
        let json = #"[{"id": -9223372036854775808}, {"id": -9223372036854775809}]"#
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([NumberBox].self, from: Data(json.utf8), into: $0) }
        }
        guard case .dataCorrupted(let context) = error else { Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["Index 1", "id"])
        #expect(try RawDatabase(path).value("SELECT count(*) FROM NumberBox") == "0")

        let narrow = #"[{"key": 32767, "name": "a"}, {"key": 32768, "name": "b"}]"#
        let narrowError = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([SmallKeyed].self, from: Data(narrow.utf8), into: $0) }
        }
        guard case .dataCorrupted(let narrowContext) = narrowError else { Issue.record("\(narrowError)"); return }
        #expect(narrowContext.codingPath.map(\.stringValue) == ["Index 1", "key"])
        #expect(narrowContext.debugDescription == "Parsed JSON number <32768> does not fit in Int16.")
    }

    @Test func importRejectsAnIdentityThatWouldRoundIntoAnother() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [NumberBox.self, SmallKeyed.self])
        let dump = TestStore.temporaryPath("dump.json")
        try Data(#"[{"id": -9223372036854775808}, {"id": -9223372036854775809}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        let error = try #require(throws: (any Error).self) { try store.importJSON(NumberBox.self, from: .file(dump)) }
        #expect("\(error)".contains("[1].id"))
        #expect("\(error)".contains("Parsed JSON number <-9223372036854775809> does not fit in Int."))
        #expect(try RawDatabase(path).value("SELECT count(*) FROM NumberBox") == "0")
    }
}
