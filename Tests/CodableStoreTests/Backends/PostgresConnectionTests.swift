import CodableStore
@testable import CodableStorePostgres
import Foundation
import Testing

/// The PostgreSQL backend's connection on libpq: what the server's text means as stored values, what arguments become
/// on the server, and how a connection URL reaches libpq. Needs the server of `Scripts/with-postgres`.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs CODABLESTORE_POSTGRES_URL (Scripts/with-postgres)"))
struct PostgresConnectionTests {
    private func connect(_ query: String = "") throws -> PostgresDatabaseConnection {
        let url = try #require(Backend.postgresURL)
        return try PostgresDatabaseConnection.connect(PostgresConfiguration(url: url + query), options: Store.Options())
    }

    private func connectionError(_ query: String) throws -> StoreError {
        let url = try #require(Backend.postgresURL)
        let configuration = try PostgresConfiguration(url: url + query)
        return try #require(throws: StoreError.self) {
            _ = try PostgresDatabaseConnection.connect(configuration, options: Store.Options())
        }
    }

    @Test func theServersTextReadsAsTheStoredValues() throws {
        let connection = try connect()
        let row = try #require(
            try connection.run(
                "values",
                postgresSQL: #"""
                    SELECT 1.5::float8, 'NaN'::float8, 'Infinity'::float8, '-Infinity'::float8, '5e-324'::float8,
                    0.1::float8, '-0'::float8, 2.5::float4, '\x00ff10'::bytea, ''::bytea,
                    12345678901234567890.1230::numeric, true, false, 9223372036854775807::int8, -42::int4, 7::int2,
                    'héllo 日本'::text, NULL::text, NULL::int8
                    """#,
                arguments: []
            ).first)
        #expect(row.count == 19)
        #expect(row[0] == .real(1.5))
        guard case .real(let nan) = row[1] else { Issue.record("NaN came back as \(row[1])"); return }
        #expect(nan.isNaN)
        #expect(row[2] == .real(.infinity))
        #expect(row[3] == .real(-.infinity))
        #expect(row[4] == .real(Double.leastNonzeroMagnitude))
        #expect(row[5] == .real(0.1))
        guard case .real(let negativeZero) = row[6] else { Issue.record("-0 came back as \(row[6])"); return }
        #expect(negativeZero.bitPattern == (-0.0 as Double).bitPattern)
        #expect(row[7] == .real(2.5))
        #expect(row[8] == .blob(Data([0x00, 0xFF, 0x10])))
        #expect(row[9] == .blob(Data()))
        #expect(row[10] == .text("12345678901234567890.123"))
        #expect(row[11] == .integer(1))
        #expect(row[12] == .integer(0))
        #expect(row[13] == .integer(.max))
        #expect(row[14] == .integer(-42))
        #expect(row[15] == .integer(7))
        #expect(row[16] == .text("héllo 日本"))
        #expect(row[17] == .null)
        #expect(row[18] == .null)
    }

    @Test func argumentsReachTheServerAsTheyAre() throws {
        let connection = try connect()
        let arguments: [DatabaseValue] = [
            .real(0.1), .real(-.infinity), .real(.nan), .real(1e300), .integer(.min), .blob(Data([0, 1, 0xAB, 0xFF])),
            .text("it's \"quoted\" \\ 日本"), .null,
        ]
        let row = try #require(
            try connection.run(
                "echo",
                postgresSQL: "SELECT $1::float8, $2::float8, $3::float8, $4::float8, $5::int8, $6::bytea, $7::text, $8::text",
                arguments: arguments
            ).first)
        #expect(row[0] == .real(0.1))
        #expect(row[1] == .real(-.infinity))
        guard case .real(let nan) = row[2] else { Issue.record("NaN came back as \(row[2])"); return }
        #expect(nan.isNaN)
        #expect(row[3] == .real(1e300))
        #expect(row[4] == .integer(.min))
        #expect(row[5] == .blob(Data([0, 1, 0xAB, 0xFF])))
        #expect(row[6] == .text("it's \"quoted\" \\ 日本"))
        #expect(row[7] == .null)
    }

    @Test func textWithANulIsRefusedBeforeItIsSent() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            _ = try connection.run("nul", postgresSQL: "SELECT $1::text", arguments: [.text("a\u{0}b")])
        }
        #expect(error.sqlState == "22021")
        #expect(error.sql == "SELECT $1::text")
        // The connection goes on: nothing half-sent.
        #expect(try connection.run("one", postgresSQL: "SELECT 1", arguments: []) == [[.integer(1)]])
    }

    @Test func aServerErrorCarriesItsStateMessageDetailAndStatement() throws {
        let connection = try connect()
        try connection.execute(sql: "CREATE TEMP TABLE t (id int8 PRIMARY KEY)")
        try connection.execute(sql: "INSERT INTO t VALUES (5)")
        let error = try #require(throws: PostgresError.self) {
            _ = try connection.run("insert", postgresSQL: "INSERT INTO t VALUES ($1)", arguments: [.integer(5)])
        }
        #expect(error.sqlState == "23505")
        #expect(error.message.contains("duplicate key value violates unique constraint"))
        #expect(error.detail == "Key (id)=(5) already exists.")
        #expect(error.sql == "INSERT INTO t VALUES ($1)")
    }

    @Test func urlParametersGoToLibpq() throws {
        let connection = try connect("?application_name=importer-7&connect_timeout=5")
        #expect(try connection.run("name", postgresSQL: "SELECT current_setting('application_name')", arguments: []) == [[.text("importer-7")]])
        // Without one, the server's activity view shows the library.
        let plain = try connect()
        #expect(try plain.run("name", postgresSQL: "SELECT current_setting('application_name')", arguments: []) == [[.text("codablestore")]])
    }

    @Test func anUnknownParameterFailsTheConnectionNamingIt() throws {
        let error = try connectionError("?colour=blue")
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("invalid connection option \"colour\""), "\(error.message)")
    }

    @Test func tlsRequiredOfAServerWithoutItFailsTheConnection() throws {
        // The test server offers no TLS: `prefer` (the default) connects without it, `require` cannot.
        _ = try connect("?sslmode=prefer")
        let error = try connectionError("?sslmode=require")
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("SSL"), "\(error.message)")
        #expect(error.cause is PostgresError)
    }

    @Test func aFailedConnectionNamesTheURLWithoutItsPassword() throws {
        let configuration = try PostgresConfiguration(url: "postgres://someone:secret@127.0.0.1:1/none?connect_timeout=2")
        let error = try #require(throws: StoreError.self) {
            _ = try PostgresDatabaseConnection.connect(configuration, options: Store.Options())
        }
        #expect(error.code == .connectionFailed)
        #expect(error.message.hasPrefix("cannot connect to postgres://someone:***@127.0.0.1:1/none"), "\(error.message)")
        #expect(!error.message.contains("secret"))
        #expect(!error.message.contains("\n"))
    }

    @Test func aStoreWhoseConnectionsTheServerEndedConnectsAgain() throws {
        let url = try #require(Backend.postgresURL)
        let name = "reconnect-\(UInt32.random(in: 0 ... .max))"
        let store = try Store.open(
            postgres: url + "?schema=\(name.replacing("-", with: "_"))&application_name=\(name)", entities: [Device.self])
        try store.write { context in try context.insert(Device(id: 1)) }
        #expect(try store.read { context in try context.count(Device.self) } == 1)
        // Another session ends the store's (as an administrator, a failover or a restart would).
        let admin = try connect()
        let sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
        #expect(try admin.run("count", postgresSQL: sessions, arguments: [.text(name)]) != [[.integer(0)]])
        _ = try admin.run(
            "terminate", postgresSQL: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            arguments: [.text(name)])
        let deadline = ContinuousClock.now + .seconds(10)
        while try admin.run("count", postgresSQL: sessions, arguments: [.text(name)]) != [[.integer(0)]], ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        // The next write and read notice it before they begin, and connect again.
        try store.write { context in try context.insert(Device(id: 2)) }
        #expect(try store.read { context in try context.count(Device.self) } == 2)
        #expect(try admin.run("count", postgresSQL: sessions, arguments: [.text(name)]) != [[.integer(0)]])
    }

    @Test func aMixedCaseSchemaIsUsedAsNamed() throws {
        let url = try #require(Backend.postgresURL)
        let schema = "GitHub_\(UInt32.random(in: 0 ... .max))"
        let store = try Store.open(postgres: url + "?schema=" + schema, entities: [Device.self])
        let dump = FileManager.default.temporaryDirectory.appendingPathComponent("\(schema).json").path
        try Data(#"[{"id": 1, "name": "one"}, {"id": 2}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        defer { try? FileManager.default.removeItem(atPath: dump) }
        // The import asks whether the schema's tables have triggers: by the schema's name as it is.
        let report = try store.importJSON(Device.self, from: .file(dump), options: ImportOptions(decoder: StoreDecoder()))
        #expect(report.recordsImported == 2)
        let admin = try connect()
        let quoted = "\"" + schema + "\""
        #expect(try admin.run("count", postgresSQL: "SELECT count(*) FROM \(quoted).\"Device\"", arguments: []) == [[.integer(2)]])
        #expect(try admin.run("lower", postgresSQL: "SELECT count(*) FROM pg_namespace WHERE nspname = lower($1)", arguments: [.text(schema)]) == [[.integer(0)]])
    }

    @Test func aSocketFolderIsTheHost() throws {
        let configuration = try PostgresConfiguration(url: "postgres://app@/issues?host=/run/postgresql&schema=s&sslmode=disable")
        #expect(configuration.host == "/run/postgresql")
        #expect(configuration.schema == "s")
        #expect(configuration.parameters == ["sslmode": "disable"])
        let keywords = configuration.libpqParameters.map(\.keyword)
        #expect(keywords.contains("host") && keywords.contains("sslmode") && !keywords.contains("schema"))
        #expect(!keywords.contains("password"))
        // A host that does not answer fails after ten seconds, not the system's minutes, unless the URL says otherwise.
        #expect(configuration.libpqParameters.filter { $0.keyword == "connect_timeout" }.map(\.value) == ["10"])
        let patient = try PostgresConfiguration(url: "postgres://app@db/issues?connect_timeout=60")
        #expect(patient.libpqParameters.filter { $0.keyword == "connect_timeout" }.map(\.value) == ["60"])
    }
}
