/// Row stamps: a value the store keeps with a row only while the row stays as it was when the value was written,
/// so that whoever wrote it can later tell, from the row alone, that nothing changed it since.
///
/// The import is their one user: it stamps each row with the digest of the record that wrote it, and skips a later
/// record whose digest its row still carries (`RecordDigests`, in `CodableStoreImport`). The core only keeps the
/// promise that makes such a skip safe, on every path that writes:
///
/// **The stamp.** Each row has a `_digest` column (``SQLDialect/storesStamps``; the name is its
/// first user's), an `Int64` or NULL. A decoder given a record's stamp (`StoreDecoderImpl.useRecordStamp(_:)`)
/// hands it to the object it decodes (`Context.applyStamp(_:_:)`), unless the record left a reference unresolved.
///
/// **The promise.** A row keeps its stamp only while every change of what it holds comes with the same stamp:
/// - the context writes a row's stamp only when the object was stamped and nothing changed it since
///   (``EntityState/stampToWrite``); every other insert or update writes NULL, and so do updates by predicate;
/// - a link changed without the row's own write (from the other side, by application code) clears the row's stamp
///   (``WritePlan/Step/clearStamp(entity:rowID:)``), as does the deletion of a row it refers to
///   (``WritePlan/Step/clearStampsReferring(entity:destination:rowID:)``), for the entities whose rows have stamps
///   (``stampedEntities(_:on:)``, kept in the metadata table);
/// - a migration forgets the key (``forgetAll(on:)``): stamps made with it no longer match anything;
/// - SQL of other programs fires the store's guards (`DatabaseConnection.installStampGuards`:
///   SQLite's ``StampGuards``, installed by whoever marks an entity stamped; on PostgreSQL, `PostgresStampGuards`,
///   made with the schema), which clear the same; the store's own writes fire none.
///
/// Only entities whose rows hold all they are can keep that promise (``canStamp(_:)``): with an identity, and no
/// relationship stored in another table's rows (a to-many by foreign key changes without the owner's row).
package enum RowStamps {
    /// Metadata entries, named for the import that introduced them (stores on disk keep these names).
    static let keyEntry = "digest-key"
    static let entitiesEntry = "digested-entities"

    /// Whether rows of `mapping` can keep stamps.
    package static func canStamp(_ mapping: EntitySchema) -> Bool {
        guard !mapping.description.identity.isEmpty else { return false }
        for case let relationship? in mapping.relationships {
            if case .inverseForeignKey = relationship.storage { return false }
        }
        return true
    }

    /// The store's stamp key, made (and kept) if it has none: a stamp that mixes it in matches nothing once the
    /// store forgets it (``forgetAll(on:)``).
    package static func key(on connection: any DatabaseConnection) throws -> (UInt64, UInt64) {
        if let text = try StoreMetadata.value(of: keyEntry, on: connection), case let parts = text.split(separator: " "),
            parts.count == 2, let first = UInt64(parts[0], radix: 16), let second = UInt64(parts[1], radix: 16)
        {
            return (first, second)
        }
        var generator = SystemRandomNumberGenerator()
        let key = (generator.next() as UInt64, generator.next() as UInt64)
        try StoreMetadata.set(keyEntry, String(key.0, radix: 16) + " " + String(key.1, radix: 16), on: connection)
        return key
    }

    /// The entities whose rows have stamps (whose stamps other changes must clear).
    package static func stampedEntities(_ model: Schema, on connection: any DatabaseConnection) throws -> Set<Int> {
        guard let text = try StoreMetadata.value(of: entitiesEntry, on: connection) else { return [] }
        let names = Set(text.split(separator: "\n").map(String.init))
        return Set(model.mappings.filter { names.contains($0.name) }.map(\.index))
    }

    /// Records that rows of `entity` get stamps; returns every entity that has them.
    package static func markStamped(_ entity: Int, _ model: Schema, on connection: any DatabaseConnection) throws -> Set<Int> {
        var entities = try stampedEntities(model, on: connection)
        guard entities.insert(entity).inserted else { return entities }
        try StoreMetadata.set(
            entitiesEntry, entities.map { model.mappings[$0].name }.sorted().joined(separator: "\n"), on: connection)
        return entities
    }

    /// Forgets the key and the stamped entities, so that no stored stamp matches any more.
    package static func forgetAll(on connection: any DatabaseConnection) throws {
        try StoreMetadata.remove([keyEntry, entitiesEntry], on: connection)
    }
}
