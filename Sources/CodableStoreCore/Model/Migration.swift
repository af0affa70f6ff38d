/// A named change of a store's model that adding tables and columns cannot make: renaming an entity or an
/// attribute, changing an attribute's type with a transform of its values, changing an identity, or fixing data
/// with SQL. Give the store every migration, oldest first, in ``Store/Options/migrations``.
///
/// ```swift
/// let migrations = [
///     Migration("rename Ticket to Issue", [.renameEntity("Ticket", to: Issue.self)]),
///     Migration("score as text", [.changeType(of: \Issue.score, from: Int.self) { String($0) }]),
///     Migration("identity is repository and number", [
///         .sql("DELETE FROM Issue WHERE _pk NOT IN (SELECT min(_pk) FROM Issue GROUP BY repository, number)"),
///         .changeIdentity(of: Issue.self),
///     ]),
/// ]
/// let store = try Store(path: path, entities: [Issue.self], options: .init(migrations: migrations))
/// ```
///
/// On open, the migrations the store has not recorded run in order, their steps in order, then the additive
/// changes (new entities, attributes, relationships, indexes); the store records each migration (its name, its
/// steps' descriptions and the time), all in one transaction. A new store records every migration as done.
/// ``Store/appliedMigrations()`` lists what a store recorded. What remains different after the steps and is not
/// additive is a ``StoreError/Code/schemaMismatch`` that names each difference (or a reset, with
/// ``SchemaChangePolicy/reset(onReset:)``).
///
/// A step that fails rolls everything back (the file is as it was, and no migration is recorded), and the open
/// throws ``StoreError/Code/migrationFailed`` whose message names the migration, the step (its number and
/// ``Step/description``) and a row where there is one; ``StoreError/migration`` and ``StoreError/migrationStep``
/// say the same for code:
///
/// ```
/// migration 'score as text', step 1 (changeType(of: Bug.score)) failed: Bug.score of row 2: cannot transform 20: …; nothing was changed
/// migration 'identity is repo and number', step 1 (changeIdentity(of: Bug)) failed: cannot change Bug's identity to
///     [repo, number]: rows share repo = 'r', number = 101 (3 rows); remove the duplicates in an earlier step; nothing was changed
/// ```
/// Some failures are found by checks after every step ran: transforms run when a table is rebuilt, identities and
/// unique indexes are checked over the rebuilt rows, and foreign keys before the commit. Their errors blame the step
/// that asked for what failed (the transform, the identity change); where the check cannot tell which step wrote a
/// row (a foreign key to a row that does not exist, in a table a `.sql` or `.custom` step made), it lists every
/// such step with "or".
///
/// Steps run in order and see the store as the steps before left it: rename an entity before the steps that name
/// its attributes (they name the entity by its declared type). A rebuilt table (a type change) has exactly the
/// declared model's columns: a column that a `.sql` step added and the model does not declare is dropped.
///
/// Names are the record: never rename a migration that has run, and never reuse a name.
public struct Migration: Sendable {
    /// The name recorded in the store once the migration has run.
    public let name: String
    /// The changes, run in order.
    public let steps: [Step]

    /// A migration named `name`, made of `steps`.
    ///
    /// ```swift
    /// Migration("rename Ticket to Issue", [.renameEntity("Ticket", to: Issue.self)])
    /// ```
    /// - Parameters:
    ///   - name: What the store records once the migration has run: never reuse or rename it.
    ///   - steps: The changes, run in order; none for a migration whose changes are made by hand (on a PostgreSQL
    ///     server, say), which is then only recorded.
    public init(_ name: String, _ steps: [Step]) {
        self.name = name
        self.steps = steps
    }

    /// One change of a migration. Old names are the names the store gave: an entity's type name, an attribute's
    /// property name.
    public struct Step: Sendable, CustomStringConvertible {
        enum Kind: Sendable {
            case renameEntity(from: String, to: EntityReference)
            case renameAttribute(from: String, to: KeyPathBox, root: EntityReference)
            case changeType(of: KeyPathBox, root: EntityReference, transform: @Sendable (DatabaseValue) throws -> DatabaseValue)
            case changeIdentity(of: EntityReference)
            case sql(String)
            case custom(@Sendable (Connection) throws -> Void)
        }
        let kind: Kind

        /// The entity stored as `oldName` is the declared entity `type` now; its rows, relationships and links are kept.
        public static func renameEntity(_ oldName: String, to type: any EntityObject.Type) -> Step {
            Step(kind: .renameEntity(from: oldName, to: .type(type)))
        }

        /// The attribute stored as `oldName` is the attribute at `keyPath` now; its values are kept.
        public static func renameAttribute<Root: EntityObject, Value>(_ oldName: String, to keyPath: KeyPath<Root, Value>) -> Step {
            Step(kind: .renameAttribute(from: oldName, to: KeyPathBox(keyPath), root: .type(Root.self)))
        }

        /// ``renameEntity(_:to:)`` for an entity described at run time: the entity stored as `oldName` is the declared
        /// entity `newName` now.
        public static func renameEntity(_ oldName: String, toEntityNamed newName: String) -> Step {
            Step(kind: .renameEntity(from: oldName, to: .name(newName)))
        }

        /// ``renameAttribute(_:to:)`` for an entity described at run time: the attribute stored as `oldName` is the
        /// declared attribute `newName` of the entity `entity` now.
        public static func renameAttribute(_ oldName: String, to newName: String, ofEntityNamed entity: String) -> Step {
            Step(kind: .renameAttribute(from: oldName, to: KeyPathBox(name: newName), root: .name(entity)))
        }

        /// ``changeType(of:_:)`` for an entity described at run time: each stored value of the attribute `attribute`
        /// of `entity` becomes `transform`'s result.
        public static func changeType(
            of attribute: String, ofEntityNamed entity: String, _ transform: @escaping @Sendable (DatabaseValue) throws -> DatabaseValue
        ) -> Step {
            Step(kind: .changeType(of: KeyPathBox(name: attribute), root: .name(entity), transform: transform))
        }

        /// ``changeIdentity(of:)`` for an entity described at run time.
        public static func changeIdentity(ofEntityNamed entity: String) -> Step {
            Step(kind: .changeIdentity(of: .name(entity)))
        }

        /// The attribute at `keyPath` has a new type: each stored value (of the old type, `Old`) becomes
        /// `transform`'s result. A stored value that is not an `Old`, or a transform that throws, fails the migration.
        public static func changeType<Root: EntityObject, Old: AttributeValue, New: AttributeValue>(
            of keyPath: KeyPath<Root, New>, from old: Old.Type, _ transform: @escaping @Sendable (Old) throws -> New
        ) -> Step {
            Step(
                kind: .changeType(
                    of: KeyPathBox(keyPath), root: .type(Root.self),
                    transform: { value in try transform(try Old(databaseValue: value)).databaseValue }))
        }

        /// The attribute at `keyPath` has a new type: each stored value becomes `transform`'s result, as SQLite values.
        public static func changeType<Root: EntityObject, Value>(
            of keyPath: KeyPath<Root, Value>, _ transform: @escaping @Sendable (DatabaseValue) throws -> DatabaseValue
        ) -> Step {
            Step(kind: .changeType(of: KeyPathBox(keyPath), root: .type(Root.self), transform: transform))
        }

        /// The entity's identity is the declared one now. Stored rows that share the new identity once every step ran
        /// fail the migration, naming this step and the shared values: remove the duplicates in an earlier step
        /// (``sql(_:)``).
        public static func changeIdentity<Root: EntityObject>(of type: Root.Type) -> Step {
            Step(kind: .changeIdentity(of: .type(type)))
        }

        /// SQL statements run as they are (separated by `;`), for data fixes between the other steps. Tables and
        /// columns have their names at that point of the migration.
        public static func sql(_ statements: String) -> Step {
            Step(kind: .sql(statements))
        }

        /// Code run on the migrating connection, inside the migration's transaction, for data fixes.
        public static func custom(_ body: @escaping @Sendable (Connection) throws -> Void) -> Step {
            Step(kind: .custom(body))
        }

        /// `Entity.attribute` for a key path (or name) of the entity.
        private static func name(of keyPath: KeyPathBox, in root: EntityReference) -> String {
            guard case .type(let type) = root else { return "\(root.name).\(keyPath)" }
            let description = type.entityDescription
            guard let field = keyPath.field(in: description) else { return "\(keyPath)" }
            return "\(description.name).\(description.fields[field].name)"
        }

        /// What the step does, as failures name it and ``AppliedMigration/steps`` records it:
        /// `renameEntity(Ticket to Bug)`, `changeType(of: Bug.score)`, `sql(…)` (its first 60 characters).
        public var description: String {
            switch kind {
            case .renameEntity(let from, let to): "renameEntity(\(from) to \(to.name))"
            case .renameAttribute(let from, let to, let root): "renameAttribute(\(from) to \(Self.name(of: to, in: root)))"
            case .changeType(let keyPath, let root, _): "changeType(of: \(Self.name(of: keyPath, in: root)))"
            case .changeIdentity(let entity): "changeIdentity(of: \(entity.name))"
            case .sql(let sql): "sql(\(sql.count > 60 ? sql.prefix(60) + "…" : sql))"
            case .custom: "custom"
            }
        }
    }
}

/// An entity a migration step names: by its class, or by its name (an entity described at run time).
enum EntityReference: Sendable {
    case type(any EntityObject.Type)
    case name(String)

    var name: String {
        switch self {
        case .type(let type): type.entityDescription.name
        case .name(let name): name
        }
    }
}
