import CodableStore
import Foundation
import Testing

@Suite struct QueryTests {
    /// Ten people in three countries, with names that look like SQL and need case folding.
    private func populated() throws -> (Store, String) {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let countries = [Country(code: "FR", name: "France"), Country(code: "IT", name: "Italy"), Country(code: "JP", name: "Japan")]
            let names = ["Ada", "adam", "Grace", "Alan", "Linus", "Barbara", "ada%_", "Ken", "Dennis", "ÉMILIE"]
            for (offset, name) in names.enumerated() {
                let person = Person(id: offset + 1, name: name, age: 20 + offset * 5)
                try context.insert(person)
                person.country = countries[offset % 3]
            }
        }
        return (store, path)
    }

    @Test func textPredicatesMatchLikePlainSQLAndTakeSpecialCharactersLiterally() throws {
        let (store, path) = try populated()
        let raw = try RawDatabase(path)
        try store.read { context in
            let contains = try context.fetch(Person.self, where: .contains(\.name, "ar")).map(\.id)
            #expect(contains.count == Int(try raw.value("SELECT count(*) FROM Person WHERE instr(name, 'ar') > 0")))
            #expect(contains == [6])
            #expect(try context.fetch(Person.self, where: .begins(\.name, with: "Ada")).map(\.id) == [1])
            #expect(try context.fetch(Person.self, where: .begins(\.name, with: "ada", caseInsensitive: true)).map(\.id) == [1, 2, 7])
            #expect(try context.fetch(Person.self, where: .ends(\.name, with: "s")).map(\.id) == [5, 9])
            // `%` and `_` are not wildcards.
            #expect(try context.fetch(Person.self, where: .contains(\.name, "%_")).map(\.id) == [7])
            #expect(try context.count(Person.self, where: .contains(\.name, "")) == 10)
            // Unicode case folding, not just ASCII.
            #expect(try context.fetch(Person.self, where: .begins(\.name, with: "émi", caseInsensitive: true)).map(\.id) == [10])
        }
    }

    @Test func conditionsThroughAToOneRelationship() throws {
        let (store, path) = try populated()
        let ids = try store.read { context in
            try context.fetch(Person.self, where: .through(\.country, \Country.code == "IT") && \.age > 30).map(\.id)
        }
        let expected = try RawDatabase(path).rows(
            "SELECT p.id FROM Person p JOIN Country c ON c._pk = p.country WHERE c.code = 'IT' AND p.age > 30 ORDER BY p._pk"
        ).map { Int($0[0])! }
        #expect(ids == expected)
        #expect(ids == [5, 8])
    }

    @Test func existsAndAggregatesAgreeWithSQL() throws {
        let (store, path) = try populated()
        let raw = try RawDatabase(path)
        try store.read { context in
            #expect(try context.exists(Person.self, where: \.age > 60))
            #expect(try !context.exists(Person.self, where: \.age > 100))
            #expect(try context.aggregate(.sum, of: \Person.age) == .integer(Int64(raw.value("SELECT sum(age) FROM Person"))!))
            #expect(try context.aggregate(.average, of: \Person.age, where: \.age < 40) == .real(Double(raw.value("SELECT avg(age) FROM Person WHERE age < 40"))!))
            #expect(try context.aggregate(.minimum, of: \Person.name) == .text("Ada"))
            #expect(try context.aggregate(.maximum, of: \Person.age) == .integer(65))
            #expect(try context.aggregate(.count, of: \Person.name, where: \.age > 1_000) == .integer(0))
            #expect(try context.aggregate(.sum, of: \Person.age, where: \.age > 1_000) == .null)
            let perAge = try context.aggregate(.count, of: \Person.id, groupedBy: \Person.age, where: \.age <= 30)
            #expect(perAge.map(\.group) == [20, 25, 30])
            #expect(perAge.map(\.value) == [.integer(1), .integer(1), .integer(1)])
        }
    }

    @Test func batchDeleteLeavesNoDanglingRelationshipRows() throws {
        let (store, path) = try populated()
        try store.write { context in
            let ada = try #require(try context.object(Person.self, identity: 1))
            ada.tags = [Tag(id: 1, label: "x")]
        }
        let deleted = try store.write { context in
            // One object in memory (with its inverse loaded), the others only in the store.
            let france = try #require(try context.object(Country.self, identity: "FR"))
            #expect(france.people.count == 4)
            let count = try context.deleteAll(Person.self, where: \.age < 50)
            #expect(france.people.map(\.id).sorted() == [7, 10])
            return count
        }
        #expect(deleted == 6)
        let raw = try RawDatabase(path)
        #expect(try raw.value("SELECT count(*) FROM Person") == "4")
        #expect(try raw.value("SELECT count(*) FROM Person_tags") == "0")
        #expect(try raw.rows("PRAGMA foreign_key_check").isEmpty)
        #expect(try raw.value("SELECT count(*) FROM Country") == "3")
        let all = try store.write { try $0.deleteAll(Person.self) }
        #expect(all == 4)
        #expect(try raw.value("SELECT count(*) FROM Person") == "0")
    }
}

/// Every predicate operator, each checked against the same condition counted with plain SQL on the file.
@Suite struct PredicateOperatorTests {
    static let store: (Store, String) = {
        let path = TestStore.temporaryPath()
        let store = try! Store(path: path, entities: TestStore.entities)
        try! store.write { context in
            for id in 1...40 {
                let name: String? = id % 7 == 0 ? nil : (id % 3 == 0 ? "Ada\(id)" : "bob'\(id)")
                try context.insert(Person(id: id, name: name, age: (id * 37) % 90))
            }
        }
        return (store, path)
    }()

    static let cases: [(String, String)] = [
        ("==", "age = 37"), ("!=", "age IS NOT 37"), ("<", "age < 30"), ("<=", "age <= 30"), (">", "age > 60"),
        (">=", "age >= 60"), ("&&", "age > 20 AND age < 50"), ("||", "age < 10 OR age > 80"), ("!", "NOT (age < 45)"),
        ("isIn", "id IN (1, 5, 9, 99)"), ("== nil", "name IS NULL"), ("!= nil", "name IS NOT NULL"),
        ("!= value keeps nil", "name IS NOT 'Ada3'"), ("contains", "instr(name, 'b''') > 0"),
        ("begins", "substr(name, 1, 3) = 'Ada'"), ("begins, case-insensitive", "lower(substr(name, 1, 3)) = 'ada'"),
        ("ends", "substr(name, -1) = '1'"),
    ]

    static func predicate(_ name: String) -> EntityPredicate<Person> {
        switch name {
        case "==": \.age == 37
        case "!=": \.age != 37
        case "<": \.age < 30
        case "<=": \.age <= 30
        case ">": \.age > 60
        case ">=": \.age >= 60
        case "&&": \.age > 20 && \.age < 50
        case "||": \.age < 10 || \.age > 80
        case "!": !(\.age < 45)
        case "isIn": .isIn(\.id, [1, 5, 9, 99])
        case "== nil": \.name == nil
        case "!= nil": \.name != nil
        case "!= value keeps nil": \.name != "Ada3"
        case "contains": .contains(\.name, "b'")
        case "begins": .begins(\.name, with: "Ada")
        case "begins, case-insensitive": .begins(\.name, with: "ADA", caseInsensitive: true)
        default: .ends(\.name, with: "1")
        }
    }

    @Test(arguments: cases)
    func operatorMatchesPlainSQL(name: String, sql: String) throws {
        let (store, path) = Self.store
        let expected = try RawDatabase(path).rows("SELECT id FROM Person WHERE \(sql) ORDER BY _pk").map { Int($0[0])! }
        let actual = try store.read { try $0.fetch(Person.self, where: Self.predicate(name)).map(\.id) }
        #expect(actual == expected)
        #expect(try store.read { try $0.count(Person.self, where: Self.predicate(name)) } == expected.count)
        #expect(!expected.isEmpty || name == "==")
    }
}
