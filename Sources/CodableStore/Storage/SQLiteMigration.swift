import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The model as recorded in the store's metadata table, compared on open with the declared one.
struct SchemaSnapshot: Codable, Equatable, Sendable {
    struct Attribute: Codable, Equatable, Sendable {
        var name: String
        var type: String
        var optional: Bool
        var defaultValue: String?
    }
    struct Relationship: Codable, Equatable, Sendable {
        var name: String
        var destination: String
        var kind: RelationshipDescription.Kind
        var inverse: String?
    }
    struct Entity: Codable, Equatable, Sendable {
        var name: String
        var attributes: [Attribute]
        var relationships: [Relationship]
        var identity: [String]
        var orderColumns: [String]
        /// Declared indexes (optional so that models recorded before indexes existed still read).
        var indexes: [Index]? = nil
    }
    struct Index: Codable, Equatable, Sendable {
        var name: String
        var columns: [String]
        var unique: Bool
    }
    var version = 1
    var entities: [Entity]
    var joinTables: [String]

    init(_ model: Schema) {
        entities = model.mappings.map { mapping in
            Entity(
                name: mapping.name,
                attributes: mapping.description.attributes.map {
                    Attribute(name: $0.name, type: $0.type.name, optional: $0.isOptional, defaultValue: $0.defaultValue?.description)
                },
                relationships: mapping.relationships.compactMap { $0 }.map { relationship in
                    let destination = model.mappings[relationship.destination]
                    return Relationship(
                        name: relationship.description.name,
                        destination: destination.name,
                        kind: relationship.description.kind,
                        inverse: relationship.inverse.map { destination.description.fields[$0].name })
                },
                identity: mapping.identityColumns,
                orderColumns: mapping.columns.filter { if case .order = $0.kind { true } else { false } }.map(\.name),
                indexes: mapping.indexes.isEmpty ? nil : mapping.indexes)
        }
        joinTables = model.joinTables.map(\.name)
    }

    /// The differences from `stored` (what is on disk) to `self` (what is declared), split into those that
    /// can be applied by adding tables and columns and those that cannot.
    func differences(from stored: SchemaSnapshot) -> (additive: [String], incompatible: [String]) {
        var additive: [String] = []
        var incompatible: [String] = []
        let storedEntities = Dictionary(stored.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let declaredNames = Set(entities.map(\.name))
        for old in stored.entities where !declaredNames.contains(old.name) {
            incompatible.append("entity \(old.name) was removed")
        }
        for entity in entities {
            guard let old = storedEntities[entity.name] else {
                additive.append("entity \(entity.name) is new")
                continue
            }
            let oldAttributes = Dictionary(old.attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let newAttributeNames = Set(entity.attributes.map(\.name))
            for attribute in old.attributes where !newAttributeNames.contains(attribute.name) {
                incompatible.append("\(entity.name).\(attribute.name): attribute was removed")
            }
            for attribute in entity.attributes {
                guard let previous = oldAttributes[attribute.name] else {
                    if attribute.optional || attribute.defaultValue != nil {
                        additive.append("\(entity.name).\(attribute.name): new attribute")
                    } else {
                        incompatible.append(
                            "\(entity.name).\(attribute.name): new non-optional attribute without a default value")
                    }
                    continue
                }
                if previous.type != attribute.type {
                    incompatible.append(
                        "\(entity.name).\(attribute.name): type changed from \(previous.type) to \(attribute.type)")
                }
                if previous.optional != attribute.optional {
                    incompatible.append(
                        "\(entity.name).\(attribute.name): changed from \(previous.optional ? "optional" : "non-optional") to \(attribute.optional ? "optional" : "non-optional")"
                    )
                }
            }
            let oldRelationships = Dictionary(old.relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let newRelationshipNames = Set(entity.relationships.map(\.name))
            for relationship in old.relationships where !newRelationshipNames.contains(relationship.name) {
                incompatible.append("\(entity.name).\(relationship.name): relationship was removed")
            }
            for relationship in entity.relationships {
                guard let previous = oldRelationships[relationship.name] else {
                    additive.append("\(entity.name).\(relationship.name): new relationship")
                    continue
                }
                if previous != relationship {
                    incompatible.append(
                        "\(entity.name).\(relationship.name): relationship changed from \(previous.kind) to \(previous.destination) (inverse \(previous.inverse ?? "none")) to \(relationship.kind) to \(relationship.destination) (inverse \(relationship.inverse ?? "none"))"
                    )
                }
            }
            if old.identity != entity.identity {
                incompatible.append(
                    "\(entity.name): identity changed from [\(old.identity.joined(separator: ", "))] to [\(entity.identity.joined(separator: ", "))]"
                )
            }
        }
        return (additive, incompatible)
    }
}

/// What to do when the stored model cannot be brought to the declared one by adding tables and columns.
public enum SchemaChangePolicy: Sendable {
    /// Throw a ``StoreError`` with code ``StoreError/Code/schemaMismatch`` listing the differences. The file is
    /// left untouched.
    case fail
    /// Drop every table of the store and recreate them empty, then call `onReset` with the differences.
    /// Use it for caches that can be downloaded again.
    case reset(onReset: @Sendable ([String]) -> Void = { _ in })
}

/// Creates a store's tables, checks them against the declared schema on open, and migrates them: additive
/// changes in place, others by the ``SchemaChangePolicy``. The SQLite backend's DDL lives here.
enum SQLiteMigration {
    static let metadataTable = "_codablestore_metadata"

    /// Creates, checks and migrates the schema, and restores the indexes the model needs.
    ///
    /// Most opens find the model as declared: a read transaction says so without waiting for another process's
    /// write (an import holds the write lock for its whole run). Anything else happens in one write transaction.
    static func prepare(_ connection: Connection, model: Schema, policy: SchemaChangePolicy, logger: Logger) throws {
        let declared = SchemaSnapshot(model)
        if try connection.inTransaction(.deferred, { try isCurrent(declared, model: model, on: connection) }) { return }
        try connection.inWriteTransaction {
            try migrate(to: declared, model: model, policy: policy, on: connection, logger: logger)
            try restoreMissingIndexes(model, on: connection, logger: logger)
        }
        connection.clearStatementCache()
    }

    /// Whether the store holds the declared model and every index it needs.
    private static func isCurrent(_ declared: SchemaSnapshot, model: Schema, on connection: Connection) throws -> Bool {
        guard let json = try storedModelJSON(connection),
            let stored = try? JSONDecoder().decode(SchemaSnapshot.self, from: Data(json.utf8)), stored == declared
        else { return false }
        return try missingIndexes(model, on: connection).isEmpty
    }

    /// The model recorded in the store, as JSON; nil when there is none (no metadata table, or no model in it).
    private static func storedModelJSON(_ connection: Connection) throws -> String? {
        let hasMetadata = try connection.scalar(
            sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [.text(metadataTable)])
        guard hasMetadata == .integer(1),
            case .text(let json)? = try connection.scalar(
                sql: "SELECT \"value\" FROM \(quoteIdentifier(metadataTable)) WHERE \"key\" = 'model'")
        else { return nil }
        return json
    }

    /// Creates the schema, or brings the stored one to the declared one, in the caller's write transaction.
    private static func migrate(
        to declared: SchemaSnapshot, model: Schema, policy: SchemaChangePolicy, on connection: Connection, logger: Logger
    ) throws {
        try connection.execute(
            sql: "CREATE TABLE IF NOT EXISTS \(quoteIdentifier(metadataTable)) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)")
        guard let json = try storedModelJSON(connection) else {
            let existing = try userTables(connection)
            if !existing.isEmpty {
                throw StoreError(
                    .schemaMismatch,
                    "the database already has tables (\(existing.joined(separator: ", "))) but no CodableStore model; open an empty file or a store created by CodableStore",
                    differences: existing.map { "unexpected table \($0)" })
            }
            try create(model, on: connection)
            try record(declared, on: connection)
            return
        }
        let stored: SchemaSnapshot
        do {
            stored = try JSONDecoder().decode(SchemaSnapshot.self, from: Data(json.utf8))
        } catch {
            throw StoreError(.schemaMismatch, "the stored model cannot be read: \(error)", cause: error)
        }
        if stored == declared { return }
        let (additive, incompatible) = declared.differences(from: stored)
        if !incompatible.isEmpty {
            switch policy {
            case .fail:
                throw StoreError(
                    .schemaMismatch,
                    "the store's model differs from the declared entities: " + incompatible.joined(separator: "; ")
                        + ". Open the store with schemaChangePolicy: .reset to drop and recreate it",
                    differences: incompatible)
            case .reset(let onReset):
                logger.info("store reset", metadata: ["differences": "\(incompatible)"])
                try dropAll(stored: stored, on: connection)
                try create(model, on: connection)
                try record(declared, on: connection)
                onReset(incompatible)
                return
            }
        }
        if !additive.isEmpty || stored != declared {
            logger.info("store schema migrated", metadata: ["changes": "\(additive)"])
            try migrateAdditively(from: stored, to: model, on: connection)
            try record(declared, on: connection)
        }
    }

    private static func userTables(_ connection: Connection) throws -> [String] {
        try connection.rows(
            sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> ?",
            arguments: [.text(metadataTable)]
        ).compactMap { if case .text(let name) = $0[0] { name } else { nil } }
    }

    private static func record(_ snapshot: SchemaSnapshot, on connection: Connection) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(snapshot), as: UTF8.self)
        try connection.execute(
            sql: "INSERT OR REPLACE INTO \(quoteIdentifier(metadataTable)) (\"key\", \"value\") VALUES ('model', ?)",
            arguments: [.text(json)])
    }

    private static func dropAll(stored: SchemaSnapshot, on connection: Connection) throws {
        // Foreign keys would make the drop order matter; they are checked at commit, when all are gone.
        for table in stored.joinTables + stored.entities.map(\.name) {
            try connection.execute(sql: "DROP TABLE IF EXISTS \(quoteIdentifier(table))")
        }
    }

    // MARK: - DDL

    static func columnDefinition(_ column: EntitySchema.Column, model: Schema) -> String {
        let name = quoteIdentifier(column.name)
        switch column.kind {
        case .attribute(let attribute):
            var definition = "\(name) \(attribute.type.affinity)"
            if !attribute.isOptional { definition += " NOT NULL" }
            if let value = attribute.defaultValue, value.isLiteralSafe { definition += " DEFAULT \(value)" }
            return definition
        case .foreignKey(_, let destination):
            return "\(name) INTEGER REFERENCES \(quoteIdentifier(model.mappings[destination].name))(\"_pk\") "
                + "ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED"
        case .order:
            return "\(name) INTEGER"
        }
    }

    static func createTable(_ mapping: EntitySchema, model: Schema, on connection: Connection) throws {
        let table = quoteIdentifier(mapping.name)
        let definitions = ["\"_pk\" INTEGER PRIMARY KEY"] + mapping.columns.map { columnDefinition($0, model: model) }
        try connection.execute(sql: "CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        for index in requiredIndexes(of: mapping) { try create(index, on: connection) }
    }

    static func createIndex(_ index: SchemaSnapshot.Index, of mapping: EntitySchema, on connection: Connection) throws {
        try create(RequiredIndex(name: index.name, table: mapping.name, columns: index.columns, isUnique: index.unique), on: connection)
    }

    static func createForeignKeyIndex(_ mapping: EntitySchema, column: String, on connection: Connection) throws {
        try create(.foreignKey(of: mapping.name, column: column), on: connection)
    }

    // MARK: - Indexes

    /// An index the model needs, under the name the store gives it.
    struct RequiredIndex: Equatable {
        var name: String
        var table: String
        var columns: [String]
        var isUnique: Bool

        static func identity(of mapping: EntitySchema) -> RequiredIndex {
            RequiredIndex(name: "\(mapping.name)_identity", table: mapping.name, columns: mapping.identityColumns, isUnique: true)
        }
        static func foreignKey(of table: String, column: String) -> RequiredIndex {
            RequiredIndex(name: "\(table)_\(column)", table: table, columns: [column], isUnique: false)
        }
    }

    /// The identity's unique index (what keeps identities unique), one per foreign key, and the declared ones.
    static func requiredIndexes(of mapping: EntitySchema) -> [RequiredIndex] {
        var indexes: [RequiredIndex] = []
        if !mapping.identityColumns.isEmpty { indexes.append(.identity(of: mapping)) }
        for column in mapping.columns {
            if case .foreignKey = column.kind { indexes.append(.foreignKey(of: mapping.name, column: column.name)) }
        }
        for index in mapping.indexes {
            indexes.append(RequiredIndex(name: index.name, table: mapping.name, columns: index.columns, isUnique: index.unique))
        }
        return indexes
    }

    static func requiredIndexes(of model: Schema) -> [RequiredIndex] {
        model.mappings.flatMap(requiredIndexes(of:))
            + model.joinTables.map { .foreignKey(of: $0.name, column: "target") }
    }

    static func create(_ index: RequiredIndex, on connection: Connection) throws {
        try connection.execute(
            sql: "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(quoteIdentifier(index.name)) ON "
                + "\(quoteIdentifier(index.table)) (" + index.columns.map(quoteIdentifier).joined(separator: ", ") + ")")
    }

    /// The required indexes that the file lacks, or has without their uniqueness: dropped by hand or by another
    /// tool. (Only their names and uniqueness are compared: a store never changes an index's columns.)
    private static func missingIndexes(_ model: Schema, on connection: Connection) throws -> [RequiredIndex] {
        var existing: [String: Bool] = [:]
        for row in try connection.rows(sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index'") {
            guard case .text(let name) = row[0] else { continue }
            if case .text(let sql) = row[1] { existing[name] = sql.uppercased().hasPrefix("CREATE UNIQUE") } else { existing[name] = false }
        }
        return requiredIndexes(of: model).filter { existing[$0.name] != $0.isUnique }
    }

    /// Recreates the missing indexes. A unique one that cannot be, because the table now holds duplicates, is
    /// an error that says which: the store never runs without the uniqueness its identities rely on.
    private static func restoreMissingIndexes(_ model: Schema, on connection: Connection, logger: Logger) throws {
        for index in try missingIndexes(model, on: connection) {
            logger.warning("index restored", metadata: ["index": "\(index.name)", "table": "\(index.table)"])
            try connection.execute(sql: "DROP INDEX IF EXISTS \(quoteIdentifier(index.name))")
            do {
                try create(index, on: connection)
            } catch let error as SQLiteError where index.isUnique && ResultCode.SQLITE_CONSTRAINT ~= error.resultCode {
                let columns = index.columns.map(quoteIdentifier).joined(separator: ", ")
                let duplicate = try connection.rows(
                    sql: "SELECT \(columns), count(*) FROM \(quoteIdentifier(index.table)) GROUP BY \(columns) "
                        + "HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 1"
                ).first
                let example = duplicate.map { row in
                    zip(index.columns, row).map { "\($0) = \($1)" }.joined(separator: ", ") + " (\(row[index.columns.count]) rows)"
                } ?? "?"
                throw StoreError(
                    .schemaMismatch,
                    "\(index.table)'s unique index \(index.name) is missing from the file and cannot be restored: "
                        + "\(index.table) holds rows with the same \(index.columns.joined(separator: ", ")), such as \(example). "
                        + "Remove the duplicates, or open the store with schemaChangePolicy: .reset to recreate it",
                    entity: index.table, cause: error)
            }
        }
    }

    static func createJoinTable(_ join: JoinTable, model: Schema, on connection: Connection) throws {
        let source = quoteIdentifier(model.mappings[join.source].name)
        let target = quoteIdentifier(model.mappings[join.target].name)
        try connection.execute(
            sql: """
                CREATE TABLE \(quoteIdentifier(join.name)) (\
                "source" INTEGER NOT NULL REFERENCES \(source)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
                "target" INTEGER NOT NULL REFERENCES \(target)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
                "position" INTEGER, UNIQUE ("source", "target"))
                """)
        try create(.foreignKey(of: join.name, column: "target"), on: connection)
    }

    static func create(_ model: Schema, on connection: Connection) throws {
        for mapping in model.mappings { try createTable(mapping, model: model, on: connection) }
        for join in model.joinTables { try createJoinTable(join, model: model, on: connection) }
    }

    static func migrateAdditively(from stored: SchemaSnapshot, to model: Schema, on connection: Connection) throws {
        let storedEntities = Dictionary(stored.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for mapping in model.mappings {
            guard let old = storedEntities[mapping.name] else {
                try createTable(mapping, model: model, on: connection)
                continue
            }
            let existing = Set(
                old.attributes.map(\.name)
                    + old.relationships.filter { $0.kind == .toOne }.map(\.name) + old.orderColumns)
            for column in mapping.columns where !existing.contains(column.name) {
                try connection.execute(
                    sql: "ALTER TABLE \(quoteIdentifier(mapping.name)) ADD COLUMN \(columnDefinition(column, model: model))")
                if case .foreignKey = column.kind {
                    try createForeignKeyIndex(mapping, column: column.name, on: connection)
                }
            }
        }
        // Indexes follow the declarations: new ones are created, ones no longer declared are dropped.
        for mapping in model.mappings {
            let old = storedEntities[mapping.name]?.indexes ?? []
            for index in old where !mapping.indexes.contains(index) {
                try connection.execute(sql: "DROP INDEX IF EXISTS \(quoteIdentifier(index.name))")
            }
            for index in mapping.indexes where !old.contains(index) {
                try createIndex(index, of: mapping, on: connection)
            }
        }
        let existingJoins = Set(stored.joinTables)
        for join in model.joinTables where !existingJoins.contains(join.name) {
            try createJoinTable(join, model: model, on: connection)
        }
    }
}

extension SQLiteValue {
    /// Whether the value can be written as a DEFAULT literal (non-finite reals cannot).
    fileprivate var isLiteralSafe: Bool {
        if case .real(let value) = self { return value.isFinite }
        return true
    }
}
