import CodableStore
import Foundation

/// PostgreSQL's stamp guards: triggers that clear a row's stamp (`_digest`, see `RowStamps` in the core) when SQL of
/// another session changes the row, or a link that decides what the row's record would write. With them, an import
/// that skips unchanged records restores whatever anyone changed since, as one that decodes every record does.
///
/// The store's own writes keep stamps right without them, so its write transactions set `codablestore.quiet` for
/// themselves (``PostgresDatabaseConnection``'s begin: `set_config(…, true)` lasts until the transaction ends) and
/// each trigger's `WHEN` clause tests it: the store's COPYs and updates queue no trigger call. PostgreSQL cannot turn
/// triggers off for one session without a superuser; a setting tested in `WHEN` costs one comparison per row. A
/// statement run by a trigger (the user's, or a foreign key's `ON DELETE` action) fires the entity guards all the
/// same (`pg_trigger_depth() > 0`): a trigger of the user's may change a row after the store wrote its stamp. Links
/// that a trigger of the user's changes inside the store's transaction fire nothing (see `entityActive`): such a
/// store skips no records while the trigger exists, and after dropping it `Store.forgetImportDigests()` is due.
///
/// For each entity whose rows can keep stamps (`RowStamps.canStamp`), installed with the schema rather than per
/// imported entity as on SQLite (DDL inside an import's transaction would lock the tables against every other writer
/// until it commits):
/// - `…update_<table>`, `BEFORE UPDATE`: an update that leaves a stamped row's stamp as it was (the store's always set
///   it, or NULL) clears it;
/// - `…link_<join table>`, `AFTER INSERT OR UPDATE OR DELETE`: a link added, moved or removed clears the stamp of its
///   rows on either side.
///
/// Deleting a row that others refer to needs no guard of its own: the foreign keys' `ON DELETE SET NULL` and
/// `CASCADE` actions are updates and deletes that the guards above see.
///
/// What was made is recorded in the store's metadata (`digest-guards`: each guard's definition as the server prints
/// it): a guard dropped or changed since, by anyone, shows as a difference, and the stamps it guarded are forgotten.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/sql-createtrigger.html>,
/// <https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-ADMIN-SET>
enum PostgresStampGuards {
    /// The same prefix as SQLite's guards: ``PostgresDatabaseConnection/hasTriggers()`` leaves them out.
    static let namePrefix = "_codablestore_digest_"
    /// The transaction-local setting that the store's write transactions turn on.
    static let quietSetting = "codablestore.quiet"
    static let recordEntry = "digest-guards"
    /// Changes with what the guards do: guards of an older version are made again.
    private static let version = "codablestore guard 2"

    struct Guard: Equatable {
        let name: String
        let table: String
        let function: String
        let body: String
        let trigger: String
    }

    /// When a guard fires: in any session but the store's own write transactions.
    private static let notQuiet = "current_setting('\(quietSetting)', true) IS DISTINCT FROM 'on'"
    /// The entity guard also fires for a statement that a trigger runs inside the store's transaction (a trigger of
    /// the user's may change a stamped row after the store wrote it): its own condition, a row whose stamp an update
    /// leaves as it was, keeps it from costing the store's writes anything. The link guard does not: a link deleted by
    /// a foreign key's cascade when the store deletes a row would call it once per link (psql, 100k issues deleted
    /// with their 130k links: 2.4 s against 1.2 s with the link guard quiet, 0.96 s without it), and the store clears
    /// those stamps itself.
    private static let entityActive = "(\(notQuiet) OR pg_trigger_depth() > 0)"

    /// The guards of `model`'s tables, in the schema `schema` (function bodies name their tables with it: a trigger
    /// runs with the search path of whoever fires it).
    static func guards(of model: Schema, schema: String) -> [Guard] {
        let stamped = Set(model.mappings.filter(RowStamps.canStamp).map(\.index))
        let qualifiedSchema = quoteIdentifier(schema)
        func table(_ entity: Int) -> String { qualifiedSchema + "." + quoteIdentifier(model.mappings[entity].name) }
        var guards: [Guard] = []
        let clearFunction = name("clear")
        for entity in stamped.sorted() {
            let tableName = model.mappings[entity].name
            let name = name("update_" + tableName)
            guards.append(
                Guard(
                    name: name, table: tableName, function: clearFunction,
                    body: "BEGIN /* \(version) */ NEW.\"_digest\" := NULL; RETURN NEW; END",
                    trigger: "CREATE OR REPLACE TRIGGER \(quoteIdentifier(name)) BEFORE UPDATE ON \(table(entity)) FOR EACH ROW "
                        + "WHEN (OLD.\"_digest\" IS NOT NULL AND NEW.\"_digest\" IS NOT DISTINCT FROM OLD.\"_digest\" AND \(entityActive)) "
                        + "EXECUTE FUNCTION \(qualifiedSchema).\(quoteIdentifier(clearFunction))()"))
        }
        for join in model.joinTables {
            let sides = [(join.source, "source"), (join.target, "target")].filter { stamped.contains($0.0) }
            guard !sides.isEmpty else { continue }
            let name = name("link_" + join.name)
            func clearing(_ row: String) -> String {
                sides.map { "UPDATE \(table($0.0)) SET \"_digest\" = NULL WHERE \"_pk\" = \(row).\"\($0.1)\" AND \"_digest\" IS NOT NULL; " }
                    .joined()
            }
            guards.append(
                Guard(
                    name: name, table: join.name, function: name,
                    body: "BEGIN /* \(version) */ IF TG_OP <> 'INSERT' THEN \(clearing("OLD"))END IF; "
                        + "IF TG_OP <> 'DELETE' THEN \(clearing("NEW"))END IF; RETURN NULL; END",
                    trigger: "CREATE OR REPLACE TRIGGER \(quoteIdentifier(name)) AFTER INSERT OR UPDATE OR DELETE ON "
                        + "\(qualifiedSchema).\(quoteIdentifier(join.name)) FOR EACH ROW WHEN (\(notQuiet)) "
                        + "EXECUTE FUNCTION \(qualifiedSchema).\(quoteIdentifier(name))()"))
        }
        return guards
    }

    /// `namePrefix + suffix`, or where that is longer than PostgreSQL keeps a name (63 bytes), the prefix and a hash of
    /// the suffix: a name the server shortened would never be found again.
    private static func name(_ suffix: String) -> String {
        let name = namePrefix + suffix
        guard name.utf8.count > 63 else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in suffix.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return namePrefix + String(hash, radix: 16)
    }

    /// An installed guard: its table, function source, and definition as the server prints it.
    private struct Installed: Equatable {
        let table: String
        let source: String
        let definition: String
    }

    /// The guards on tables of the current schema, by name.
    private static func installed(on connection: any DatabaseConnection) throws -> [String: Installed] {
        var guards: [String: Installed] = [:]
        for row in try connection.rows(
            sql: "SELECT t.tgname, c.relname, p.prosrc, pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text FROM pg_trigger t "
                + "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
                + "WHERE NOT t.tgisinternal AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                + "AND substr(t.tgname, 1, \(namePrefix.utf8.count)) = ?",
            arguments: [.text(namePrefix)])
        {
            guard case .text(let name) = row[0], case .text(let table) = row[1], case .text(let source) = row[2],
                case .text(let definition) = row[3]
            else { continue }
            guards[name] = Installed(table: table, source: source, definition: definition)
        }
        return guards
    }

    /// The definitions recorded when the guards were made, by name.
    private static func recorded(on connection: any DatabaseConnection) throws -> [String: String] {
        guard let text = try StoreMetadata.value(of: recordEntry, on: connection),
            let recorded = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))
        else { return [:] }
        return recorded
    }

    /// The guards of `model` against those installed in the current schema and recorded when made.
    private struct Survey {
        let schema: String
        let installed: [String: Installed]
        let recorded: [String: String]
        let wanted: [Guard]

        init?(_ model: Schema, on connection: any DatabaseConnection) throws {
            guard case .text(let schema)? = try connection.scalar(sql: "SELECT current_schema()") else { return nil }
            self.schema = schema
            installed = try PostgresStampGuards.installed(on: connection)
            recorded = try PostgresStampGuards.recorded(on: connection)
            wanted = guards(of: model, schema: schema)
        }

        /// Wanted guards missing, changed since they were recorded, or of an older version.
        var stale: [Guard] {
            wanted.filter { installed[$0.name]?.source != $0.body || installed[$0.name]?.definition != recorded[$0.name] }
        }
        /// Installed guards that are not wanted.
        var unwanted: [String: Installed] { installed.filter { name, _ in !wanted.contains { $0.name == name } } }
        /// Every wanted guard installed as made and recorded, and nothing else.
        var isCurrent: Bool { stale.isEmpty && unwanted.isEmpty && installed.count == recorded.count }
        /// Every wanted guard there as it was made (whatever its version).
        var isIntact: Bool { wanted.allSatisfy { installed[$0.name] != nil && installed[$0.name]?.definition == recorded[$0.name] } }
    }

    /// Whether every guard of the model is installed as made and recorded (a read, for the check on open).
    static func areCurrent(_ model: Schema, on connection: any DatabaseConnection) throws -> Bool {
        try Survey(model, on: connection)?.isCurrent ?? false
    }

    /// Makes the store's guards those of `model`: creates what is missing, changed or of an older version, drops the
    /// others. Returns whether the guards were all there as made (if `guarding` is not empty: no stamps, nothing to
    /// have guarded). In the caller's transaction.
    ///
    /// One store at a time per schema: two that found a guard missing at once would both replace its function, and
    /// PostgreSQL fails the second with "tuple concurrently updated". The second waits for the first's transaction
    /// (an advisory lock), then looks again, and finds the guards made.
    static func install(_ model: Schema, guarding: Bool, on connection: any DatabaseConnection) throws -> Bool {
        guard let first = try Survey(model, on: connection) else { return false }
        let intact = !guarding || first.isIntact
        guard !first.isCurrent else { return intact }
        _ = try connection.rows(sql: "SELECT pg_advisory_xact_lock(hashtextextended('codablestore.guards.' || current_schema(), 0))")
        // What to make is what is missing once the lock is held: another store may have made it meanwhile.
        guard let survey = try Survey(model, on: connection), !survey.isCurrent else { return intact }
        let schema = survey.schema
        let (stale, unwanted, wanted) = (survey.stale, survey.unwanted, survey.wanted)
        for (name, guardInstalled) in unwanted.sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                sql: "DROP TRIGGER IF EXISTS \(quoteIdentifier(name)) ON \(quoteIdentifier(schema)).\(quoteIdentifier(guardInstalled.table))")
        }
        var functionsMade: Set<String> = []
        for guardMade in stale {
            if functionsMade.insert(guardMade.function).inserted {
                try connection.execute(
                    sql: "CREATE OR REPLACE FUNCTION \(quoteIdentifier(schema)).\(quoteIdentifier(guardMade.function))() RETURNS trigger "
                        + "LANGUAGE plpgsql AS $$\(guardMade.body)$$")
            }
            try connection.execute(sql: guardMade.trigger)
        }
        try dropUnusedFunctions(keeping: Set(wanted.map(\.function)), schema: schema, on: connection)
        let made = try self.installed(on: connection).mapValues(\.definition)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try StoreMetadata.set(recordEntry, String(decoding: try encoder.encode(made), as: UTF8.self), on: connection)
        return intact
    }

    /// Drops every guard and its function: before the schema changes tables their bodies name.
    static func dropAll(on connection: any DatabaseConnection) throws {
        guard case .text(let schema)? = try connection.scalar(sql: "SELECT current_schema()") else { return }
        for (name, guardInstalled) in try installed(on: connection).sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                sql: "DROP TRIGGER IF EXISTS \(quoteIdentifier(name)) ON \(quoteIdentifier(schema)).\(quoteIdentifier(guardInstalled.table))")
        }
        try dropUnusedFunctions(keeping: [], schema: schema, on: connection)
        try StoreMetadata.remove([recordEntry], on: connection)
    }

    /// Drops the guard functions of the current schema that no wanted guard calls.
    private static func dropUnusedFunctions(keeping functions: Set<String>, schema: String, on connection: any DatabaseConnection) throws {
        let names = try connection.rows(
            sql: "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                + "AND substr(p.proname, 1, \(namePrefix.utf8.count)) = ? ORDER BY p.proname",
            arguments: [.text(namePrefix)]
        ).compactMap { if case .text(let name) = $0[0] { name } else { nil } }
        for name in names where !functions.contains(name) {
            try connection.execute(sql: "DROP FUNCTION IF EXISTS \(quoteIdentifier(schema)).\(quoteIdentifier(name))()")
        }
    }
}
