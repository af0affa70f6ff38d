extension Store {
    /// The migrations the store has recorded as applied, in the order they were applied: their names, the
    /// descriptions of their steps, when and how they were recorded.
    ///
    /// ```swift
    /// let store = try Store(path: path, entities: [Bug.self], options: .init(migrations: [
    ///     Migration("rename Ticket to Bug", [.renameEntity("Ticket", to: Bug.self)]),
    /// ]))
    /// let applied = try store.appliedMigrations()
    /// applied.map(\.name)     // ["rename Ticket to Bug"]
    /// applied[0].steps        // ["renameEntity(Ticket to Bug)"]
    /// applied[0].kind         // .ran, or .recordedAtCreation when the store was created with the migration
    /// ```
    /// The list is read from the store each time, in a read transaction: it includes what another process (or
    /// another ``Store`` of the same file) applied since this store opened. A migration that failed is not in it:
    /// its open threw ``StoreError/Code/migrationFailed`` and left the store as it was. Migrations applied by a
    /// version of CodableStore that recorded names only are listed as ``AppliedMigration/Kind/recordedByName``.
    ///
    /// - Returns: The applied migrations, oldest first; empty when the store has recorded none.
    /// - Throws: `SQLiteError` (or the PostgreSQL backend's error) when the store cannot be read;
    ///   ``StoreError/Code/schemaMismatch`` when the record in the metadata table cannot be read.
    public func appliedMigrations() throws -> [AppliedMigration] {
        try connections.withReader { connection in
            try connection.inReadTransaction { try MigrationHistory.applied(on: connection) }
        }
    }
}
