import CodableStore
import Foundation
import Testing

/// The current row of a backend that is not SQLite: values in an array, read through `DatabaseColumns`.
private struct ArrayColumns: DatabaseColumns {
    var values: [DatabaseValue]
    /// Which typed readers were called, to tell reading in place from reading a whole value.
    final class Reads: @unchecked Sendable { var typed = 0; var whole = 0 }
    let reads = Reads()

    func kind(at column: Int32) -> DatabaseValue.Kind { values[Int(column)].kind }
    func int64(at column: Int32) -> Int64 {
        reads.typed += 1
        guard case .integer(let value) = values[Int(column)] else { Issue.record("int64 of a non-integer"); return 0 }
        return value
    }
    func double(at column: Int32) -> Double {
        reads.typed += 1
        switch values[Int(column)] {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: Issue.record("double of a non-number"); return 0
        }
    }
    func text(at column: Int32) -> String {
        reads.typed += 1
        guard case .text(let value) = values[Int(column)] else { Issue.record("text of a non-text"); return "" }
        return value
    }
    func data(at column: Int32) -> Data {
        reads.typed += 1
        guard case .blob(let value) = values[Int(column)] else { Issue.record("data of a non-blob"); return Data() }
        return value
    }
    func value(at column: Int32) -> DatabaseValue {
        reads.whole += 1
        return values[Int(column)]
    }
}

@Suite("DatabaseColumns: attribute values read from any backend's row")
struct DatabaseColumnsTests {
    @Test("integers, doubles and texts are read in place, with the same checks as from a SQLite statement")
    func readsInPlace() throws {
        let row = ArrayColumns(values: [
            .integer(42), .real(2.5), .integer(3), .text("café"), .null,
            .blob(Data([0x80, 0, 0, 0, 0, 0, 0, 1])),
        ])
        #expect(try Int.read(from: row, at: 0) == 42)
        #expect(try Double.read(from: row, at: 1) == 2.5)
        #expect(try Double.read(from: row, at: 2) == 3.0)
        #expect(try String.read(from: row, at: 3) == "café")
        #expect(try String?.read(from: row, at: 4) == nil)
        #expect(try Int?.read(from: row, at: 0) == 42)
        #expect(try UInt64.read(from: row, at: 5) == 0x8000_0000_0000_0001)
        #expect(row.reads.typed == 6)  // the NULL is told by its kind alone
        #expect(row.reads.whole == 0)
    }

    @Test("a value of another kind is an AttributeValueError naming what was found")
    func mismatches() throws {
        let row = ArrayColumns(values: [.text("seven"), .integer(300), .null])
        let text = try #require(throws: AttributeValueError.self) { try Int.read(from: row, at: 0) }
        #expect(text.expected == "Int")
        #expect(text.found == .text("seven"))
        #expect(text.description == "expected Int, found text value 'seven' instead")
        let overflow = try #require(throws: AttributeValueError.self) { try Int8.read(from: row, at: 1) }
        #expect(overflow.description == "expected Int8, 300 does not fit in Int8")
        let null = try #require(throws: AttributeValueError.self) { try String.read(from: row, at: 2) }
        #expect(null.found == .null)
        #expect(null.description == "expected String, found null value NULL instead")
    }

    @Test("types without a reader of their own go through init(databaseValue:)")
    func defaultReader() throws {
        let id = UUID()
        let row = ArrayColumns(values: [.text(id.uuidString), .real(0), .text("high")])
        #expect(try UUID.read(from: row, at: 0) == id)
        #expect(try Date.read(from: row, at: 1) == Date(timeIntervalSince1970: 0))
        #expect(try Priority.read(from: row, at: 2) == .high)
        #expect(row.reads.whole == 3)
        #expect(row.reads.typed == 0)
    }

    @Test("a value's kind, and SQLite's name for it")
    func kinds() {
        let values: [DatabaseValue] = [.null, .integer(1), .real(1), .text("1"), .blob(Data([1]))]
        #expect(values.map(\.kind) == [.null, .integer, .real, .text, .blob])
        #expect(values.map(\.storageClass) == ["null", "integer", "real", "text", "blob"])
        let sqliteValue: SQLiteValue = .integer(1)
        #expect(sqliteValue == DatabaseValue.integer(1))
    }
}
