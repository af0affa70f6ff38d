import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The model as recorded in the store's metadata table, compared on open with the declared one.
struct ModelSnapshot: Codable, Equatable, Sendable {
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

    init(_ model: StoreModel) {
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
    func differences(from stored: ModelSnapshot) -> (additive: [String], incompatible: [String]) {
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

enum SchemaManager {
    static let metadataTable = "_codablestore_metadata"

    /// Creates, checks and migrates the schema, in one transaction on `connection`.
    static func prepare(_ connection: Connection, model: StoreModel, policy: SchemaChangePolicy, logger: Logger) throws {
        try connection.inTransaction(.immediate) {
            try connection.execute(
                sql: "CREATE TABLE IF NOT EXISTS \(quoteIdentifier(metadataTable)) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)")
            let declared = ModelSnapshot(model)
            guard case .text(let json)? = try connection.scalar(
                sql: "SELECT \"value\" FROM \(quoteIdentifier(metadataTable)) WHERE \"key\" = 'model'")
            else {
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
            let stored: ModelSnapshot
            do {
                stored = try JSONDecoder().decode(ModelSnapshot.self, from: Data(json.utf8))
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
        connection.clearStatementCache()
    }

    private static func userTables(_ connection: Connection) throws -> [String] {
        try connection.rows(
            sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> ?",
            arguments: [.text(metadataTable)]
        ).compactMap { if case .text(let name) = $0[0] { name } else { nil } }
    }

    private static func record(_ snapshot: ModelSnapshot, on connection: Connection) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(snapshot), as: UTF8.self)
        try connection.execute(
            sql: "INSERT OR REPLACE INTO \(quoteIdentifier(metadataTable)) (\"key\", \"value\") VALUES ('model', ?)",
            arguments: [.text(json)])
    }

    private static func dropAll(stored: ModelSnapshot, on connection: Connection) throws {
        // Foreign keys would make the drop order matter; they are checked at commit, when all are gone.
        for table in stored.joinTables + stored.entities.map(\.name) {
            try connection.execute(sql: "DROP TABLE IF EXISTS \(quoteIdentifier(table))")
        }
    }

    // MARK: - DDL

    static func columnDefinition(_ column: EntityMapping.Column, model: StoreModel) -> String {
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

    static func createTable(_ mapping: EntityMapping, model: StoreModel, on connection: Connection) throws {
        let table = quoteIdentifier(mapping.name)
        let definitions = ["\"_pk\" INTEGER PRIMARY KEY"] + mapping.columns.map { columnDefinition($0, model: model) }
        try connection.execute(sql: "CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        if !mapping.identityColumns.isEmpty {
            try connection.execute(
                sql: "CREATE UNIQUE INDEX \(quoteIdentifier("\(mapping.name)_identity")) ON \(table) ("
                    + mapping.identityColumns.map(quoteIdentifier).joined(separator: ", ") + ")")
        }
        for column in mapping.columns {
            if case .foreignKey = column.kind { try createForeignKeyIndex(mapping, column: column.name, on: connection) }
        }
        for index in mapping.indexes { try createIndex(index, of: mapping, on: connection) }
    }

    static func createIndex(_ index: ModelSnapshot.Index, of mapping: EntityMapping, on connection: Connection) throws {
        try connection.execute(
            sql: "CREATE \(index.unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(quoteIdentifier(index.name)) ON "
                + "\(quoteIdentifier(mapping.name)) (" + index.columns.map(quoteIdentifier).joined(separator: ", ") + ")")
    }

    static func createForeignKeyIndex(_ mapping: EntityMapping, column: String, on connection: Connection) throws {
        try connection.execute(
            sql: "CREATE INDEX IF NOT EXISTS \(quoteIdentifier("\(mapping.name)_\(column)")) ON "
                + "\(quoteIdentifier(mapping.name)) (\(quoteIdentifier(column)))")
    }

    static func createJoinTable(_ join: JoinTable, model: StoreModel, on connection: Connection) throws {
        let source = quoteIdentifier(model.mappings[join.source].name)
        let target = quoteIdentifier(model.mappings[join.target].name)
        try connection.execute(
            sql: """
                CREATE TABLE \(quoteIdentifier(join.name)) (\
                "source" INTEGER NOT NULL REFERENCES \(source)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
                "target" INTEGER NOT NULL REFERENCES \(target)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
                "position" INTEGER, UNIQUE ("source", "target"))
                """)
        try connection.execute(
            sql: "CREATE INDEX \(quoteIdentifier("\(join.name)_target")) ON \(quoteIdentifier(join.name)) (\"target\")")
    }

    static func create(_ model: StoreModel, on connection: Connection) throws {
        for mapping in model.mappings { try createTable(mapping, model: model, on: connection) }
        for join in model.joinTables { try createJoinTable(join, model: model, on: connection) }
    }

    static func migrateAdditively(from stored: ModelSnapshot, to model: StoreModel, on connection: Connection) throws {
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
