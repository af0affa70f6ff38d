/// Triggers that clear row stamps when SQL of another program changes a row, or a link or a referenced row that
/// decides what the row's record would write (see ``RowStamps``): with them, an import that skips unchanged
/// records restores whatever anyone changed since, as one that decodes every record does.
///
/// The store's own writes keep stamps right without them (every update writes the stamp, or NULL; link changes and
/// deletions clear it), so the store's writer connection fires no triggers while the store has none of the user's
/// (``quiet(on:)``): the guards cost the store's writes nothing (a link INSERT that fired them would also clear the
/// stamp its record's row was just given).
///
/// For each entity whose rows have stamps (the metadata's `digested-entities`), on SQLite:
/// - `update_<table>`: an UPDATE that leaves a row's stamp as it was (the store's always set it, or NULL) clears it;
/// - `delete_<table>`, on each table those rows refer to (by a foreign key, or links): deleting a row clears the
///   stamps of the rows that referred to it, whether or not the deleting connection enforces foreign keys;
/// - `link_insert_`, `link_delete_`, `link_update_<join table>`: a link added, removed or moved clears the stamp of
///   its row on either side.
///
/// Their names begin with ``namePrefix``; ``DatabaseConnection/hasTriggers()`` leaves them out. SQL run through
/// ``Store/withWriterConnection(_:)`` fires them like any other program's.
package enum StampGuards {
    static let namePrefix = "_codablestore_digest_"

    struct Trigger: Equatable {
        let name: String
        let sql: String
    }

    /// The triggers that guard the stamps of `entities`.
    static func triggers(guarding entities: Set<Int>, storage: SQLStorage) -> [Trigger] {
        let model = storage.model
        let guarded = entities.sorted()
        func trigger(_ name: String, _ event: String, on table: String, when condition: String? = nil, _ body: [String]) -> Trigger {
            let name = namePrefix + name
            let when = condition.map { " WHEN " + $0 } ?? ""
            return Trigger(
                name: name,
                sql: "CREATE TRIGGER \(quoteIdentifier(name)) AFTER \(event) ON \(quoteIdentifier(table)) FOR EACH ROW\(when) BEGIN "
                    + body.map { $0 + "; " }.joined() + "END")
        }
        func clearing(_ entity: Int, rowID: String) -> String {
            "UPDATE \(quoteIdentifier(model.mappings[entity].name)) SET \"_digest\" = NULL WHERE \"_pk\" = \(rowID) AND \"_digest\" IS NOT NULL"
        }
        var triggers: [Trigger] = []
        for entity in guarded {
            let table = model.mappings[entity].name
            triggers.append(
                trigger(
                    "update_" + table, "UPDATE", on: table, when: "OLD.\"_digest\" IS NOT NULL AND NEW.\"_digest\" IS OLD.\"_digest\"",
                    [clearing(entity, rowID: "NEW.\"_pk\"")]))
        }
        for destination in model.mappings {
            let body = guarded.flatMap { storage.stampClearing(of: $0, referringTo: destination.index, rowID: "OLD.\"_pk\"") }
            if !body.isEmpty { triggers.append(trigger("delete_" + destination.name, "DELETE", on: destination.name, body)) }
        }
        for join in model.joinTables {
            let sides = [(join.source, "source"), (join.target, "target")].filter { entities.contains($0.0) }
            guard !sides.isEmpty else { continue }
            for (event, rows) in [("INSERT", ["NEW"]), ("DELETE", ["OLD"]), ("UPDATE", ["OLD", "NEW"])] {
                let body = rows.flatMap { row in sides.map { clearing($0.0, rowID: "\(row).\"\($0.1)\"") } }
                triggers.append(trigger("link_\(event.lowercased())_" + join.name, event, on: join.name, body))
            }
        }
        return triggers
    }

    /// Makes the store's guards those of `entities`: creates the missing ones, drops the others. Returns whether the
    /// guards of `previous` (the entities that had stamps) were all there as made: if one was dropped or changed,
    /// their stamps may be stale. In the caller's write transaction, on SQLite.
    static func install(
        guarding entities: Set<Int>, previous: Set<Int>, storage: SQLStorage, on connection: any DatabaseConnection
    ) throws -> Bool {
        let installed = try self.installed(on: connection)
        let intact = triggers(guarding: previous, storage: storage).allSatisfy { installed[$0.name] == $0.sql }
        let wanted = triggers(guarding: entities, storage: storage)
        for (name, sql) in installed.sorted(by: { $0.key < $1.key }) where !wanted.contains(Trigger(name: name, sql: sql)) {
            try connection.execute(sql: "DROP TRIGGER \(quoteIdentifier(name))")
        }
        for trigger in wanted where installed[trigger.name] != trigger.sql {
            try connection.execute(sql: trigger.sql)
        }
        return intact
    }

    /// At the start of each write transaction of the store's SQLite writer: its statements fire no triggers while the
    /// store has no triggers but the guards, and fire them again as soon as it has (a trigger of the user's must fire
    /// on the store's writes). Decided again whenever the schema changed (`PRAGMA schema_version`, of the main and
    /// temp schemas: a TEMP trigger lives in the latter); a change of the decision makes SQLite prepare the
    /// connection's statements again.
    static func quiet(on connection: Connection) throws {
        func version(_ sql: String) throws -> Int64? {
            let statement = try connection.cachedStatement(sql: sql)
            defer { statement.reset() }
            guard try statement.step(), case .integer(let version) = statement.value(at: 0) else { return nil }
            return version
        }
        guard let main = try version("PRAGMA main.schema_version"), let temp = try version("PRAGMA temp.schema_version")
        else { return }
        if let decided = connection.triggerDecision, decided == (main, temp) { return }
        let quiet = try !connection.hasTriggers()
        if quiet == connection.firesTriggers { try connection.setTriggersEnabled(!quiet) }
        connection.triggerDecision = (main, temp)
    }

    /// Before SQL of the user's runs on the writer (``Store/withWriterConnection(_:)``): triggers fire again, the guards
    /// too, until the next write transaction of the store decides again.
    static func wake(on connection: Connection) throws {
        if !connection.firesTriggers { try connection.setTriggersEnabled(true) }
        connection.triggerDecision = nil
    }

    /// Drops every guard: before a migration changes tables their bodies name.
    static func dropAll(on connection: any DatabaseConnection) throws {
        for name in try installed(on: connection).keys.sorted() {
            try connection.execute(sql: "DROP TRIGGER \(quoteIdentifier(name))")
        }
    }

    /// The guards in the store, by name, with their SQL.
    private static func installed(on connection: any DatabaseConnection) throws -> [String: String] {
        var triggers: [String: String] = [:]
        for row in try connection.rows(
            sql: "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, ?) = ?",
            arguments: [.integer(Int64(namePrefix.utf8.count)), .text(namePrefix)])
        {
            guard case .text(let name) = row[0], case .text(let sql) = row[1] else { continue }
            triggers[name] = sql
        }
        return triggers
    }
}
