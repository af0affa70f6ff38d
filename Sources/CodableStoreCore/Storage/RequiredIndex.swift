/// An index the model needs, under the name the store gives it: the same on every backend, whose DDL creates it.
package struct RequiredIndex: Equatable {
    package var name: String
    package var table: String
    package var columns: [String]
    package var isUnique: Bool

    package init(name: String, table: String, columns: [String], isUnique: Bool) {
        self.name = name
        self.table = table
        self.columns = columns
        self.isUnique = isUnique
    }

    package static func identity(of mapping: EntitySchema) -> RequiredIndex {
        RequiredIndex(name: "\(mapping.name)_identity", table: mapping.name, columns: mapping.identityColumns, isUnique: true)
    }
    package static func foreignKey(of table: String, column: String) -> RequiredIndex {
        RequiredIndex(name: "\(table)_\(column)", table: table, columns: [column], isUnique: false)
    }

    /// The identity's unique index (what keeps identities unique), one per foreign key, and the declared ones.
    package static func all(of mapping: EntitySchema) -> [RequiredIndex] {
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

    /// Those of every entity, and one on each join table's `target` (its key starts with `source`).
    package static func all(of model: Schema) -> [RequiredIndex] {
        model.mappings.flatMap(all(of:))
            + model.joinTables.map { .foreignKey(of: $0.name, column: "target") }
    }

    /// One set of values that several rows of `table` share in `columns` (`repo = 'r', number = 101 (3 rows)`),
    /// nil when they are unique.
    package static func duplicateExample(in table: String, columns: [String], on connection: any DatabaseConnection) throws -> String? {
        let list = columns.map(quoteIdentifier).joined(separator: ", ")
        guard let row = try connection.rows(
            sql: "SELECT \(list), count(*) FROM \(quoteIdentifier(table)) GROUP BY \(list) HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 1"
        ).first else { return nil }
        return zip(columns, row).map { "\($0) = \($1)" }.joined(separator: ", ") + " (\(row[columns.count]) rows)"
    }

    /// A unique index declared since the store last opened, over rows that share its values: an error naming
    /// them, before the index is made (on every backend).
    package static func checkNewUnique(_ index: SchemaSnapshot.Index, of mapping: EntitySchema, on connection: any DatabaseConnection) throws {
        guard index.unique, let example = try duplicateExample(in: mapping.name, columns: index.columns, on: connection) else { return }
        throw StoreError(
            .schemaMismatch,
            "cannot add the unique index \(index.name) to \(mapping.name): rows share \(example); remove the "
                + "duplicates first (a Migration step); nothing was changed",
            entity: mapping.name)
    }
}
