/// The store's metadata table, on every backend: a table of text keys and values that holds the recorded model
/// (`model`, a ``SchemaSnapshot`` as JSON), the applied migrations (``MigrationHistory``) and the import's keys.
/// Each backend's DDL creates it (`"key"` the primary key, `"value"` not null).
package enum StoreMetadata {
    package static let table = "_codablestore_metadata"

    /// Sets one key: the same statement on every backend (SQLite has upserts since 3.24).
    package static func set(_ key: String, _ value: String, on connection: any DatabaseConnection) throws {
        let statement = try connection.prepare(
            "INSERT INTO \(quoteIdentifier(table)) (\"key\", \"value\") VALUES (?, ?) "
                + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = excluded.\"value\"")
        try statement.execute([.text(key), .text(value)])
    }

    /// The value of one key; nil when it is not set.
    package static func value(of key: String, on connection: any DatabaseConnection) throws -> String? {
        guard case .text(let value)? = try connection.scalar(
            sql: "SELECT \"value\" FROM \(quoteIdentifier(table)) WHERE \"key\" = ?", arguments: [.text(key)])
        else { return nil }
        return value
    }

    /// Removes the keys that are set among `keys`.
    package static func remove(_ keys: [String], on connection: any DatabaseConnection) throws {
        guard !keys.isEmpty else { return }
        let placeholders = Array(repeating: "?", count: keys.count).joined(separator: ", ")
        _ = try connection.rows(
            sql: "DELETE FROM \(quoteIdentifier(table)) WHERE \"key\" IN (\(placeholders))", arguments: keys.map { .text($0) })
    }
}
