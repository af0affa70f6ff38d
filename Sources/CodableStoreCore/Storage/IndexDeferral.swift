import CodableStoreSQLite

/// The indexes an import builds once its rows are in, instead of one entry per row as it goes (SQLite).
///
/// An import into an empty table inserts every row the table will hold, and each non-unique index on it takes one
/// entry per row, at a random place when the index is on a foreign key (issues by user): at a million rows, a
/// B-tree whose pages the import's page cache cannot keep, so they are written out and read back again and again.
/// Built afterwards, the index sorts its entries once and writes its pages in order. At 1M reference records the
/// writer thread's CPU went from 15.0 s to 9.0 s, for 1.4 s of building at the end (the issues by user, and the
/// labels' reverse index): see Benchmarks/README.md.
///
/// What is deferred, and why it is safe:
/// - only non-unique indexes (a foreign key's, the reverse index of a join table, one the model declares, one made
///   by hand) of tables that are empty when the import begins: a unique index keeps identities unique and answers
///   the import's lookups, and rebuilding the index of a table that holds rows would cost more than it saves;
/// - only inside the import's one transaction: other connections never see the store without them (the drop is
///   not committed, and the build runs in the same transaction), and a failed import rolls the drop back with the
///   rest;
/// - until they are built, every statement the connection prepares is planned first (`EXPLAIN QUERY PLAN`), and
///   one that would read a whole table or make a temporary index (a fetch in a decoding hook, a membership load by
///   a foreign key, the clearing of references to a deleted row) builds them before it runs. The import's own
///   statements never do: inserts, updates and deletes by row id, identity lookups by the unique index, links by
///   their primary key.
final class IndexDeferral: DeferredBuilds {
    struct Index: Equatable {
        let name: String
        let table: String
        /// The statement that made it, as SQLite recorded it: run again as it is, it makes the same index.
        let sql: String
    }

    private let connection: Connection
    var suspendsForeignKeys: Bool { false }
    /// The indexes dropped, until ``cancel()``.
    private(set) var deferred: [Index]
    /// Whether the connection is still watched: no statement has made ``build()`` run yet.
    var isWatching: Bool { connection.willPrepare != nil }
    /// The page cache while the indexes are built, in KiB: SQLite's sorter keeps up to the page cache's size of
    /// entries in memory before it writes a sorted run to a temporary file, on top of the import's peak. With the
    /// import's 24 MiB the 1M import's peak was 84 MiB instead of 63 (measured with the build on the calling
    /// thread, before it moved to the writer's); 512 KiB builds no faster than 2 MiB.
    static let buildCacheKiB = 2_048

    private init(connection: Connection, deferred: [Index]) {
        self.connection = connection
        self.deferred = deferred
    }

    /// Drops the non-unique indexes of the tables that are empty, and watches what the connection prepares until
    /// ``build()``; nil when there are none. Call it inside the write transaction that will insert the rows.
    static func begin(on connection: Connection) throws -> IndexDeferral? {
        precondition(connection.isInsideTransaction, "indexes are deferred inside the transaction that builds them")
        var candidates: [Index] = []
        for row in try connection.rows(
            sql: "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        {
            guard case .text(let name) = row[0], case .text(let table) = row[1], case .text(let sql) = row[2],
                !isUnique(sql), !table.hasPrefix("sqlite_")
            else { continue }
            candidates.append(Index(name: name, table: table, sql: sql))
        }
        var isEmpty: [String: Bool] = [:]
        var pending: [Index] = []
        for index in candidates {
            if isEmpty[index.table] == nil {
                isEmpty[index.table] = try connection.rows(sql: "SELECT 1 FROM \(quoteIdentifier(index.table)) LIMIT 1").isEmpty
            }
            if isEmpty[index.table] == true { pending.append(index) }
        }
        guard !pending.isEmpty else { return nil }
        for index in pending { try connection.execute(sql: "DROP INDEX \(quoteIdentifier(index.name))") }
        // Statements prepared before would plan again, without the indexes and unseen, when they next run.
        connection.clearStatementCache()
        let deferral = IndexDeferral(connection: connection, deferred: pending)
        connection.willPrepare = { [weak deferral] sql in try deferral?.check(sql) }
        return deferral
    }

    /// Builds the deferred indexes that do not exist, each with the statement that made it, and stops watching the
    /// connection. It looks at the schema each time: a build that a statement inside a savepoint started (a batch of
    /// the skip policy) is undone when that savepoint is rolled back, so the import's last call makes them again.
    func build() throws {
        guard !deferred.isEmpty else { return }
        connection.willPrepare = nil
        var existing = Set<String>()
        for row in try connection.rows(sql: "SELECT name FROM sqlite_master WHERE type = 'index'") {
            if case .text(let name) = row[0] { existing.insert(name) }
        }
        let missing = deferred.filter { !existing.contains($0.name) }
        guard !missing.isEmpty else { return }
        let cacheKiB = try connection.pageCacheSize()
        if let cacheKiB, cacheKiB > Self.buildCacheKiB { try connection.setPageCacheSize(kibibytes: Self.buildCacheKiB) }
        for index in missing { try connection.execute(sql: index.sql) }
        if let cacheKiB, cacheKiB > Self.buildCacheKiB { try connection.setPageCacheSize(kibibytes: cacheKiB) }
    }

    /// Stops watching the connection, for an import that failed: its rollback brings the dropped indexes back.
    func cancel() {
        connection.willPrepare = nil
        deferred = []
    }

    /// Builds the indexes before a statement that would read a whole table (or index one for itself) without them.
    private func check(_ sql: String) throws {
        guard Self.mayRead(sql), !Self.isEmptinessProbe(sql), try reads(plan: sql) else { return }
        try build()
    }

    /// Whether a statement's plan reads a whole table, or makes an index of its own, which SQLite does where the
    /// index it would use is missing. The plan is planned without the hook (it prepares a statement too).
    private func reads(plan sql: String) throws -> Bool {
        let hook = connection.willPrepare
        connection.willPrepare = nil
        defer { connection.willPrepare = hook }
        let details: [String]
        do {
            details = try connection.rows(sql: "EXPLAIN QUERY PLAN " + sql).compactMap { row in
                if row.count > 3, case .text(let detail) = row[3] { detail } else { nil }
            }
        } catch {
            return false  // the statement's own preparation reports what is wrong with it
        }
        return details.contains { detail in
            // A read of the schema (sqlite_master) or of constant rows (`SCAN 64 CONSTANT ROWS`: a multi-row
            // INSERT's VALUES) scans nothing an index could spare.
            (detail.hasPrefix("SCAN ") && !detail.hasSuffix("CONSTANT ROW") && !detail.hasSuffix("CONSTANT ROWS")
                && !detail.hasPrefix("SCAN sqlite_"))
                || detail.contains("AUTOMATIC")
        }
    }

    /// Statements that read rows: not transaction control, pragmas or schema changes.
    private static func mayRead(_ sql: String) -> Bool {
        let start = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }
        let word = String(decoding: start.prefix { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "z") }, as: UTF8.self).uppercased()
        return !["PRAGMA", "EXPLAIN", "CREATE", "DROP", "ALTER", "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE",
            "ANALYZE", "VACUUM", "REINDEX"].contains(word)
    }

    /// `SELECT 1 FROM "T" LIMIT 1` (``SQLStorage/anyRow(_:)``, whether a table is empty): its plan is a scan, which
    /// stops at the first row.
    private static func isEmptinessProbe(_ sql: String) -> Bool {
        sql.hasPrefix("SELECT 1 FROM ") && sql.hasSuffix(" LIMIT 1") && !sql.contains(" WHERE ") && !sql.contains(" JOIN ")
    }

    /// Whether `CREATE … INDEX` text makes a unique index.
    private static func isUnique(_ sql: String) -> Bool {
        let words = sql.split(whereSeparator: \.isWhitespace).prefix(2).map { $0.uppercased() }
        return words.count == 2 && words[1] == "UNIQUE"
    }
}
