#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The migrations a store has applied, as its metadata table records them, on either backend.
///
/// Two keys of the metadata table: `migrations`, the names in the order they were applied (a JSON array of
/// strings: what every version of CodableStore reads, and what decides whether a migration runs), and
/// `migration_history`, one record per migration with its steps' descriptions, when and how it was recorded (a
/// JSON array of objects, added later). A name without a record was applied by a version that kept names only.
package enum MigrationHistory {
    static let namesKey = "migrations"
    static let historyKey = "migration_history"

    /// One migration in `migration_history`: `{"appliedAt":"2026-05-20T10:00:00.25Z","kind":"ran","name":"…","steps":["…"]}`.
    private struct Record: Codable {
        var name: String
        var steps: [String]
        /// ISO 8601, UTC, to the microsecond: readable in the table, exact in the API.
        var appliedAt: String?
        var kind: String
    }

    /// The names of the applied migrations, in the order they were applied.
    package static func names(on connection: any DatabaseConnection) throws -> [String] {
        try value(namesKey, as: [String].self, on: connection, what: "list of migrations") ?? []
    }

    /// The applied migrations, in the order they were applied.
    static func applied(on connection: any DatabaseConnection) throws -> [AppliedMigration] {
        let records = try value(historyKey, as: [Record].self, on: connection, what: "history of migrations") ?? []
        let byName = Dictionary(records.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return try names(on: connection).map { name in
            guard let record = byName[name] else {
                return AppliedMigration(name: name, steps: [], appliedAt: nil, kind: .recordedByName)
            }
            return AppliedMigration(
                name: name, steps: record.steps, appliedAt: record.appliedAt.flatMap(date(iso8601:)),
                // A kind a later version added reads as `ran`: that version recorded the migration as applied.
                kind: AppliedMigration.Kind(rawValue: record.kind) ?? .ran)
        }
    }

    /// Records `migrations` as applied after the ones already recorded, in the caller's transaction.
    package static func record(
        _ migrations: [Migration], as kind: AppliedMigration.Kind, on connection: any DatabaseConnection, at date: Date = Date()
    ) throws {
        guard !migrations.isEmpty else { return }
        let names = try names(on: connection)
        var records = try value(historyKey, as: [Record].self, on: connection, what: "history of migrations") ?? []
        let appliedAt = ISO8601.string(secondsSince1970: date.timeIntervalSince1970)
        records += migrations.map { Record(name: $0.name, steps: $0.steps.map(\.description), appliedAt: appliedAt, kind: kind.description) }
        try set(namesKey, names + migrations.map(\.name), on: connection)
        try set(historyKey, records, on: connection)
    }

    private static func date(iso8601 text: String) -> Date? {
        var text = text
        return text.withUTF8 { ISO8601.parse($0) }.map { Date(timeIntervalSince1970: $0) }
    }

    private static func value<T: Decodable>(
        _ key: String, as type: T.Type, on connection: any DatabaseConnection, what: String
    ) throws -> T? {
        guard case .text(let json)? = try connection.scalar(
            sql: "SELECT \"value\" FROM \(quoteIdentifier(StoreMetadata.table)) WHERE \"key\" = ?", arguments: [.text(key)])
        else { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: Data(json.utf8))
        } catch {
            throw StoreError(.schemaMismatch, "the store's \(what) cannot be read: \(error)", cause: error)
        }
    }

    private static func set<T: Encodable>(_ key: String, _ value: T, on connection: any DatabaseConnection) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try StoreMetadata.set(key, String(decoding: try encoder.encode(value), as: UTF8.self), on: connection)
    }
}
