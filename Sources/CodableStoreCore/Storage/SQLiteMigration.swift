import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
    /// The metadata table (``StoreMetadata``), as SQLite's DDL and the import's stamps name it.
    static let metadataTable = StoreMetadata.table

    /// Creates, checks and migrates the schema, and restores the indexes the model needs.
    ///
    /// Most opens find the model as declared: a read transaction says so without waiting for another process's
    /// write (an import holds the write lock for its whole run). Anything else happens in one write transaction.
    static func prepare(
        _ connection: Connection, model: Schema, policy: SchemaChangePolicy, migrations: [Migration] = [], logger: Logger
    ) throws {
        let declared = SchemaSnapshot(model)
        if try connection.inTransaction(.deferred, { try isCurrent(declared, model: model, migrations: migrations, on: connection) }) {
            return
        }
        // Rebuilding a table drops it, which with foreign keys on would clear or delete what points to it. They are
        // off for the migration (SQLite ignores the pragma inside a transaction) and checked before it commits.
        try connection.execute(sql: "PRAGMA foreign_keys = OFF")
        defer {
            try? connection.execute(sql: "PRAGMA foreign_keys = ON")
            connection.clearStatementCache()
        }
        try connection.inWriteTransaction {
            let writingSteps = try migrate(to: declared, model: model, policy: policy, migrations: migrations, on: connection, logger: logger)
            try restoreMissingIndexes(model, on: connection, logger: logger)
            try checkForeignKeys(on: connection, writingSteps: writingSteps)
        }
    }

    /// Whether the store holds the declared model, has run every migration and has every index it needs.
    private static func isCurrent(
        _ declared: SchemaSnapshot, model: Schema, migrations: [Migration], on connection: Connection
    ) throws -> Bool {
        guard let json = try storedModelJSON(connection),
            let stored = try? JSONDecoder().decode(SchemaSnapshot.self, from: Data(json.utf8)), stored == declared
        else { return false }
        if !migrations.isEmpty {
            let applied = Set(try MigrationHistory.names(on: connection))
            if migrations.contains(where: { !applied.contains($0.name) }) { return false }
        }
        return try missingIndexes(model, on: connection).isEmpty
    }

    /// Rows pointing to rows that do not exist, after a migration ran without foreign keys: an error naming one.
    ///
    /// The store's own tables had their dangling links and references removed after the steps (see
    /// ``clearDanglingReferences(_:on:)``), so what is left is in tables the steps' SQL made or changed beyond the
    /// model: the error names those steps, `writingSteps` (which of them wrote the row cannot be known).
    private static func checkForeignKeys(on connection: Connection, writingSteps: [StepOrigin]) throws {
        guard let row = try connection.rows(sql: "PRAGMA foreign_key_check").first else { return }
        let table = text(row[0])
        let parent = text(row[2])
        // A join table without positions has no row id to name.
        let place = row[1] == .null ? "a link in \(table)" : "\(table) row \(row[1])"
        guard !writingSteps.isEmpty else {
            throw StoreError(
                .migrationFailed, "after migrating, \(place) refers to a \(parent) row that does not exist; nothing was changed",
                entity: table)
        }
        throw StoreError.migrationFailed(
            writingSteps, "after the steps, \(place) refers to a \(parent) row that does not exist",
            entity: table)
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
    ///
    /// - Returns: The `.sql` and `.custom` steps that ran, which the foreign key check after it blames.
    private static func migrate(
        to declared: SchemaSnapshot, model: Schema, policy: SchemaChangePolicy, migrations: [Migration],
        on connection: Connection, logger: Logger
    ) throws -> [StepOrigin] {
        try connection.execute(
            sql: "CREATE TABLE IF NOT EXISTS \(quoteIdentifier(metadataTable)) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)")
        guard let json = try storedModelJSON(connection) else {
            let existing = try userTables(connection)
            if !existing.isEmpty { throw SchemaSnapshot.unexpectedTables(existing, use: "open an empty file") }
            try create(model, on: connection)
            try record(declared, on: connection)
            // A new store has the declared model: every migration is done.
            try MigrationHistory.record(migrations, as: .recordedAtCreation, on: connection)
            return []
        }
        var stored = try SchemaSnapshot.stored(json, declared: declared)
        let original = stored
        var plan = MigrationPlan()
        let applied = Set(try MigrationHistory.names(on: connection))
        let pending = migrations.filter { !applied.contains($0.name) }
        // The stamp guards' bodies name tables and columns that the steps may change (see StampGuards); a
        // migration forgets every stamp, and the next import that skips records guards its entities again.
        if !pending.isEmpty || stored != declared { try StampGuards.dropAll(on: connection) }
        for migration in pending {
            for (number, step) in migration.steps.enumerated() {
                let origin = StepOrigin(migration: migration.name, number: number + 1, step: step.description)
                do {
                    try apply(step, to: &stored, plan: &plan, model: model, on: connection, origin: origin)
                } catch {
                    // A step error of this file's says all there is: it is no cause.
                    throw StoreError.migrationFailed(
                        [origin], describe(error), entity: (error as? StoreError)?.entity, cause: error is StepError ? nil : error)
                }
            }
            logger.info("migration ran", metadata: ["migration": "\(migration.name)", "steps": "\(migration.steps.count)"])
        }
        let storedVersion = stored.version
        if storedVersion < 2 { upgradeStorage(&stored, to: declared, plan: &plan) }
        stored.version = declared.version
        try MigrationHistory.record(pending, as: .ran, on: connection)
        // Nothing ran and nothing differs (the open came for a missing index): nothing more to do here.
        if pending.isEmpty && plan.isEmpty && stored == original && stored == declared { return [] }
        let (additive, incompatible) = declared.differences(from: stored)
        if !incompatible.isEmpty {
            switch policy {
            case .fail:
                throw SchemaSnapshot.incompatibleModel(
                    incompatible,
                    remedy: "Add a Migration with a step for each (Store.Options.migrations), or open the store with "
                        + "schemaChangePolicy: .reset to drop and recreate it")
            case .reset(let onReset):
                logger.info("store reset", metadata: ["differences": "\(incompatible)"])
                try dropAll(stored: stored, on: connection)
                try create(model, on: connection)
                try record(declared, on: connection)
                onReset(incompatible)
                return []
            }
        }
        logger.info("store schema migrated", metadata: ["changes": "\(additive)"])
        try migrateAdditively(from: stored, to: model, on: connection)
        try reorientJoinTables(from: stored, to: model, on: connection)
        if storedVersion < 3 { try rebuildJoinTablesWithoutRowID(model, on: connection) }
        if storedVersion < 4 { try addStampColumns(model, on: connection) }
        // Whatever changed, no row's stamp says any more what decoding its record would do.
        try RowStamps.forgetAll(on: connection)
        let mappingNamed = Dictionary(model.mappings.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for (entity, transforms) in plan.rebuilds.sorted(by: { $0.key < $1.key }) {
            guard let mapping = mappingNamed[entity] else { continue }
            try rebuild(mapping, transforms: transforms, model: model, on: connection)
        }
        for entity in Set(plan.identityChanges.keys).union(plan.rebuilds.keys).sorted() {
            guard let mapping = mappingNamed[entity] else { continue }
            try checkUniqueness(mapping, plan: plan, on: connection)
        }
        if !pending.isEmpty { try clearDanglingReferences(model, on: connection) }
        try record(declared, on: connection)
        return plan.writingSteps
    }

    /// Steps run with foreign keys off: what their SQL deleted leaves links and references behind. They are removed
    /// as the store's foreign keys would have on the delete: links deleted (CASCADE), references set to NULL.
    private static func clearDanglingReferences(_ model: Schema, on connection: Connection) throws {
        for join in model.joinTables {
            let source = quoteIdentifier(model.mappings[join.source].name)
            let target = quoteIdentifier(model.mappings[join.target].name)
            try connection.execute(
                sql: "DELETE FROM \(quoteIdentifier(join.name)) WHERE \"source\" NOT IN (SELECT \"_pk\" FROM \(source)) "
                    + "OR \"target\" NOT IN (SELECT \"_pk\" FROM \(target))")
        }
        for mapping in model.mappings {
            for column in mapping.columns {
                guard case .foreignKey(_, let destination) = column.kind else { continue }
                let name = quoteIdentifier(column.name)
                try connection.execute(
                    sql: "UPDATE \(quoteIdentifier(mapping.name)) SET \(name) = NULL WHERE \(name) IS NOT NULL "
                        + "AND \(name) NOT IN (SELECT \"_pk\" FROM \(quoteIdentifier(model.mappings[destination].name)))")
            }
        }
    }

    // MARK: - Migration steps

    /// A step of a migration, for the errors of what it does after the steps ran (a transform, a check).
    struct StepOrigin: Hashable {
        var migration: String
        /// 1 for the migration's first step.
        var number: Int
        /// The step's ``Migration/Step/description``.
        var step: String

        /// `migration 'score as text', step 1 (changeType(of: Bug.score))`.
        var text: String { "migration '\(migration)', step \(number) (\(step))" }
    }

    /// A column of a table to rebuild: how its values are transformed, and by which steps.
    struct ColumnRebuild {
        /// Nil: the values are copied as they are.
        var transform: (@Sendable (DatabaseValue) throws -> DatabaseValue)?
        /// The steps whose transforms make `transform`, in the order they apply; empty for the storage upgrade's.
        var origins: [StepOrigin] = []

        /// The steps whose transforms make these columns' values, each once, in order: those to blame when the values
        /// break a constraint.
        static func origins(of columns: [String], in rebuilds: [String: ColumnRebuild]) -> [StepOrigin] {
            var origins: [StepOrigin] = []
            for column in columns {
                for origin in rebuilds[column]?.origins ?? [] where !origins.contains(origin) { origins.append(origin) }
            }
            return origins
        }
    }

    /// What the steps leave for after the additive changes: tables to rebuild (with the transforms of their
    /// columns), identities to check, and the steps that ran SQL of their own.
    struct MigrationPlan {
        /// Entity name → column → its rebuild.
        var rebuilds: [String: [String: ColumnRebuild]] = [:]
        /// Entity name → the (last) step that changed its identity.
        var identityChanges: [String: StepOrigin] = [:]
        /// The `.sql` and `.custom` steps: what they did to rows is known only by checking afterwards.
        var writingSteps: [StepOrigin] = []
        var isEmpty: Bool { rebuilds.isEmpty && identityChanges.isEmpty }
    }

    /// A step's failure for a message: a store or SQLite error's own message (the error is the cause, whose
    /// description has the rest: an SQLite error's code and SQL), any other error as it prints.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? StoreError { return error.message }
        if let error = error as? SQLiteError { return error.message }
        return "\(error)"
    }

    /// A text column's value as it is (an DatabaseValue's description quotes text).
    private static func text(_ value: DatabaseValue) -> String {
        if case .text(let text) = value { return text }
        return value.description
    }

    /// A transform's error, with the step it belongs to.
    private struct TransformError: Error {
        let origin: StepOrigin
        let error: any Error
    }

    private struct StepError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Applies one step to the store and to `stored`, the model it holds at that point.
    private static func apply(
        _ step: Migration.Step, to stored: inout SchemaSnapshot, plan: inout MigrationPlan, model: Schema, on connection: Connection,
        origin: StepOrigin
    ) throws {
        func entityIndex(_ name: String) throws -> Int {
            guard let index = stored.entities.firstIndex(where: { $0.name == name }) else {
                throw StepError("the store has no entity \(name) (it has \(stored.entities.map(\.name).joined(separator: ", ")))")
            }
            return index
        }
        /// The stored entity's index and its attribute's, by name.
        func storedAttribute(_ name: String, of entity: String) throws -> (entity: Int, attribute: Int) {
            let index = try entityIndex(entity)
            guard let attribute = stored.entities[index].attributes.firstIndex(where: { $0.name == name }) else {
                throw StepError("the store's \(entity) has no attribute \(name) (it has \(stored.entities[index].attributes.map(\.name).joined(separator: ", ")))")
            }
            return (index, attribute)
        }
        func attributeName(_ keyPath: KeyPathBox, _ mapping: EntitySchema) throws -> String {
            guard let field = keyPath.field(in: mapping.description),
                case .attribute(let attribute) = mapping.description.fields[field]
            else { throw StepError("\(keyPath) is not an attribute of \(mapping.name)") }
            return attribute.name
        }
        switch step.kind {
        case .renameEntity(let old, let type):
            let new = try model.mapping(for: type).name
            let index = try entityIndex(old)
            guard !stored.entities.contains(where: { $0.name == new }) else {
                throw StepError("the store already has an entity \(new)")
            }
            // SQLite rewrites the foreign keys that refer to the table; indexes keep their names, so the ones named
            // after the old entity are dropped and made again under the new name.
            try connection.execute(sql: "ALTER TABLE \(quoteIdentifier(old)) RENAME TO \(quoteIdentifier(new))")
            var renamedTables = [new]
            // Its own join tables are named after it and one of its relationships.
            for relationship in stored.entities[index].relationships {
                let join = old + "_" + relationship.name
                guard let position = stored.joinTables.firstIndex(of: join) else { continue }
                let renamed = new + "_" + relationship.name
                try connection.execute(sql: "ALTER TABLE \(quoteIdentifier(join)) RENAME TO \(quoteIdentifier(renamed))")
                stored.joinTables[position] = renamed
                renamedTables.append(renamed)
            }
            for row in try connection.rows(sql: "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") {
                let (name, table) = (text(row[0]), text(row[1]))
                guard renamedTables.contains(table), name.hasPrefix(old + "_") else { continue }
                try connection.execute(sql: "DROP INDEX \(quoteIdentifier(name))")
            }
            stored.entities[index].name = new
            stored.entities[index].indexes = nil  // dropped above (declared ones are made again with the additive changes)
            for entity in stored.entities.indices {
                for relationship in stored.entities[entity].relationships.indices
                where stored.entities[entity].relationships[relationship].destination == old {
                    stored.entities[entity].relationships[relationship].destination = new
                }
            }
        case .renameAttribute(let old, let keyPath, let root):
            let mapping = try model.mapping(for: root)
            let new = try attributeName(keyPath, mapping)
            let (index, attribute) = try storedAttribute(old, of: mapping.name)
            let table = quoteIdentifier(mapping.name)
            try connection.execute(sql: "ALTER TABLE \(table) RENAME COLUMN \(quoteIdentifier(old)) TO \(quoteIdentifier(new))")
            stored.entities[index].attributes[attribute].name = new
            stored.entities[index].identity = stored.entities[index].identity.map { $0 == old ? new : $0 }
            if let indexes = stored.entities[index].indexes {
                stored.entities[index].indexes = indexes.map { index in
                    var renamed = index
                    renamed.columns = index.columns.map { $0 == old ? new : $0 }
                    return renamed
                }
            }
            // A transform planned by an earlier step follows the column.
            if let transform = plan.rebuilds[mapping.name]?.removeValue(forKey: old) {
                plan.rebuilds[mapping.name]![new] = transform
            }
        case .changeType(let keyPath, let root, let transform):
            let mapping = try model.mapping(for: root)
            let name = try attributeName(keyPath, mapping)
            let (index, attribute) = try storedAttribute(name, of: mapping.name)
            let declared = mapping.description.attributes.first { $0.name == name }!
            stored.entities[index].attributes[attribute].type = declared.type.name
            stored.entities[index].attributes[attribute].optional = declared.isOptional
            // The transforms run when the table is rebuilt, after the steps: their errors carry the step.
            let transform: @Sendable (DatabaseValue) throws -> DatabaseValue = { value in
                do {
                    return try transform(value)
                } catch {
                    throw TransformError(origin: origin, error: error)
                }
            }
            let earlier = plan.rebuilds[mapping.name]?[name]
            if let earlierTransform = earlier?.transform {
                plan.rebuilds[mapping.name, default: [:]][name] = ColumnRebuild(
                    transform: { value in try transform(try earlierTransform(value)) }, origins: earlier!.origins + [origin])
            } else {
                plan.rebuilds[mapping.name, default: [:]][name] = ColumnRebuild(transform: transform, origins: (earlier?.origins ?? []) + [origin])
            }
        case .changeIdentity(let type):
            let mapping = try model.mapping(for: type)
            let index = try entityIndex(mapping.name)
            try connection.execute(sql: "DROP INDEX IF EXISTS \(quoteIdentifier(RequiredIndex.identity(of: mapping).name))")
            stored.entities[index].identity = mapping.identityColumns
            plan.identityChanges[mapping.name] = origin
        case .sql(let sql):
            plan.writingSteps.append(origin)
            try connection.execute(sql: sql)
        case .custom(let body):
            plan.writingSteps.append(origin)
            try body(connection)
        }
    }

    /// The storage changes of version 2 (see ``SchemaSnapshot/version``), planned as rebuilds: decimal columns get
    /// their collation, unsigned 64-bit values above `Int64.max` become blobs (their columns were recorded as `Int`).
    private static func upgradeStorage(_ stored: inout SchemaSnapshot, to declared: SchemaSnapshot, plan: inout MigrationPlan) {
        let declaredEntities = Dictionary(declared.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for entity in stored.entities.indices {
            guard let target = declaredEntities[stored.entities[entity].name] else { continue }
            for attribute in stored.entities[entity].attributes.indices {
                let old = stored.entities[entity].attributes[attribute]
                guard let new = target.attributes.first(where: { $0.name == old.name }) else { continue }
                let name = stored.entities[entity].name
                if old.type == "Decimal" && new.type == "Decimal" {
                    if plan.rebuilds[name]?[old.name] == nil { plan.rebuilds[name, default: [:]][old.name] = ColumnRebuild() }
                } else if old.type == "Int" && (new.type == "UInt64" || new.type == "UInt") {
                    stored.entities[entity].attributes[attribute].type = new.type
                    plan.rebuilds[name, default: [:]][old.name] = ColumnRebuild(transform: { value in
                        guard case .integer(let bits) = value, bits < 0 else { return value }
                        return UInt64(bitPattern: bits).databaseValue
                    })
                }
            }
        }
    }

    /// Makes a table again as the model declares it and copies its rows, through the transforms of its changed
    /// columns: how a column's type (its affinity, its collation) changes in SQLite. Foreign keys are off, so
    /// dropping the old table leaves what refers to it alone; the new one takes its name, and its indexes are made
    /// again afterwards (see ``restoreMissingIndexes``).
    private static func rebuild(
        _ mapping: EntitySchema, transforms: [String: ColumnRebuild], model: Schema, on connection: Connection
    ) throws {
        let table = quoteIdentifier(mapping.name)
        let temporaryName = mapping.name + "_codablestore_migrating"
        let temporary = quoteIdentifier(temporaryName)
        try connection.execute(sql: tableDefinition(mapping, named: temporaryName, model: model))
        let names = ["_pk"] + mapping.columns.map(\.name)
        // Whether each column refuses NULL (NOT NULL in its definition): a transform's null is its step's failure.
        let isRequired = [false] + mapping.columns.map { column in
            if case .attribute(let attribute) = column.kind { !attribute.isOptional } else { false }
        }
        let columns = names.map(quoteIdentifier).joined(separator: ", ")
        let steps = names.map { transforms[$0]?.transform }
        let select = try connection.makeStatement(sql: "SELECT \(columns) FROM \(table)")
        let insert = try connection.makeStatement(
            sql: "INSERT INTO \(temporary) (\(columns)) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))")
        while try select.step() {
            var values: [DatabaseValue] = []
            values.reserveCapacity(names.count)
            for (column, transform) in steps.enumerated() {
                let value = select.value(at: Int32(column))
                guard let transform else {
                    values.append(value)
                    continue
                }
                let result: DatabaseValue
                do {
                    result = try transform(value)
                } catch {
                    let failure = error as? TransformError
                    let reason = "\(mapping.name).\(names[column]) of row \(values[0]): cannot transform \(value): \(describe(failure?.error ?? error))"
                    throw StoreError.migrationFailed(
                        failure.map { [$0.origin] } ?? [], reason, entity: mapping.name, field: names[column], cause: failure?.error ?? error)
                }
                if result == .null, isRequired[column] {
                    throw StoreError.migrationFailed(
                        transforms[names[column]]?.origins ?? [],
                        "\(mapping.name).\(names[column]) of row \(values[0]): the transform of \(value) gave NULL, and \(mapping.name).\(names[column]) is not optional",
                        entity: mapping.name, field: names[column])
                }
                values.append(result)
            }
            try insert.bind(values)
            do {
                try insert.execute()
            } catch let error as SQLiteError where ResultCode.SQLITE_CONSTRAINT ~= error.resultCode {
                // Every transform of the row may be the cause.
                throw StoreError.migrationFailed(
                    ColumnRebuild.origins(of: names, in: transforms),
                    "\(mapping.name) row \(values[0]) does not fit the declared model after its transforms (\(error.message))",
                    entity: mapping.name, cause: error)
            }
        }
        try connection.execute(sql: "DROP TABLE \(table)")
        try connection.execute(sql: "ALTER TABLE \(temporary) RENAME TO \(table)")
    }

    /// Adds the `_digest` column (storage version 4) to the entity tables of a store made before it, which the
    /// additive migration just brought to the declared model (a table it created has it already).
    private static func addStampColumns(_ model: Schema, on connection: Connection) throws {
        for mapping in model.mappings {
            let columns = try connection.rows(sql: "SELECT name FROM pragma_table_info(?)", arguments: [.text(mapping.name)])
            if columns.contains(where: { $0.first == .text("_digest") }) { continue }
            try connection.execute(sql: "ALTER TABLE \(quoteIdentifier(mapping.name)) ADD COLUMN \"_digest\" INTEGER")
        }
    }

    /// Join tables whose sides swapped (a renamed entity now sorts on the other side of its many-to-many): the
    /// declared table is made, and the stored one's links are copied into it the other way round.
    private static func reorientJoinTables(from stored: SchemaSnapshot, to model: Schema, on connection: Connection) throws {
        let existing = Set(try connection.rows(sql: "SELECT name FROM sqlite_master WHERE type = 'table'").map { text($0[0]) })
        for join in model.joinTables {
            let source = model.mappings[join.source]
            let target = model.mappings[join.target]
            // The declared relationship from the source, and its inverse on the target.
            guard let relationship = join.name.hasPrefix(source.name + "_") ? String(join.name.dropFirst(source.name.count + 1)) : nil,
                let field = source.description.fields.firstIndex(where: { $0.name == relationship }),
                let inverse = source.relationships[field]?.inverse
            else { continue }
            let swapped = "\(target.name)_\(target.description.fields[inverse].name)"
            guard stored.joinTables.contains(swapped), existing.contains(swapped), !stored.joinTables.contains(join.name) else { continue }
            let position = join.hasPosition ? ", \"position\"" : ""
            try connection.execute(
                sql: "INSERT INTO \(quoteIdentifier(join.name)) (\"source\", \"target\"\(position)) "
                    + "SELECT \"target\", \"source\"\(position) FROM \(quoteIdentifier(swapped))")
            try connection.execute(sql: "DROP TABLE \(quoteIdentifier(swapped))")
        }
    }

    /// After a changed identity or a rebuild (whose transforms may have made values equal): stored rows that share
    /// an identity, or the columns of a declared unique index, are an error that names one such value and the
    /// steps to blame: the identity change, or the transforms of the columns concerned.
    private static func checkUniqueness(_ mapping: EntitySchema, plan: MigrationPlan, on connection: Connection) throws {
        let transformed = plan.rebuilds[mapping.name] ?? [:]
        func transformOrigins(_ columns: [String]) -> [StepOrigin] { ColumnRebuild.origins(of: columns, in: transformed) }
        if !mapping.identityColumns.isEmpty,
            let example = try RequiredIndex.duplicateExample(in: mapping.name, columns: mapping.identityColumns, on: connection)
        {
            let identity = mapping.identityColumns.joined(separator: ", ")
            let transforms = transformOrigins(mapping.identityColumns)
            guard let origin = plan.identityChanges[mapping.name] else {
                throw StoreError.migrationFailed(
                    transforms,
                    "after the type changes, \(mapping.name) rows share their identity [\(identity)]: \(example); change the transform or remove the duplicates in an earlier step",
                    entity: mapping.name)
            }
            // Either step may be the one to fix: the identity change, or a transform of its values.
            throw StoreError.migrationFailed(
                [origin] + transforms.filter { $0 != origin },
                "cannot change \(mapping.name)'s identity to [\(identity)]: rows share \(example)"
                    + (transforms.isEmpty
                        ? "; remove the duplicates in an earlier step"
                        : " after the type changes; change the transform or remove the duplicates in an earlier step"),
                entity: mapping.name)
        }
        // The rebuilt table lost its indexes: a declared unique one is made again afterwards, over what the
        // transforms left.
        for index in mapping.indexes where index.unique {
            let origins = transformOrigins(index.columns)
            guard !origins.isEmpty, let example = try RequiredIndex.duplicateExample(in: mapping.name, columns: index.columns, on: connection) else {
                continue
            }
            throw StoreError.migrationFailed(
                origins,
                "after the type changes, \(mapping.name) rows share \(example), which its unique index \(index.name) forbids; change the transform or remove the duplicates in an earlier step",
                entity: mapping.name)
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
        try StoreMetadata.set("model", String(decoding: try encoder.encode(snapshot), as: UTF8.self), on: connection)
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
            // Decimals are exact text compared by value (see Connection.registerDecimalCollation).
            if attribute.type.name == AttributeType.decimal.name { definition += " COLLATE codablestore_decimal" }
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
        try connection.execute(sql: tableDefinition(mapping, named: mapping.name, model: model))
        for index in RequiredIndex.all(of: mapping) { try create(index, on: connection) }
    }

    /// `CREATE TABLE` for the entity's table as the model declares it, under `name`.
    static func tableDefinition(_ mapping: EntitySchema, named name: String, model: Schema) -> String {
        let definitions = ["\"_pk\" INTEGER PRIMARY KEY"] + mapping.columns.map { columnDefinition($0, model: model) }
            + ["\"_digest\" INTEGER"]
        return "CREATE TABLE \(quoteIdentifier(name)) (\(definitions.joined(separator: ", ")))"
    }

    static func createIndex(_ index: SchemaSnapshot.Index, of mapping: EntitySchema, on connection: Connection) throws {
        try create(RequiredIndex(name: index.name, table: mapping.name, columns: index.columns, isUnique: index.unique), on: connection)
    }

    static func createForeignKeyIndex(_ mapping: EntitySchema, column: String, on connection: Connection) throws {
        try create(.foreignKey(of: mapping.name, column: column), on: connection)
    }

    // MARK: - Indexes

    /// Creates an index the model needs (see ``RequiredIndex``).
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
        return RequiredIndex.all(of: model).filter { existing[$0.name] != $0.isUnique }
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
                let example = try RequiredIndex.duplicateExample(in: index.table, columns: index.columns, on: connection) ?? "?"
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
        try connection.execute(sql: joinTableDefinition(join, named: join.name, model: model))
        try create(.foreignKey(of: join.name, column: "target"), on: connection)
    }

    /// `CREATE TABLE` for a join table under `name`. A table without positions (both sides unordered) is one
    /// B-tree keyed by (source, target), `WITHOUT ROWID`: a link is written once, where a rowid table writes it
    /// to the table and again to its unique index (storage version 3). A table with positions keeps a rowid: the
    /// unordered inverse side of an ordered pair reads its links in insertion order.
    static func joinTableDefinition(_ join: JoinTable, named name: String, model: Schema) -> String {
        let source = quoteIdentifier(model.mappings[join.source].name)
        let target = quoteIdentifier(model.mappings[join.target].name)
        let columns = """
            "source" INTEGER NOT NULL REFERENCES \(source)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
            "target" INTEGER NOT NULL REFERENCES \(target)("_pk") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, \
            "position" INTEGER
            """
        if join.hasPosition {
            return "CREATE TABLE \(quoteIdentifier(name)) (\(columns), UNIQUE (\"source\", \"target\"))"
        }
        return "CREATE TABLE \(quoteIdentifier(name)) (\(columns), PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
    }

    /// Storage version 3: the join tables without positions that a version 2 store (or a step of this migration,
    /// a rename) holds as rowid tables become `WITHOUT ROWID` tables with the same links. Foreign keys are off
    /// during a migration, so the drop leaves the entity tables alone.
    private static func rebuildJoinTablesWithoutRowID(_ model: Schema, on connection: Connection) throws {
        for join in model.joinTables where !join.hasPosition {
            guard case .text(let sql)? = try connection.scalar(
                sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [.text(join.name)]),
                !sql.uppercased().hasSuffix("WITHOUT ROWID")
            else { continue }
            let table = quoteIdentifier(join.name)
            let temporaryName = join.name + "_codablestore_migrating"
            let temporary = quoteIdentifier(temporaryName)
            try connection.execute(sql: joinTableDefinition(join, named: temporaryName, model: model))
            try connection.execute(
                sql: "INSERT INTO \(temporary) (\"source\", \"target\", \"position\") "
                    + "SELECT \"source\", \"target\", \"position\" FROM \(table)")
            try connection.execute(sql: "DROP TABLE \(table)")
            try connection.execute(sql: "ALTER TABLE \(temporary) RENAME TO \(table)")
            try create(.foreignKey(of: join.name, column: "target"), on: connection)
        }
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
                try RequiredIndex.checkNewUnique(index, of: mapping, on: connection)
                try createIndex(index, of: mapping, on: connection)
            }
        }
        let existingJoins = Set(stored.joinTables)
        for join in model.joinTables where !existingJoins.contains(join.name) {
            try createJoinTable(join, model: model, on: connection)
        }
    }
}

extension StoreError {
    /// A migration's failure, blaming the steps of `origins`:
    /// `migration 'score as text', step 1 (changeType(of: Bug.score)) failed: <reason>; nothing was changed`.
    /// Several steps are listed with "or" (what the store checks after the steps cannot always tell which of them
    /// did it); none is the storage upgrade's own rebuild.
    static func migrationFailed(
        _ origins: [SQLiteMigration.StepOrigin], _ reason: String, entity: String? = nil, field: String? = nil,
        cause: (any Error)? = nil
    ) -> StoreError {
        let blamed = origins.isEmpty ? "upgrading the store's storage" : origins.map(\.text).joined(separator: " or ")
        var error = StoreError(.migrationFailed, "\(blamed) failed: \(reason); nothing was changed", entity: entity, field: field, cause: cause)
        if let first = origins.first, origins.allSatisfy({ $0.migration == first.migration }) {
            error.migration = first.migration
            if origins.count == 1 { error.migrationStep = first.number }
        }
        return error
    }
}

extension DatabaseValue {
    /// Whether the value can be written as a DEFAULT literal (non-finite reals cannot).
    fileprivate var isLiteralSafe: Bool {
        if case .real(let value) = self { return value.isFinite }
        return true
    }
}
