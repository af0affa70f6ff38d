import CodableStore
import CodableStorePostgres
import Foundation
import IssuesModel
import Testing

// The decoding contract and the context's behaviour, run on every backend (SQLite always; PostgreSQL when a server
// is given, see BackendSupport.swift). Each test checks what is really stored with SQL on the backend's database.

@Entity final class Device {
    var id: Int
    var name: String?
    var score: Double = 0
    var price: Decimal?
    var madeAt: Date?
    var payload: Data?
    var token: UUID?
    var isActive: Bool = false
    var counter: UInt64 = 0
    var maker: Vendor?
    var parts: [Component] = []
    var labels: Set<Badge> = []
    static let identity = Identity(\Device.id)
    init(id: Int) { self.id = id }
    static let deleteRules: [DeleteRule<Device>] = [.cascade(\.parts)]
    enum CodingKeys: String, EntityCodingKey {
        case id, name, score, price, payload, token, maker, parts, labels, counter
        case madeAt = "made_at"
        case isActive = "active"
    }
}

@Entity final class Vendor {
    var code: String
    var name: String?
    var devices: Set<Device> = []
    static let identity = Identity(\Vendor.code)
}

@Entity final class Component {
    var serial: Int
    var gadget: Device?
    static let identity = Identity(\Component.serial)
}

@Entity final class Badge {
    var id: Int
    var text: String?
    var devices: Set<Device> = []
    static let identity = Identity(\Badge.id)
}

@Entity final class Release {
    var repo: String
    var number: Int
    var title: String?
    var slug: String = ""
    static let identity = Identity(\Release.repo, \Release.number)
    static let indexes = [EntityIndex(\Release.slug, unique: true)]
    init(repo: String, number: Int) {
        self.repo = repo
        self.number = number
    }
}

/// A ticket's device may arrive later in the same write or import (the deferred reference policy).
@Entity final class ServiceTicket {
    var id: Int
    var device: Device?
    static let identity = Identity(\ServiceTicket.id)
}

extension ServiceTicket: EntityReferencePolicies {
    static let referencePolicies = [ReferencePolicy(\ServiceTicket.device, .deferred)]
}

private let entities: [any EntityObject.Type] = [Device.self, Vendor.self, Component.self, Badge.self, Release.self, ServiceTicket.self]

private func decoder() -> StoreDecoder {
    let decoder = StoreDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}

@discardableResult
private func save(_ json: String, into store: Store) throws -> Int {
    try store.write { context in try decoder().decode([Device].self, from: Data(json.utf8), into: context).count }
}

@Suite struct BackendBehaviourTests {
    @Test(arguments: Backend.available)
    func upsertByIdentityKeepsOneRowPerIdentity(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(#"[{"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b"}, {"id": 1, "score": 2.25}]"#, into: store)
        try save(#"[{"id": 2, "name": "B"}, {"id": 3}]"#, into: store)
        #expect(try storedRows(store, #"SELECT "id", "name", "score" FROM "Device" ORDER BY "id""#)
            == [["1", "a", "2.25"], ["2", "B", "0.0"], ["3", "NULL", "0.0"]])
    }

    @Test(arguments: Backend.available)
    func valuesKeepTheirTypeExactly(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(
            #"""
            [{"id": 9007199254740993, "price": 12345678901234567890.123456789, "score": 0.1, "made_at": "2024-02-29T12:34:56Z",
              "payload": "AAEC/w==", "token": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "active": true, "name": "Grüße 🧪 'quoted'"}]
            """#, into: store)
        let gadget = try store.read { context in try #require(try context.fetch(Device.self).first).snapshot }
        #expect(gadget.id == 9_007_199_254_740_993)
        #expect(gadget.price == Decimal(string: "12345678901234567890.123456789"))
        #expect(gadget.score == 0.1)
        #expect(gadget.madeAt == Date(timeIntervalSince1970: 1_709_210_096))
        #expect(gadget.payload == Data([0, 1, 2, 255]))
        #expect(gadget.token == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(gadget.isActive)
        #expect(gadget.name == "Grüße 🧪 'quoted'")
    }

    /// Text and bytes that a row format must escape (PostgreSQL's new rows go by COPY's text format, where a tab ends
    /// a field, a line feed a row, and `\N` is NULL), extreme numbers, and NULLs, read back as written.
    @Test(arguments: Backend.available)
    func awkwardValuesRoundTripThroughInserts(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        let texts = ["a\tb", "line\nbreak\r\n", #"back\slash \\ \N"#, "\\N", "", " ", "\"{quoted},[x]\"", "é\u{7F}\u{1}"]
        let bytes = Data((0...255).map(UInt8.init)) + Data("\t\n\\N".utf8)
        try store.write { context in
            for (index, text) in texts.enumerated() {
                let device = Device(id: index + 1)
                try context.insert(device)
                device.name = text
                device.payload = index == 0 ? bytes : index == 1 ? Data() : nil
                device.score = [Double.greatestFiniteMagnitude, -0.0, Double.leastNonzeroMagnitude, .infinity, -.infinity, 0.1, 1e-300, 123456789.125][index]
                device.price = index == 0 ? Decimal(string: "-0.000000000000000000000000001") : nil
                device.counter = index == 2 ? UInt64(Int64.max) : 0
            }
        }
        let read = try store.read { context in
            try context.fetch(Device.self).sorted { $0.id < $1.id }.map { ($0.name, $0.payload, $0.score, $0.price, $0.counter) }
        }
        #expect(read.map(\.0) == texts)
        #expect(read[0].1 == bytes)
        #expect(read[1].1 == Data())
        #expect(read[2].1 == nil)
        #expect(read.map(\.2) == [Double.greatestFiniteMagnitude, -0.0, Double.leastNonzeroMagnitude, .infinity, -.infinity, 0.1, 1e-300, 123456789.125])
        #expect(read[0].3 == Decimal(string: "-0.000000000000000000000000001"))
        #expect(read[1].3 == nil)
        #expect(read[2].4 == UInt64(Int64.max))
        // As stored, not only as read back: one row per device, the text's length in code points.
        #expect(
            try storedRows(store, #"SELECT "id", length("name") FROM "Device" ORDER BY "id""#)
                == texts.enumerated().map { ["\($0.offset + 1)", "\($0.element.unicodeScalars.count)"] })
        #expect(try storedRows(store, #"SELECT count(*) FROM "Device" WHERE "payload" IS NULL"#) == [["6"]])
        // Updates carry the same values (PostgreSQL: in array literals, where quotes, backslashes, commas and braces
        // are special).
        try store.write { context in
            for device in try context.fetch(Device.self) {
                device.name = texts[device.id % texts.count]
                device.payload = device.id == 3 ? bytes : nil
                device.score = -device.score
            }
        }
        let updated = try store.read { context in
            try context.fetch(Device.self).sorted { $0.id < $1.id }.map { ($0.name, $0.payload, $0.score) }
        }
        #expect(updated.map(\.0) == texts.indices.map { texts[($0 + 1) % texts.count] })
        #expect(updated.map(\.1) == texts.indices.map { $0 == 2 ? bytes : nil })
        #expect(updated.map(\.2) == read.map { -$0.2 })
    }

    /// The same text through a table whose columns all have a binary form (PostgreSQL sends its new rows in COPY's
    /// binary format; a table with a `numeric` column, as `Device`'s price, goes in text), with an integer and a
    /// double in a `Double` column.
    @Test(arguments: Backend.available)
    func awkwardValuesRoundTripThroughBinaryRows(_ backend: Backend) throws {
        let statements = Locked<[String]>([])
        var options = Store.Options()
        options.statementObserver = { sql in statements.withLock { $0.append(sql) } }
        let store = try backend.makeStore(entities: entities, options: options)
        let texts = ["a\tb", "line\nbreak\r\n", #"back\slash \\ \N"#, "\\N", "", "é\u{7F}\u{1}", String(repeating: "x", count: 70_000)]
        struct Row: Encodable {
            let id: Int
            let text: String?
        }
        let json = try JSONEncoder().encode(texts.enumerated().map { Row(id: -$0.offset, text: $0.element) } + [Row(id: 99, text: nil)])
        try store.write { context in _ = try StoreDecoder().decode([Badge].self, from: json, into: context) }
        let read = try store.read { context in try context.fetch(Badge.self).sorted { $0.id > $1.id }.map(\.text) }
        #expect(read.count == texts.count + 1)
        #expect(read.first! == nil)  // 99
        #expect(Array(read.dropFirst()) == texts)
        if backend == .postgres {
            #expect(statements.withLock { $0 }.contains { $0.hasPrefix(#"COPY "Badge""#) && $0.hasSuffix("(FORMAT binary)") })
        }
        // Device has a numeric column: text rows, the same values (see awkwardValuesRoundTripThroughInserts).
        try store.write { context in try context.insert(Device(id: 1)) }
        if backend == .postgres {
            #expect(statements.withLock { $0 }.contains { $0.hasPrefix(#"COPY "Device""#) && $0.hasSuffix("FROM STDIN") })
        }
    }

    /// A NUL in text: SQLite stores it; PostgreSQL's text cannot hold one, and the write fails saying so, storing
    /// nothing.
    @Test(arguments: Backend.available)
    func aNULInTextIsStoredOrRefusedWhole(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        let write = {
            try store.write { context in
                let devices = [Device(id: 1), Device(id: 2)]
                for device in devices { try context.insert(device) }
                devices[0].name = "ok"
                devices[1].name = "nul\u{0}inside"
            }
        }
        switch backend {
        case .sqlite:
            try write()
            #expect(try store.read { try $0.fetch(Device.self).count } == 2)
        case .postgres:
            #expect { try write() } throws: { error in "\(error)".contains("0x00") }
            #expect(try storedRows(store, #"SELECT count(*) FROM "Device""#) == [["0"]])
        }
    }

    @Test(arguments: Backend.available)
    func reimportingTheSameDataWritesNothing(_ backend: Backend) throws {
        let log = StatementLog()
        var options = Store.Options()
        options.statementObserver = log.observer
        let store = try backend.makeStore(entities: entities, options: options)
        let json = #"[{"id": 1, "name": "a", "maker": {"code": "m", "name": "M"}, "labels": [1, 2], "parts": [{"serial": 5}]}]"#
        try save(json, into: store)
        log.reset()
        try save(json, into: store)
        #expect(log.writes.isEmpty, "\(log.writes)")
    }

    @Test(arguments: Backend.available)
    func relationshipsByIdAndNestedObjects(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(
            #"""
            [{"id": 1, "maker": {"code": "acme", "name": "Acme"}, "labels": [10, {"id": 11, "text": "eleven"}], "parts": [{"serial": 3}, {"serial": 1}, {"serial": 2}]},
             {"id": 2, "maker": "acme", "labels": [11]}]
            """#, into: store)
        #expect(try storedRows(store, #"SELECT g."id", m."code" FROM "Device" g JOIN "Vendor" m ON m."_pk" = g."maker" ORDER BY g."id""#)
            == [["1", "acme"], ["2", "acme"]])
        #expect(try storedRows(store, #"SELECT "id", "text" FROM "Badge" ORDER BY "id""#) == [["10", "NULL"], ["11", "eleven"]])
        let (parts, labels) = try store.read { context in
            let gadget = try #require(try context.fetch(Device.self, where: \Device.id == 1).first)
            return (gadget.parts.map(\.serial), gadget.labels.map(\.id).sorted())
        }
        #expect(parts == [3, 1, 2])
        #expect(labels == [10, 11])
        // A to-many array replaces the membership; null unlinks a to-one.
        try save(#"[{"id": 1, "maker": null, "labels": [], "parts": [{"serial": 2}]}]"#, into: store)
        #expect(try storedRows(store, #"SELECT "maker" FROM "Device" WHERE "id" = 1"#) == [["NULL"]])
        #expect(try storedRows(store, #"SELECT count(*) FROM "Badge_devices""#) == [["1"]])
        let kept = try store.read { context in try context.fetch(Device.self, where: \Device.id == 1).first?.parts.map(\.serial) }
        #expect(kept == [2])
    }

    @Test(arguments: Backend.available)
    func predicatesSortingAndPagingAgree(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(
            #"""
            [{"id": 1, "name": "apple", "score": 3}, {"id": 2, "name": "Banana", "score": 1}, {"id": 3, "score": 2},
             {"id": 4, "name": "ÄPFEL", "score": 5}, {"id": 5, "name": "cherry", "score": 4}, {"id": 6, "name": "b"}]
            """#, into: store)
        try store.read { (context: Context) throws in
            func ids(_ predicate: EntityPredicate<Device>?, _ sort: [Sort<Device>] = [.ascending(\Device.id)]) throws -> [Int] {
                try context.fetch(Device.self, where: predicate, orderBy: sort).map(\.id)
            }
            #expect(try ids(\Device.name == "apple") == [1])
            #expect(try ids(\Device.name != "apple") == [2, 3, 4, 5, 6])  // NULL differs from "apple"
            #expect(try ids(\Device.name == nil) == [3])
            #expect(try ids(\Device.score > 2.5) == [1, 4, 5])
            #expect(try ids(.isIn(\Device.id, [2, 4, 99])) == [2, 4])
            #expect(try ids(.isIn(\Device.id, [Int]())) == [])
            #expect(try ids(.contains(\Device.name, "an")) == [2])
            #expect(try ids(.contains(\Device.name, "AN", caseInsensitive: true)) == [2])
            #expect(try ids(.begins(\Device.name, with: "äp", caseInsensitive: true)) == [4])
            #expect(try ids(.ends(\Device.name, with: "rry")) == [5])
            #expect(try ids(!(\Device.score < 3) && \Device.name != nil) == [1, 4, 5])
            // Text sorts by bytes (upper case before lower case, ASCII before the rest), NULL first ascending.
            #expect(try ids(nil, [.ascending(\Device.name)]) == [3, 2, 1, 6, 5, 4])
            #expect(try ids(nil, [.descending(\Device.name)]) == [4, 5, 6, 1, 2, 3])
            #expect(try context.fetch(Device.self, orderBy: [.descending(\Device.score)], limit: 2, offset: 1).map(\.id) == [5, 1])
            #expect(try context.fetch(Device.self, orderBy: [.ascending(\Device.id)], offset: 4).map(\.id) == [5, 6])
            #expect(try context.count(Device.self, where: \Device.score >= 2) == 4)
        }
    }

    @Test(arguments: Backend.available)
    func aggregatesGiveWhatSQLiteGives(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(
            #"""
            [{"id": 1, "name": "x", "score": 1.5, "price": 0.1}, {"id": 2, "name": "x", "score": 2.5, "price": 0.2},
             {"id": 3, "name": "y", "score": 4}, {"id": 4}]
            """#, into: store)
        try store.read { (context: Context) throws in
            #expect(try context.aggregate(.sum, of: \Device.id) == .integer(10))
            #expect(try context.aggregate(.average, of: \Device.id) == .real(2.5))
            #expect(try context.aggregate(.maximum, of: \Device.score) == .real(4))
            #expect(try context.aggregate(.minimum, of: \Device.name) == .text("x"))
            #expect(try context.aggregate(.count, of: \Device.price) == .integer(2))
            let grouped = try context.aggregate(.sum, of: \Device.id, groupedBy: \Device.name)
            // The NULL group first, as SQLite sorts NULL.
            #expect(grouped.map(\.group) == [nil, "x", "y"])
            #expect(grouped.map(\.value) == [.integer(4), .integer(3), .integer(3)])
        }
    }

    @Test(arguments: Backend.available)
    func deletesFollowTheDeleteRules(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(
            #"""
            [{"id": 1, "maker": {"code": "m"}, "labels": [7], "parts": [{"serial": 1}, {"serial": 2}]},
             {"id": 2, "maker": "m", "labels": [7], "parts": [{"serial": 3}]}]
            """#, into: store)
        let deleted = try store.write { context in try context.deleteAll(Device.self, where: \Device.id == 1) }
        #expect(deleted == 1)
        #expect(try storedRows(store, #"SELECT "serial", "gadget" IS NULL FROM "Component" ORDER BY "serial""#).map(\.[0]) == ["3"])
        #expect(try storedRows(store, #"SELECT count(*) FROM "Badge_devices""#) == [["1"]])
        // Deleting the maker nullifies the remaining gadget's reference.
        try store.write { context in
            for maker in try context.fetch(Vendor.self) { try context.delete(maker) }
        }
        #expect(try storedRows(store, #"SELECT "id", "maker" FROM "Device""#) == [["2", "NULL"]])
    }

    @Test(arguments: Backend.available)
    func insertingATakenIdentityIsAnIdentityConflict(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(#"[{"id": 1, "name": "first"}]"#, into: store)
        let error = try #require(throws: StoreError.self) {
            try store.write { context in
                let device = Device(id: 1)
                try context.insert(device)
            }
        }
        #expect(error.code == .identityConflict)
        #expect(error.message.contains("Device with identity id = 1 already exists"), "\(error.message)")
        #expect(try storedRows(store, #"SELECT "name" FROM "Device""#) == [["first"]])
    }

    @Test(arguments: Backend.available)
    func aFailedWriteLeavesNothing(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try store.write { context in
                _ = try decoder().decode([Device].self, from: Data(#"[{"id": 1}, {"id": 2}]"#.utf8), into: context)
                try context.save()
                throw Stop()
            }
        }
        #expect(try storedRows(store, #"SELECT count(*) FROM "Device""#) == [["0"]])
        // The store goes on working after the rollback.
        try save(#"[{"id": 3}]"#, into: store)
        #expect(try storedRows(store, #"SELECT "id" FROM "Device""#) == [["3"]])
    }

    @Test(arguments: Backend.available)
    func importOfTheBundledFixtureReportsAndStoresEveryRecord(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: ReferenceModel.entities)
        let path = try SharedFixtures.url("issues-1k.json").path
        let options = ImportOptions(batchSize: 100, decoder: ReferenceModel.decoder())
        let first = try store.importJSON(Issue.self, from: .file(path), options: options)
        #expect(first.recordsRead == 1_000)
        let issues = try storedRows(store, #"SELECT count(*) FROM "Issue""#)
        #expect(issues == [["\(first.entities["Issue"]!.inserted)"]])
        let again = try store.importJSON(Issue.self, from: .file(path), options: options)
        #expect(again.entities["Issue"]?.inserted == 0)
        #expect(try storedRows(store, #"SELECT count(*) FROM "Issue""#) == issues)
        // Both backends hold the same users and links.
        #expect(try storedRows(store, #"SELECT count(*) FROM "User""#) == [["\(first.entities["User"]!.inserted)"]])
    }

    /// A vendor renamed and renamed back, with other vendors between its mentions (its object is let go, and its row
    /// answered from the writer's cache): each mention compares with the row as last written.
    @Test(arguments: Backend.available)
    func anImportComparesWithRowsAsLastWrittenAcrossBatches(_ backend: Backend) throws {
        var records: [String] = []
        for (index, name) in ["a", "a", "b", "a", "a"].enumerated() {
            records.append(#"{"id": \#(index * 3 + 1), "maker": {"code": "m", "name": "\#(name)"}}"#)
            records.append(#"{"id": \#(index * 3 + 2), "maker": {"code": "n", "name": "n"}}"#)
            records.append(#"{"id": \#(index * 3 + 3), "maker": {"code": "o", "name": "o"}}"#)
        }
        let path = TestStore.temporaryPath("dump.json")
        try Data(("[" + records.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: path))
        let store = try backend.makeStore(entities: entities)
        var options = ImportOptions(batchSize: 1, retainedObjectLimit: 0, decoder: decoder())
        #expect(options.rowCacheKiB > 0)
        var report = try store.importJSON(Device.self, from: .file(path), options: options)
        #expect(try storedRows(store, #"SELECT "code", "name" FROM "Vendor" ORDER BY "code""#) == [["m", "a"], ["n", "n"], ["o", "o"]])
        #expect(report.entities["Vendor"]?.updated == 2)
        options.rowCacheKiB = 0
        report = try store.importJSON(Device.self, from: .file(path), options: options)
        #expect(report.entities["Vendor"]?.updated == 2)  // "a" to "b" and back, again
    }

    /// A trigger changes rows no step of an import names: an import into a store whose tables have one keeps no rows
    /// (ImportOptions.rowCacheKiB; RowCacheTests checks that on SQLite). Both backends see the store's own triggers.
    @Test(arguments: Backend.available)
    func triggersOfTheStoresTablesAreSeen(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        #expect(try store.withWriter { try $0.hasTriggers() } == false)
        let ddl =
            backend == .sqlite
            ? [#"CREATE TRIGGER vendor_touch AFTER UPDATE ON "Vendor" BEGIN SELECT 1; END"#]
            : [
                "CREATE FUNCTION vendor_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
                #"CREATE TRIGGER vendor_touch BEFORE UPDATE ON "Vendor" FOR EACH ROW EXECUTE FUNCTION vendor_touch()"#,
            ]
        try store.withWriter { connection in for sql in ddl { try connection.execute(sql: sql) } }
        #expect(try store.withWriter { try $0.hasTriggers() } == true)
        // Another store's schema (PostgreSQL) or file does not see it.
        #expect(try backend.makeStore(entities: entities).withWriter { try $0.hasTriggers() } == false)
    }

    /// An import that asks for the store for itself gets it on SQLite (a file nobody else has open), not on
    /// PostgreSQL, whose server shares it with other sessions; both import the same rows, and say which they did.
    @Test(arguments: Backend.available)
    func exclusiveAccessIsGrantedIntoANewStore(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: ReferenceModel.entities)
        let path = try SharedFixtures.url("issues-1k.json").path
        var options = ImportOptions(decoder: ReferenceModel.decoder())
        options.exclusiveAccess = true
        let report = try store.importJSON(Issue.self, from: .file(path), options: options)
        // SQLite: the file alone; PostgreSQL: the import's tables, which are empty.
        #expect(report.exclusiveAccess == true)
        #expect(report.recordsImported == 1_000)
        let issues = try store.read { context in try context.count(Issue.self) }
        #expect(issues == report.entities["Issue"]?.inserted)
        // Without asking, the report says nothing of it.
        #expect(try store.importJSON(Issue.self, from: .file(path), options: .init(decoder: ReferenceModel.decoder())).exclusiveAccess == nil)
    }

    /// Without a batch size, the backend's: 500 records on SQLite (its memory goes to the page cache instead);
    /// on PostgreSQL (each batch costs round trips) 2,000, into an empty table and into one that holds rows. Progress
    /// comes after each batch.
    @Test(arguments: Backend.available)
    func theDefaultBatchSizeIsTheBackends(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: ReferenceModel.entities)
        // 2,500 records: the 1k fixture's, two and a half times.
        let records = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: SharedFixtures.url("issues-1k.json"))) as? [Any])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("batches-\(UUID().uuidString).json").path
        try JSONSerialization.data(withJSONObject: records + records + Array(records.prefix(500))).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        func progress() throws -> [String] {
            let seen = StatementLog()
            var options = ImportOptions(decoder: ReferenceModel.decoder())
            #expect(options.batchSize == nil)
            options.progress = { seen.observer("\($0.recordsRead)") }
            let report = try store.importJSON(Issue.self, from: .file(path), options: options)
            #expect(report.recordsRead == 2_500)
            return seen.all
        }
        // After each batch, and once more at the end.
        switch backend {
        case .sqlite:
            #expect(try progress() == ["500", "1000", "1500", "2000", "2500", "2500"])
            #expect(try progress() == ["500", "1000", "1500", "2000", "2500", "2500"])
        case .postgres:
            #expect(try progress() == ["2000", "2500", "2500"])
            #expect(try progress() == ["2000", "2500", "2500"])
        }
    }

    @Test(arguments: Backend.available)
    func twoStoresWritingOverlappingDataKeepOneRowPerIdentity(_ backend: Backend) async throws {
        let first = try backend.makeStore(entities: entities)
        let second = try backend.reopen(first, entities: entities)
        let pages = (0..<8).map { page in
            "[" + (0..<50).map { #"{"id": \#(page * 25 + $0), "name": "p\#(page)", "maker": {"code": "m\#($0 % 3)"}}"# }
                .joined(separator: ",") + "]"
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, page) in pages.enumerated() {
                let store = index.isMultiple(of: 2) ? first : second
                group.addTask { _ = try await store.write { context in try decoder().decode([Device].self, from: Data(page.utf8), into: context).count } }
            }
            try await group.waitForAll()
        }
        #expect(try storedRows(first, #"SELECT count(*), count(DISTINCT "id") FROM "Device""#) == [["225", "225"]])
        #expect(try storedRows(first, #"SELECT count(*) FROM "Vendor""#) == [["3"]])
    }

    @Test(arguments: Backend.available)
    func concurrentImportsOfOverlappingDumpsReportWhatEachDid(_ backend: Backend) async throws {
        let first = try backend.makeStore(entities: entities)
        let second = try backend.reopen(first, entities: entities)
        func dump(_ ids: Range<Int>, name: String) throws -> String {
            let path = TestStore.temporaryPath("\(name).json")
            let records = ids.map { #"{"id": \#($0), "name": "\#(name)", "labels": [\#($0 % 7)]}"# }
            try Data(("[" + records.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let (a, b) = (try dump(0..<300, name: "a"), try dump(150..<450, name: "b"))
        var options = ImportOptions(batchSize: 50)
        options.decoder = decoder()
        let importOptions = options
        async let reportA = Task.detached { try first.importJSON(Device.self, from: .file(a), options: importOptions) }.value
        async let reportB = Task.detached { try second.importJSON(Device.self, from: .file(b), options: importOptions) }.value
        let (ra, rb) = try await (reportA, reportB)
        let (countsA, countsB) = (try #require(ra.entities["Device"]), try #require(rb.entities["Device"]))
        // Each identity was inserted by exactly one import; the one that ran second updated the overlap.
        #expect(countsA.inserted + countsB.inserted == 450)
        #expect(countsA.updated + countsB.updated == 150)
        let winner = countsA.updated == 150 ? "a" : "b"
        #expect(try storedRows(first, #"SELECT count(*), count(DISTINCT "id") FROM "Device""#) == [["450", "450"]])
        #expect(try storedRows(first, #"SELECT DISTINCT "name" FROM "Device" WHERE "id" BETWEEN 150 AND 299"#) == [[winner]])
        #expect(try storedRows(first, #"SELECT count(*) FROM "Badge""#) == [["7"]])
        #expect(try storedRows(first, #"SELECT count(*) FROM "Badge_devices""#) == [["450"]])
    }

    @Test(arguments: Backend.available)
    func readersNeverSeeHalfAnImport(_ backend: Backend) async throws {
        let store = try backend.makeStore(entities: ReferenceModel.entities)
        let path = try SharedFixtures.url("issues-1k.json").path
        let importing = Task.detached {
            try store.importJSON(Issue.self, from: .file(path), options: ImportOptions(batchSize: 50, decoder: ReferenceModel.decoder()))
        }
        // Bounded: an import that fails must end the test, not leave it reading forever.
        var seen: Set<Int> = []
        for _ in 0..<2_000 where !seen.contains(where: { $0 > 0 }) {
            seen.insert(try await store.read { context in try context.count(Issue.self) })
        }
        let report = try await importing.value
        let total = report.entities["Issue"]!.inserted
        seen.insert(try await store.read { context in try context.count(Issue.self) })
        #expect(seen.isSubset(of: [0, total]), "a reader saw \(seen.sorted()) of \(total)")
    }

    @Test(arguments: Backend.available)
    func aSyncImportDeletesWhatTheDumpNoLongerHas(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(#"[{"id": 1, "parts": [{"serial": 1}]}, {"id": 2, "labels": [5]}, {"id": 3, "active": true}, {"id": 4}]"#, into: store)
        let dump = TestStore.temporaryPath("devices.json")
        try Data(#"[{"id": 2}, {"id": 4, "name": "four"}, {"id": 5}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        var options = ImportOptions()
        options.decoder = decoder()
        let report = try store.importJSON(Device.self, from: .file(dump), options: options, syncing: .all)
        #expect(report.sync?.deleted == 2)
        #expect(try storedRows(store, #"SELECT "id", "name" FROM "Device" ORDER BY "id""#) == [["2", "NULL"], ["4", "four"], ["5", "NULL"]])
        // Device 1's parts went with it (cascade); device 2 keeps its badge.
        #expect(try storedRows(store, #"SELECT count(*) FROM "Component""#) == [["0"]])
        #expect(try storedRows(store, #"SELECT count(*) FROM "Badge_devices""#) == [["1"]])
    }

    @Test(arguments: Backend.available)
    func batchUpdatesUpsertsAndScratchWrites(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(#"[{"id": 1, "score": 1}, {"id": 2, "score": 5}, {"id": 3, "score": 9}]"#, into: store)
        let changed = try store.write { context in
            try context.updateAll(Device.self, where: \Device.score > 2, set: [.set(\Device.name, to: "big")])
        }
        #expect(changed == 2)
        try store.write { context in
            let device = Device(id: 2)
            device.score = 6
            _ = try context.upsert(device)
            _ = try context.findOrCreate(Device.self, identity: 7) { Device(id: 7) }
        }
        #expect(try storedRows(store, #"SELECT "id", "name", "score" FROM "Device" ORDER BY "id""#)
            == [["1", "NULL", "1.0"], ["2", "NULL", "6.0"], ["3", "big", "9.0"], ["7", "NULL", "0.0"]])
        let seen = try store.scratch { context in
            try context.insert(Device(id: 99))
            return try context.count(Device.self)
        }
        #expect(seen == 5)
        #expect(try storedRows(store, #"SELECT count(*) FROM "Device""#) == [["4"]])
    }

    @Test(arguments: Backend.available)
    func compositeIdentitiesAreLookedUpInBatches(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        let page = { (title: String) in
            "[" + (0..<40).map { #"{"repo": "r\#($0 % 2)", "number": \#($0), "title": "\#(title)", "slug": "s\#($0)"}"# }
                .joined(separator: ",") + "]"
        }
        try store.write { context in _ = try decoder().decode([Release].self, from: Data(page("one").utf8), into: context) }
        try store.write { context in _ = try decoder().decode([Release].self, from: Data(page("two").utf8), into: context) }
        #expect(try storedRows(store, #"SELECT count(*), min("title"), max("title") FROM "Release""#) == [["40", "two", "two"]])
        let found = try store.write { context in
            try context.findOrCreate(Release.self, identity: ["r1", 7] as [any AttributeValue]) { Release(repo: "r1", number: 7) }.title
        }
        #expect(found == "two")
    }

    @Test(arguments: Backend.available)
    func aFailedBatchUpdateChangesNothingAndTheWriteGoesOn(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try store.write { context in
            _ = try decoder().decode(
                [Release].self, from: Data(#"[{"repo": "r", "number": 1, "slug": "a"}, {"repo": "r", "number": 2, "slug": "b"}]"#.utf8),
                into: context)
        }
        try store.write { context in
            let error = try #require(throws: StoreError.self) {
                try context.updateAll(Release.self, set: [.set(\Release.slug, to: "same")])
            }
            #expect(error.code == .identityConflict)
            // The write goes on after the failed update, on both backends.
            try context.updateAll(Release.self, where: \Release.number == 1, set: [.set(\Release.title, to: "kept")])
        }
        #expect(try storedRows(store, #"SELECT "number", "title", "slug" FROM "Release" ORDER BY "number""#)
            == [["1", "kept", "a"], ["2", "NULL", "b"]])
    }

    @Test(arguments: Backend.available)
    func membershipsMovedAndMovedBackInOneWriteWriteNothing(_ backend: Backend) throws {
        let log = StatementLog()
        var options = Store.Options()
        options.statementObserver = log.observer
        let store = try backend.makeStore(entities: entities, options: options)
        let pageA = #"[{"id": 1, "labels": [1, 2], "parts": [{"serial": 5}, {"serial": 6}]}, {"id": 2, "labels": [3], "parts": [{"serial": 7}]}]"#
        let pageB = #"[{"id": 1, "labels": [3], "parts": [{"serial": 7}]}, {"id": 2, "labels": [1, 2, 3], "parts": [{"serial": 6}, {"serial": 5}]}]"#
        try save(pageA, into: store)
        let rows = #"SELECT d."id", b."id" FROM "Badge_devices" j JOIN "Badge" b ON b."_pk" = j."source" JOIN "Device" d ON d."_pk" = j."target" ORDER BY 1, 2"#
        let parts = #"SELECT c."serial", d."id", c."gadget_order" FROM "Component" c JOIN "Device" d ON d."_pk" = c."gadget" ORDER BY 1"#
        let stored = try (storedRows(store, rows), storedRows(store, parts))
        log.reset()
        try store.write { context in
            for page in [pageA, pageB, pageA] { _ = try decoder().decode([Device].self, from: Data(page.utf8), into: context) }
        }
        #expect(log.writes.isEmpty, "\(log.writes)")
        #expect(try storedRows(store, rows) == stored.0)
        #expect(try storedRows(store, parts) == stored.1)
    }

    @Test(arguments: Backend.available)
    func rollbackGoesBackToTheLastSave(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        try save(#"[{"id": 1, "name": "stored"}]"#, into: store)
        try store.write { context in
            let device = try #require(try context.object(Device.self, identity: 1))
            device.name = "saved"
            try context.save()
            device.name = "unsaved"
            try context.insert(Device(id: 2))
            #expect(try context.count(Device.self) == 2)  // written by the query, inside the write
            try context.rollback()
            #expect(device.name == "saved")
            #expect(try context.count(Device.self) == 1)
            device.score = 4.5
        }
        #expect(try storedRows(store, #"SELECT "id", "name", "score" FROM "Device" ORDER BY "id""#) == [["1", "saved", "4.5"]])
    }

    @Test(arguments: Backend.available)
    func unresolvedReferencesNameTheirOwnerEvenOnceAnImportForgotIt(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        let dump = TestStore.temporaryPath("service-tickets.json")
        try #"[{"id": 1, "device": 99}, {"id": 2, "device": 98}, {"id": 3, "device": 99}]"#.write(toFile: dump, atomically: true, encoding: .utf8)
        let report = try store.importJSON(ServiceTicket.self, from: .file(dump), options: ImportOptions(batchSize: 1))
        let missing = { (owner: Int, device: Int) in
            UnresolvedReference(
                ownerEntity: "ServiceTicket", ownerIdentity: .init(names: ["id"], values: [.integer(Int64(owner))]), ownerRowID: Int64(owner),
                relationship: "device", destinationEntity: "Device", missingIdentity: .init(names: ["id"], values: [.integer(Int64(device))]))
        }
        #expect(report.unresolvedReferenceList == [missing(1, 99), missing(2, 98), missing(3, 99)])
        try store.write { context in
            _ = try StoreDecoder().decode([ServiceTicket].self, from: Data(#"[{"id": 4, "device": 98}, {"id": 5, "device": 97}]"#.utf8), into: context)
            _ = try StoreDecoder().decode([Device].self, from: Data(#"[{"id": 97}]"#.utf8), into: context)
            #expect(try context.listUnresolvedReferences() == [missing(4, 98)])
            #expect(throws: UnresolvedReferencesError.self) { try context.requireResolvedReferences() }
        }
    }

    @Test(arguments: Backend.available)
    func observersHearOfCommittedWrites(_ backend: Backend) async throws {
        let store = try backend.makeStore(entities: entities)
        var changes = store.observe(Device.self, where: \Device.isActive == true).makeAsyncIterator()
        let initial = await changes.next()
        #expect(initial?.rows.isEmpty == true)
        try save(#"[{"id": 1, "active": true}, {"id": 2}]"#, into: store)
        let next = await changes.next()
        #expect(next?.rows.map { $0[\Device.id] } == [1])
    }
}

/// Where the backends differ, as "Choosing and running a backend" documents: what PostgreSQL refuses, SQLite stores.
@Suite struct BackendDifferenceTests {
    @Test(arguments: Backend.available)
    func unsignedValuesAboveInt64MaxAndNULInText(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: entities)
        let big = #"[{"id": 1, "counter": 18446744073709551615}]"#
        let nul = #"[{"id": 2, "name": "a\u0000b"}]"#
        switch backend {
        case .sqlite:
            try save(big, into: store)
            try save(nul, into: store)
            #expect(try store.read { context in try context.fetch(Device.self, orderBy: [.ascending(\Device.id)]).map(\.counter) }
                == [.max, 0])
        case .postgres:
            let bigError = try #require(throws: PostgresError.self) { try save(big, into: store) }
            #expect(bigError.sqlState == "22P02", "\(bigError)")
            let nulError = try #require(throws: PostgresError.self) { try save(nul, into: store) }
            #expect(nulError.sqlState == "22021" || nulError.sqlState == "22P05", "\(nulError)")
            // Nothing of either write was kept, and the store goes on working.
            #expect(try storedRows(store, #"SELECT count(*) FROM "Device""#) == [["0"]])
            try save(#"[{"id": 3, "counter": 9223372036854775807}]"#, into: store)
            #expect(try storedRows(store, #"SELECT "counter" FROM "Device""#) == [["9223372036854775807"]])
        }
    }
}

/// What only a server backend does: hear of other processes' commits, share schemas.
@Suite struct PostgresOnlyBehaviourTests {
    /// Stores opened at the same moment on a schema nobody has created yet (two processes importing into a new
    /// schema): each opens, and they share one schema and one set of tables.
    @Test(arguments: Backend.available.filter { $0 == .postgres })
    func storesOpenedAtOnceOnANewSchemaAllOpen(_ backend: Backend) async throws {
        let server = try #require(Backend.postgresURL)
        for _ in 0..<6 {
            let url = server + "?schema=race_" + UUID().uuidString.lowercased().filter { $0 != "-" }
            let opened = try await withThrowingTaskGroup(of: Int.self) { group in
                for id in 1...4 {
                    group.addTask {
                        let store = try await Store.open(postgres: url, entities: entities)
                        try save(#"[{"id": \#(id)}]"#, into: store)
                        return id
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(opened.sorted() == [1, 2, 3, 4])
            let store = try await Store.open(postgres: url, entities: entities)
            #expect(try storedRows(store, #"SELECT "id" FROM "Device" ORDER BY "id""#) == [["1"], ["2"], ["3"], ["4"]])
        }
    }

    @Test(arguments: Backend.available.filter { $0 == .postgres })
    func anotherProcessesCommitsReachObservers(_ backend: Backend) async throws {
        let store = try backend.makeStore(entities: entities)
        // Another process's store: its own connections and its own mark on what it announces.
        let other = try backend.reopen(store, entities: entities)
        var changes = store.observe(Device.self, where: \Device.isActive == true).makeAsyncIterator()
        #expect(await changes.next()?.rows.isEmpty == true)
        try save(#"[{"id": 1, "active": true}, {"id": 2}]"#, into: other)
        #expect(await changes.next()?.rows.map { $0[\Device.id] } == [1])
        // A rolled back write announces nothing: the next change heard of is the import's.
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try other.write { context in
                _ = try decoder().decode([Device].self, from: Data(#"[{"id": 3, "active": true}]"#.utf8), into: context)
                try context.save()
                throw Stop()
            }
        }
        let dump = TestStore.temporaryPath("devices.json")
        try Data(#"[{"id": 4, "active": true}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        var options = ImportOptions()
        options.decoder = decoder()
        _ = try other.importJSON(Device.self, from: .file(dump), options: options)
        #expect(await changes.next()?.rows.map { $0[\Device.id] } == [1, 4])
    }
}

extension Device {
    /// The values, outside the context.
    var snapshot: DeviceValues {
        DeviceValues(id: id, name: name, score: score, price: price, madeAt: madeAt, payload: payload, token: token, isActive: isActive)
    }
}

struct DeviceValues: Sendable {
    var id: Int
    var name: String?
    var score: Double
    var price: Decimal?
    var madeAt: Date?
    var payload: Data?
    var token: UUID?
    var isActive: Bool
}
