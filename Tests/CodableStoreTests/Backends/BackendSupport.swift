import CodableStore
import CodableStorePostgres
import Foundation
import Testing

/// The backends the behavioural suite runs on. PostgreSQL needs a server: `Scripts/with-postgres swift test`
/// starts a throwaway one and sets `CODABLESTORE_POSTGRES_URL`; without it, only SQLite runs (CI always sets it,
/// see `postgresRunsInCI`).
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    static let postgresURL = ProcessInfo.processInfo.environment["CODABLESTORE_POSTGRES_URL"]

    static var available: [Backend] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    /// A new, empty store: a file of its own, or a schema of its own on the server.
    func makeStore(
        entities: [any EntityObject.Type], runtimeEntities: [EntityDescription] = [], options: Store.Options = Store.Options()
    ) throws -> Store {
        switch self {
        case .sqlite:
            return try Store(path: TestStore.temporaryPath(), entities: entities, runtimeEntities: runtimeEntities, options: options)
        case .postgres:
            let url = try #require(Self.postgresURL, "CODABLESTORE_POSTGRES_URL is not set")
            return try Store.open(
                postgres: url + "?schema=" + Self.freshSchema(), entities: entities, runtimeEntities: runtimeEntities, options: options)
        }
    }

    /// Where a store of this backend is, so that a second store (another process's) can open the same one.
    func location(of store: Store) -> String { store.path }

    /// A second store on the same data as `store`, as another process would open it.
    func reopen(_ store: Store, entities: [any EntityObject.Type], options: Store.Options = Store.Options()) throws -> Store {
        switch self {
        case .sqlite: try Store(path: store.path, entities: entities, options: options)
        case .postgres: try Store.open(postgres: Self.postgresURL! + "?schema=" + Self.schema(of: store), entities: entities, options: options)
        }
    }

    private static func freshSchema() -> String {
        "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    private static func schema(of store: Store) -> String {
        String(store.path.split(separator: "schema=").last ?? "")
    }
}

/// The rows of a query, run on the store's own database outside CodableStore's contexts: what is really stored.
/// Values are rendered alike on both backends (`NULL`, integers, reals, text).
func storedRows(_ store: Store, _ sql: String) throws -> [[String]] {
    try store.withWriter { connection in
        try connection.rows(sql: sql).map { row in
            row.map { value in
                switch value {
                case .null: "NULL"
                case .integer(let integer): "\(integer)"
                case .real(let real): "\(real)"
                case .text(let text): text
                case .blob(let data): data.map { String(format: "%02x", $0) }.joined()
                }
            }
        }
    }
}

@Test func postgresRunsInCI() {
    // CI runs the README's test command, which starts a server: the PostgreSQL half must not be skipped there.
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(Backend.postgresURL != nil, "CI must run the suite through Scripts/with-postgres")
    }
}
