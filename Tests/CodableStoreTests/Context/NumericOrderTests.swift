import CodableStore
import Foundation
import Testing

@testable import CodableStoreSQLite

@Entity final class Priced {
    var id: Int
    var price: Decimal
    var big: UInt64
    var optionalPrice: Decimal?
    static let identity = Identity(\Priced.id)
    init(id: Int, price: Decimal, big: UInt64) {
        self.id = id
        self.price = price
        self.big = big
    }
}

@Entity final class Amount {
    var value: Decimal
    static let identity = Identity(\Amount.value)
    init(value: Decimal) { self.value = value }
}

@Suite struct NumericOrderTests {
    static let prices = ["10", "9", "-1.5", "0.001", "1000", "-20", "0", "9.5", "123456789012345678901234.5"]
    static let bigs: [UInt64] = [0, 5, UInt64(Int64.max), UInt64(Int64.max) + 1, UInt64.max, 1 << 63 + 12_345]

    static func seeded() throws -> (Store, String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Priced.self])
        try store.write { context in
            for (index, price) in prices.enumerated() {
                let object = Priced(id: index, price: Decimal(string: price)!, big: bigs[index % bigs.count])
                object.optionalPrice = index % 3 == 0 ? nil : Decimal(string: price)
                try context.insert(object)
            }
        }
        return (store, path)
    }

    @Test func decimalsCompareSortAndAggregateByValue() throws {
        let (store, _) = try Self.seeded()
        let values = Self.prices.map { Decimal(string: $0)! }
        try store.read { context in
            let sorted = try context.fetch(Priced.self, orderBy: [.ascending(\.price)]).map(\.price)
            #expect(sorted == values.sorted())
            let descending = try context.fetch(Priced.self, orderBy: [.descending(\.price)]).map(\.price)
            #expect(descending == values.sorted(by: >))
            let above = try context.fetch(Priced.self, where: \.price > Decimal(9), orderBy: [.ascending(\.price)]).map(\.price)
            #expect(above == values.filter { $0 > 9 }.sorted())
            #expect(try context.count(Priced.self, where: \.price <= Decimal(string: "-1.5")!) == 2)
            #expect(try context.count(Priced.self, where: \.price == Decimal(string: "9.50")!) == 1)
            #expect(try context.maximum(of: \Priced.price) == values.max())
            #expect(try context.aggregate(.maximum, of: \Priced.price) == .text("123456789012345678901234.5"))
            #expect(try context.minimum(of: \Priced.price) == values.min())
            #expect(try context.maximum(of: \Priced.optionalPrice) == values.max())
            let optional = try context.fetch(Priced.self, where: \.optionalPrice != nil, orderBy: [.ascending(\.optionalPrice)])
            #expect(optional.map { $0.optionalPrice! } == Self.prices.enumerated().filter { $0.offset % 3 != 0 }.map { Decimal(string: $0.element)! }.sorted())
        }
    }

    @Test func unsignedValuesAboveInt64MaxSortAfterTheOthers() throws {
        let (store, path) = try Self.seeded()
        let stored = Self.prices.indices.map { Self.bigs[$0 % Self.bigs.count] }
        try store.read { context in
            #expect(try context.fetch(Priced.self, orderBy: [.ascending(\.big), .ascending(\.id)]).map(\.big) == stored.sorted())
            let above = try context.fetch(Priced.self, where: \.big > UInt64(Int64.max), orderBy: [.ascending(\.big)]).map(\.big)
            #expect(above == stored.filter { $0 > UInt64(Int64.max) }.sorted())
            #expect(try context.count(Priced.self, where: \.big < 10) == stored.filter { $0 < 10 }.count)
            #expect(try context.count(Priced.self, where: \.big == UInt64.max) == 1)
            #expect(try context.maximum(of: \Priced.big) == UInt64.max)
            #expect(try context.minimum(of: \Priced.big) == 0)
        }
        // Stored as integers up to Int64.max, as 8 big-endian bytes above.
        #expect(try RawDatabase(path).rows("SELECT DISTINCT typeof(big), quote(big) FROM Priced WHERE big = x'FFFFFFFFFFFFFFFF' OR big = 5") == [
            ["integer", "5"], ["blob", "X'FFFFFFFFFFFFFFFF'"],
        ])
    }

    @Test func aBlobThatIsNotAnUnsignedValueIsAClearError() throws {
        #expect(throws: AttributeValueError.self) { try UInt64(databaseValue: .blob(Data([1, 2, 3]))) }
        // A small value stored as a blob is not what the store writes.
        let error = try #require(throws: AttributeValueError.self) { try UInt64(databaseValue: .blob(Data([0, 0, 0, 0, 0, 0, 0, 1]))) }
        #expect(error.reason == "1 is stored as an integer, not as a blob")
        #expect(throws: AttributeValueError.self) { try Int64(databaseValue: .blob(Data(repeating: 255, count: 8))) }
    }

    /// A store as the previous storage version wrote it: decimal text without a collation, unsigned values above
    /// Int64.max as negative integers, their columns recorded as Int.
    static func versionOneStore() throws -> String {
        let path = TestStore.temporaryPath("v1.sqlite")
        do { _ = try Store(path: path, entities: [Priced.self]) }
        let raw = try RawDatabase(path)
        let model = try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'")
        let old = model.replacingOccurrences(of: #""version":4"#, with: #""version":1"#)
            .replacingOccurrences(of: #""type":"UInt64""#, with: #""type":"Int""#)
        #expect(old != model)
        try raw.execute("""
            DROP TABLE Priced;
            CREATE TABLE "Priced" ("_pk" INTEGER PRIMARY KEY, "id" INTEGER NOT NULL, "price" TEXT NOT NULL, "big" INTEGER NOT NULL, "optionalPrice" TEXT);
            CREATE UNIQUE INDEX "Priced_identity" ON "Priced" ("id");
            INSERT INTO Priced VALUES (1, 1, '10', -1, NULL), (2, 2, '9', 5, '9'), (3, 3, '-1.5', -9223372036854775808, '100'),
              (4, 4, '0.25', 9223372036854775807, NULL);
            UPDATE _codablestore_metadata SET value = '\(old.replacingOccurrences(of: "'", with: "''"))' WHERE key = 'model';
            """)
        #expect(try raw.value("SELECT price FROM Priced ORDER BY price DESC LIMIT 1") == "9")  // text order
        return path
    }

    @Test func aVersionOneStoreIsUpgradedOnOpen() throws {
        let path = try Self.versionOneStore()
        let store = try Store(path: path, entities: [Priced.self])
        try store.read { context in
            #expect(try context.fetch(Priced.self, orderBy: [.ascending(\.price)]).map(\.id) == [3, 4, 2, 1])
            #expect(try context.fetch(Priced.self, orderBy: [.ascending(\.big)]).map(\.id) == [2, 4, 3, 1])
            let values = try context.fetch(Priced.self, orderBy: [.ascending(\.id)]).map(\.big)
            #expect(values == [UInt64.max, 5, UInt64(Int64.max) + 1, UInt64(Int64.max)])
            #expect(try context.fetch(Priced.self, where: \.optionalPrice > Decimal(10)).map(\.id) == [3])
        }
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT sql FROM sqlite_master WHERE name = 'Priced'").contains(#""price" TEXT COLLATE codablestore_decimal NOT NULL"#))
        #expect(try raw.value("SELECT count(*) FROM sqlite_master WHERE name = 'Priced_identity'") == "1")
        #expect(try raw.value("SELECT value FROM _codablestore_metadata WHERE key = 'model'").contains(#""version":4"#))
        // Opened again, nothing more to do.
        _ = try Store(path: path, entities: [Priced.self])
    }

    @Test func theStableExportSortsDecimalIdentitiesByValue() throws {
        let store = try Store.inMemory(entities: [Amount.self])
        try store.write { context in
            for text in ["10", "9", "-2.5", "100", "0.5"] { try context.insert(Amount(value: Decimal(string: text)!)) }
        }
        let export = String(decoding: try store.stableExport(), as: UTF8.self)
        let values = export.split(separator: "\n").filter { $0.contains("\"value\"") }.map { $0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces) }
        #expect(values == ["-2.5", "0.5", "9", "10", "100"])
    }

    @Test func decimalTextComparesByValue() {
        func compare(_ a: String, _ b: String) -> Int {
            Array(a.utf8).withUnsafeBytes { x in Array(b.utf8).withUnsafeBytes { y in DecimalText.compare(x, y) } }
        }
        #expect(compare("9", "10") == -1)
        #expect(compare("1.5", "1.50") == 0)
        #expect(compare("-0", "0.000") == 0)
        #expect(compare("-2", "-10") == 1)
        #expect(compare("0.001", "0.01") == -1)
        #expect(compare("1E+3", "999.999") == 1)
        #expect(compare("1e-3", "0.001") == 0)
        #expect(compare("007", "7") == 0)
        #expect(compare("NaN", "-1000") == -1)
        #expect(compare("abc", "abd") == -1)
        // Exponents beyond any stored number saturate: equal, never out of order.
        #expect(compare("1e10000000000", "1e9999999999") == 1)
        #expect(compare("1e20000000000000", "1e10000000000000") == 0)
        #expect(compare("1e100", "1e99") == 1)
        #expect(compare("-1e100", "-1e99") == -1)
        // Against Foundation's Decimal order, on random decimals.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            func random() -> Decimal {
                let mantissa = Int64.random(in: -1_000_000...1_000_000, using: &generator)
                return Decimal(sign: mantissa < 0 ? .minus : .plus, exponent: Int.random(in: -8...8, using: &generator), significand: Decimal(mantissa.magnitude))
            }
            let (a, b) = (random(), random())
            let expected = a < b ? -1 : (a == b ? 0 : 1)
            #expect(compare(a.description, b.description) == expected, "\(a) vs \(b)")
        }
    }
}
