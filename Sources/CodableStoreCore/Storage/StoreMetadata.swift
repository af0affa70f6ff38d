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
}
