import CodableStore
import CodableStorePostgres

/// Where `--store` points: a SQLite file, or a PostgreSQL database given by a `postgres://` URL.
enum StoreLocation {
    static func isPostgres(_ location: String) -> Bool {
        location.hasPrefix("postgres://") || location.hasPrefix("postgresql://")
    }

    /// Opens (creating if needed) the store at `location` with a model's entities.
    static func open(
        _ location: String, entities: [any EntityObject.Type], runtimeEntities: [EntityDescription] = [],
        options: Store.Options = Store.Options()
    ) throws -> Store {
        if isPostgres(location) {
            return try Store.open(postgres: location, entities: entities, runtimeEntities: runtimeEntities, options: options)
        }
        return try Store(path: location, entities: entities, runtimeEntities: runtimeEntities, options: options)
    }
}
