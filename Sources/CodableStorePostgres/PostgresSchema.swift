import CodableStore
import Foundation
import Logging

/// The PostgreSQL backend's DDL: creates a store's tables in the connection's current schema, checks them against
/// the declared model on open (the model is recorded in the store's metadata table, ``StoreMetadata``, as on every
/// backend), and applies additive changes.
///
/// Column types follow the SQLite storage shape of each attribute (``AttributeValue``), so that both backends store,
/// compare and sort the same values: INTEGER is `bigint`, REAL `double precision`, TEXT `text COLLATE "C"` (byte
/// order, as SQLite compares text), BLOB `bytea`, and `Decimal` is `numeric` (exact, compared by value).
enum PostgresSchema {
    static let metadataTable = StoreMetadata.table
    /// How many row ids one `nextval` of a table's `_pk` sequence reserves (its increment): writers in parallel take
    /// their new rows' ids from the server, a round trip per block.
    static let rowIDBlock: Int64 = 1_024

    /// Creates or checks the schema in one transaction, holding a lock that other processes opening the same store
    /// wait for.
    static func prepare(
        _ connection: PostgresDatabaseConnection, model: Schema, policy: SchemaChangePolicy, migrations: [Migration], logger: Logger
    ) throws {
        let declared = SchemaSnapshot(model)
        // Most opens find the model as declared: a read transaction says so without the schema lock (which every
        // write holds, shared, for its whole run) and without DDL (which an application's role may not be allowed).
        if try connection.inReadTransaction({ try isCurrent(declared, model: model, migrations: migrations, on: connection) }) { return }
        try connection.beginSchemaTransaction()
        try connection.inBegunTransaction {
            try connection.execute(
                sql: "CREATE TABLE IF NOT EXISTS \(quoteIdentifier(metadataTable)) (\"key\" text PRIMARY KEY, \"value\" text NOT NULL)")
            try createCaseFolding(on: connection)
            guard case .text(let json)? = try connection.scalar(
                sql: "SELECT \"value\" FROM \(quoteIdentifier(metadataTable)) WHERE \"key\" = 'model'")
            else {
                let existing = try userTables(connection)
                if !existing.isEmpty { throw SchemaSnapshot.unexpectedTables(existing, use: "use an empty database or schema") }
                try create(model, on: connection)
                try record(declared, on: connection)
                try MigrationHistory.record(migrations, as: .recordedAtCreation, on: connection)
                _ = try PostgresStampGuards.install(model, guarding: false, on: connection)
                return
            }
            let stored = try SchemaSnapshot.stored(json, declared: declared)
            let applied = Set(try MigrationHistory.names(on: connection))
            let pending = migrations.filter { !applied.contains($0.name) }
            if let migration = pending.first(where: { !$0.steps.isEmpty }) {
                throw unsupportedSteps(of: migration)
            }
            // Migrations without steps (their changes made on the server by hand) are recorded as they come.
            try MigrationHistory.record(pending, as: .ran, on: connection)
            guard stored != declared else {
                try upgrade(model, on: connection)
                return
            }
            // The guards' bodies name tables and columns that the changes below may drop or rename; stamps made for
            // the stored model no longer say what a record of the declared one would write (see RowStamps).
            try PostgresStampGuards.dropAll(on: connection)
            try RowStamps.forgetAll(on: connection)
            let (additive, incompatible) = declared.differences(from: stored)
            if !incompatible.isEmpty {
                switch policy {
                case .fail:
                    throw SchemaSnapshot.incompatibleModel(
                        incompatible, remedy: "Open the store with schemaChangePolicy: .reset to drop and recreate it")
                case .reset(let onReset):
                    logger.info("store reset", metadata: ["differences": "\(incompatible)"])
                    for table in stored.joinTables + stored.entities.map(\.name) {
                        try connection.execute(sql: "DROP TABLE IF EXISTS \(quoteIdentifier(table)) CASCADE")
                    }
                    try create(model, on: connection)
                    try record(declared, on: connection)
                    _ = try PostgresStampGuards.install(model, guarding: false, on: connection)
                    onReset(incompatible)
                    return
                }
            }
            logger.info("store schema migrated", metadata: ["changes": "\(additive)"])
            try migrateAdditively(from: stored, to: model, on: connection)
            try upgrade(model, on: connection)
            try record(declared, on: connection)
        }
    }

    /// The error of a migration whose steps this backend cannot run: it names the migration and its first step,
    /// as a failed step on SQLite does.
    private static func unsupportedSteps(of migration: Migration) -> StoreError {
        let step = migration.steps[0]
        var error = StoreError(
            .unsupported,
            "migration '\(migration.name)', step 1 (\(step)) cannot run: migration steps run on SQLite stores only for now; "
                + "make the migration's changes with SQL on the server, then open the store with its steps removed; nothing was changed")
        error.migration = migration.name
        error.migrationStep = 1
        return error
    }

    /// `codablestore_fold(text)`, what case-insensitive predicates compare: Unicode lower case, as in SQLite (where
    /// the store registers a function of that name). `lower()` follows the database's locale, which may fold ASCII
    /// only (`C`); the ICU root collation, where the server has ICU, folds every script the same way everywhere.
    private static func createCaseFolding(on connection: any DatabaseConnection) throws {
        let icu = try connection.scalar(sql: "SELECT count(*) FROM pg_collation WHERE collname = 'und-x-icu'") == .integer(1)
        try connection.execute(
            sql: "CREATE OR REPLACE FUNCTION codablestore_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
                + "AS $$ SELECT lower($1\(icu ? " COLLATE \"und-x-icu\"" : "")) $$")
    }

    /// The entity tables whose `_pk` has no sequence (stores created before row ids came from the server).
    private static func tablesWithoutRowIDSequence(_ model: Schema, on connection: any DatabaseConnection) throws -> [String] {
        try entityTables(of: model, on: connection, where: "EXISTS (SELECT 1 FROM pg_attribute a "
            + "WHERE a.attrelid = c.oid AND a.attname = '_pk' AND a.attidentity = '' AND NOT a.attisdropped)")
    }

    /// The entity tables without a `_digest` column (stores created before PostgreSQL kept row stamps).
    private static func tablesWithoutStampColumn(_ model: Schema, on connection: any DatabaseConnection) throws -> [String] {
        try entityTables(of: model, on: connection, where: "NOT EXISTS (SELECT 1 FROM pg_attribute a "
            + "WHERE a.attrelid = c.oid AND a.attname = '_digest' AND NOT a.attisdropped)")
    }

    /// The tables of the current schema named after an entity of `model` for which `condition` holds (`c` is the
    /// table's `pg_class` row), by name.
    private static func entityTables(of model: Schema, on connection: any DatabaseConnection, where condition: String) throws -> [String] {
        let literal = PostgresStepGatherer.arrayLiteral(model.mappings.map { .text($0.name) })
        return try connection.rows(
            sql: "SELECT c.relname FROM pg_class c "
                + "WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                + "AND c.relname = ANY (?::text[]) AND c.relkind IN ('r', 'p') AND \(condition) ORDER BY c.relname",
            arguments: [.text(literal)]
        ).compactMap { if case .text(let name) = $0[0] { name } else { nil } }
    }

    /// Brings tables made by earlier versions up to date: row id sequences, stamp columns, stamp guards. A guard
    /// found dropped or changed is made again, and the stamps it guarded are forgotten (they may be stale).
    private static func upgrade(_ model: Schema, on connection: any DatabaseConnection) throws {
        try addRowIDSequences(model, on: connection)
        for table in try tablesWithoutStampColumn(model, on: connection) {
            try connection.execute(sql: "ALTER TABLE \(quoteIdentifier(table)) ADD COLUMN \"_digest\" bigint")
        }
        let stamped = try !RowStamps.stampedEntities(model, on: connection).isEmpty
        if try !PostgresStampGuards.install(model, guarding: stamped, on: connection) { try RowStamps.forgetAll(on: connection) }
    }

    /// Gives the `_pk` of tables created before row ids came from the server a sequence that starts after their rows.
    private static func addRowIDSequences(_ model: Schema, on connection: any DatabaseConnection) throws {
        for table in try tablesWithoutRowIDSequence(model, on: connection) {
            let name = quoteIdentifier(table)
            guard case .integer(let largest)? = try connection.scalar(sql: "SELECT coalesce(max(\"_pk\"), 0) FROM \(name)") else { continue }
            try connection.execute(
                sql: "ALTER TABLE \(name) ALTER COLUMN \"_pk\" ADD GENERATED BY DEFAULT AS IDENTITY "
                    + "(INCREMENT BY \(rowIDBlock) START WITH \(largest + 1))")
        }
    }

    /// Whether the schema holds the declared model, has recorded every migration, has the folding function, a row id
    /// sequence and a stamp column for every table, and its stamp guards as made.
    private static func isCurrent(
        _ declared: SchemaSnapshot, model: Schema, migrations: [Migration], on connection: any DatabaseConnection
    ) throws -> Bool {
        let hasMetadata = try connection.scalar(
            sql: "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?", arguments: [.text(metadataTable)])
        guard hasMetadata == .integer(1),
            case .text(let json)? = try connection.scalar(sql: "SELECT \"value\" FROM \(quoteIdentifier(metadataTable)) WHERE \"key\" = 'model'"),
            let stored = try? JSONDecoder().decode(SchemaSnapshot.self, from: Data(json.utf8)), stored == declared
        else { return false }
        let applied = Set(try MigrationHistory.names(on: connection))
        if migrations.contains(where: { !applied.contains($0.name) }) { return false }
        let folding = try connection.scalar(
            sql: "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                + "WHERE n.nspname = current_schema() AND p.proname = 'codablestore_fold'")
        return try folding != .integer(0) && tablesWithoutRowIDSequence(model, on: connection).isEmpty
            && tablesWithoutStampColumn(model, on: connection).isEmpty && PostgresStampGuards.areCurrent(model, on: connection)
    }

    private static func userTables(_ connection: any DatabaseConnection) throws -> [String] {
        try connection.rows(
            sql: "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> ? ORDER BY tablename",
            arguments: [.text(metadataTable)]
        ).compactMap { if case .text(let name) = $0[0] { name } else { nil } }
    }

    private static func record(_ snapshot: SchemaSnapshot, on connection: any DatabaseConnection) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try StoreMetadata.set("model", String(decoding: try encoder.encode(snapshot), as: UTF8.self), on: connection)
    }

    // MARK: - DDL

    static func type(of attribute: AttributeType) -> String {
        if attribute.name == AttributeType.decimal.name { return "numeric" }
        switch attribute.affinity {
        case "INTEGER": return "bigint"
        case "REAL": return "double precision"
        case "BLOB": return "bytea"
        case "NUMERIC": return "numeric"
        default: return "text COLLATE \"C\""
        }
    }

    /// The element type of an array of the column's values (`unnest(?::bigint[])`).
    static func arrayElementType(_ column: EntitySchema.Column) -> String {
        guard case .attribute(let attribute) = column.kind else { return "bigint" }
        let type = type(of: attribute.type)
        return type.hasPrefix("text") ? "text" : type
    }

    static func columnDefinition(_ column: EntitySchema.Column, model: Schema) -> String {
        let name = quoteIdentifier(column.name)
        switch column.kind {
        case .attribute(let attribute):
            var definition = "\(name) \(type(of: attribute.type))"
            if !attribute.isOptional { definition += " NOT NULL" }
            if let value = attribute.defaultValue, let literal = literal(value) { definition += " DEFAULT \(literal)" }
            return definition
        case .foreignKey:
            // The constraint is added once every table exists (PostgreSQL needs the referenced table first).
            return "\(name) bigint"
        case .order:
            return "\(name) bigint"
        }
    }

    /// A DEFAULT literal for a stored value.
    private static func literal(_ value: DatabaseValue) -> String? {
        switch value {
        case .null: "NULL"
        case .integer(let integer): "\(integer)"
        case .real(let real): real.isFinite ? "\(real)" : nil
        case .text(let text): "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
        case .blob(let data): "'\\x" + data.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "'::bytea"
        }
    }

    static func createTable(_ mapping: EntitySchema, model: Schema, on connection: any DatabaseConnection) throws {
        // Writers take row ids from the sequence in blocks (see PostgresDatabaseConnection.reserveRowIDs).
        // "_digest": the row's stamp (see RowStamps, PostgresStampGuards).
        let definitions = ["\"_pk\" bigint GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY \(rowIDBlock)) PRIMARY KEY"]
            + mapping.columns.map { columnDefinition($0, model: model) } + ["\"_digest\" bigint"]
        try connection.execute(sql: "CREATE TABLE \(quoteIdentifier(mapping.name)) (\(definitions.joined(separator: ", ")))")
        for index in RequiredIndex.all(of: mapping) { try create(index, on: connection) }
    }

    /// The foreign key constraint of a to-one relationship's column: cleared when the destination is deleted, checked
    /// at commit.
    static func addForeignKey(_ mapping: EntitySchema, column: EntitySchema.Column, model: Schema, on connection: any DatabaseConnection) throws {
        guard case .foreignKey(_, let destination) = column.kind else { return }
        try connection.execute(
            sql: "ALTER TABLE \(quoteIdentifier(mapping.name)) ADD FOREIGN KEY (\(quoteIdentifier(column.name))) "
                + "REFERENCES \(quoteIdentifier(model.mappings[destination].name))(\"_pk\") "
                + "ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED")
    }

    static func createJoinTable(_ join: JoinTable, model: Schema, on connection: any DatabaseConnection) throws {
        let source = quoteIdentifier(model.mappings[join.source].name)
        let target = quoteIdentifier(model.mappings[join.target].name)
        // "_row" orders by insertion the links of the unordered side of an ordered pair, as SQLite's rowid does.
        try connection.execute(
            sql: """
                CREATE TABLE \(quoteIdentifier(join.name)) (\
                "source" bigint NOT NULL REFERENCES \(source)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
                "target" bigint NOT NULL REFERENCES \(target)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
                "position" bigint, "_row" bigint GENERATED ALWAYS AS IDENTITY, UNIQUE ("source", "target"))
                """)
        try create(.foreignKey(of: join.name, column: "target"), on: connection)
    }

    static func create(_ index: RequiredIndex, on connection: any DatabaseConnection) throws {
        try connection.execute(
            sql: "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(quoteIdentifier(index.name)) ON "
                + "\(quoteIdentifier(index.table)) (" + index.columns.map(quoteIdentifier).joined(separator: ", ") + ")")
    }

    static func create(_ model: Schema, on connection: any DatabaseConnection) throws {
        for mapping in model.mappings { try createTable(mapping, model: model, on: connection) }
        for mapping in model.mappings {
            for column in mapping.columns { try addForeignKey(mapping, column: column, model: model, on: connection) }
        }
        for join in model.joinTables { try createJoinTable(join, model: model, on: connection) }
    }

    static func migrateAdditively(from stored: SchemaSnapshot, to model: Schema, on connection: any DatabaseConnection) throws {
        let storedEntities = Dictionary(stored.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var newForeignKeys: [(EntitySchema, EntitySchema.Column)] = []
        for mapping in model.mappings {
            guard let old = storedEntities[mapping.name] else {
                try createTable(mapping, model: model, on: connection)
                newForeignKeys += mapping.columns.map { (mapping, $0) }
                continue
            }
            let existing = Set(
                old.attributes.map(\.name) + old.relationships.filter { $0.kind == .toOne }.map(\.name) + old.orderColumns)
            for column in mapping.columns where !existing.contains(column.name) {
                try connection.execute(
                    sql: "ALTER TABLE \(quoteIdentifier(mapping.name)) ADD COLUMN \(columnDefinition(column, model: model))")
                if case .foreignKey = column.kind {
                    try create(.foreignKey(of: mapping.name, column: column.name), on: connection)
                    newForeignKeys.append((mapping, column))
                }
            }
            for index in old.indexes ?? [] where !mapping.indexes.contains(index) {
                try connection.execute(sql: "DROP INDEX IF EXISTS \(quoteIdentifier(index.name))")
            }
            for index in mapping.indexes where !(old.indexes ?? []).contains(index) {
                try RequiredIndex.checkNewUnique(index, of: mapping, on: connection)
                try create(
                    RequiredIndex(name: index.name, table: mapping.name, columns: index.columns, isUnique: index.unique),
                    on: connection)
            }
        }
        for (mapping, column) in newForeignKeys { try addForeignKey(mapping, column: column, model: model, on: connection) }
        let existingJoins = Set(stored.joinTables)
        for join in model.joinTables where !existingJoins.contains(join.name) {
            try createJoinTable(join, model: model, on: connection)
        }
    }
}

extension String {
    fileprivate func leftPadded(to count: Int) -> String {
        self.count >= count ? self : String(repeating: "0", count: count - self.count) + self
    }
}
