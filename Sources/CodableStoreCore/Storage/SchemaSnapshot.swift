#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The model as recorded in the store's metadata table, compared on open with the declared one.
package struct SchemaSnapshot: Codable, Equatable, Sendable {
    package struct Attribute: Codable, Equatable, Sendable {
        package var name: String
        package var type: String
        package var optional: Bool
        package var defaultValue: String?
    }
    package struct Relationship: Codable, Equatable, Sendable {
        package var name: String
        package var destination: String
        package var kind: RelationshipDescription.Kind
        package var inverse: String?
    }
    package struct Entity: Codable, Equatable, Sendable {
        package var name: String
        package var attributes: [Attribute]
        package var relationships: [Relationship]
        package var identity: [String]
        package var orderColumns: [String]
        /// Declared indexes (optional so that models recorded before indexes existed still read).
        package var indexes: [Index]? = nil
    }
    package struct Index: Codable, Equatable, Sendable {
        package var name: String
        package var columns: [String]
        package var unique: Bool
    }
    /// The storage format: 1 stored `Decimal` as text compared as text, and `UInt64` above `Int64.max` as negative
    /// integers; 2 compares decimals by value (a collation) and stores such `UInt64`s as 8-byte big-endian blobs,
    /// so both sort by value; 3 keeps the links of join tables without positions in `WITHOUT ROWID` tables keyed
    /// by (source, target); 4 adds the `_digest` column to SQLite's entity tables (see ``RowStamps``). An older
    /// store is brought to 4 on open.
    package var version = 4
    package var entities: [Entity]
    package var joinTables: [String]

    package init(_ model: Schema) {
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

    /// The model a store recorded, as JSON, which this version must be able to read.
    package static func stored(_ json: String, declared: SchemaSnapshot) throws -> SchemaSnapshot {
        let stored: SchemaSnapshot
        do {
            stored = try JSONDecoder().decode(SchemaSnapshot.self, from: Data(json.utf8))
        } catch {
            throw StoreError(.schemaMismatch, "the stored model cannot be read: \(error)", cause: error)
        }
        if stored.version > declared.version {
            throw StoreError(
                .schemaMismatch,
                "the store was written by a newer CodableStore (storage version \(stored.version)); this version reads versions up to \(declared.version)")
        }
        return stored
    }

    /// Tables found where a store without a model is opened: CodableStore does not adopt them.
    package static func unexpectedTables(_ existing: [String], use alternative: String) -> StoreError {
        StoreError(
            .schemaMismatch,
            "the database already has tables (\(existing.joined(separator: ", "))) but no CodableStore model; \(alternative) or a store created by CodableStore",
            differences: existing.map { "unexpected table \($0)" })
    }

    /// The declared model differs from the stored one in ways no table or column added can follow; `remedy` says
    /// what the backend offers (a migration, a reset).
    package static func incompatibleModel(_ incompatible: [String], remedy: String) -> StoreError {
        StoreError(
            .schemaMismatch,
            "the store's model differs from the declared entities: " + incompatible.joined(separator: "; ") + ". " + remedy,
            differences: incompatible)
    }

    /// The differences from `stored` (what is on disk) to `self` (what is declared), split into those that
    /// can be applied by adding tables and columns and those that cannot.
    package func differences(from stored: SchemaSnapshot) -> (additive: [String], incompatible: [String]) {
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
