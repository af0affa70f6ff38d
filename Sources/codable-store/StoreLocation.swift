import CodableStore
import CodableStorePostgres

/// Where `--store` points: a SQLite file, or a PostgreSQL database given by a `postgres://` URL.
enum StoreLocation {
    static func isPostgres(_ location: String) -> Bool {
        location.hasPrefix("postgres://") || location.hasPrefix("postgresql://")
    }

    /// Opens (creating if needed) the store at `location` with the reference model.
    static func open(_ location: String, entities: [any EntityObject.Type], options: Store.Options = Store.Options()) throws -> Store {
        if isPostgres(location) { return try Store.open(postgres: location, entities: entities, options: options) }
        return try Store(path: location, entities: entities, options: options)
    }
}
