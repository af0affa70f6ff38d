import CodableStoreCore

/// Runs a context's write plans, and the identity lookups it asks for ahead of time, on a thread of its own,
/// in order, while the context goes on decoding: an import's SQLite work for one batch overlaps the decoding
/// of the next (the two use two cores).
///
/// The writer thread owns the store's connection for the whole import (one transaction, so the context's queries
/// see every row written before them). The context's identity lookups and membership loads are requests the
/// writer runs for it between two statements, while the context's thread waits (``withConnection(_:)``):
/// decoding waits for them, so they go before the rest of the plan. Anything else the context asks of the
/// connection first waits until every plan handed over is written (``waitUntilIdle()``): see `Context.connection`.
///
/// What keeps lookups right while a plan is still waiting: the context keeps every object a waiting plan
/// writes (``retention``, see ``ObjectRetention``), so a key of such an object is answered from memory and never
/// from a table the writer has not reached yet.
///
/// A failed plan or lookup stops the writer: later work is dropped, and the error is thrown by the next
/// ``enqueue(_:)``, ``requestLookup(_:)`` or wait; the caller then rolls the whole transaction back.
final class WriteBehind: DeferredWriter, @unchecked Sendable {
    // @unchecked: `queue`, `request`, `running`, `written` and `failure` are used under the worker's monitor; the
    // connection and `statements` only by the writer thread (and by `finish()` after it ended).
    private let connection: any DatabaseConnection
    private let storage: SQLStorage
    private let model: Schema
    private let worker = Worker()
    private var monitor: Monitor { worker.monitor }
    private var queue: [Work] = []
    /// The context's request waiting to be run, if any (its thread waits for it, so there is at most one).
    private var request: Request?
    private var running = false
    private var failure: (any Error)?
    private var statements: [String: any DatabaseStatement] = [:]
    /// The last statements `statement(_:)` returned, looked at before `statements`: the writer asks for the same
    /// few statements again and again with the same `String` (the storage builds each once), and comparing strings
    /// that share storage costs nothing, where hashing the text of a multi-row INSERT for every batch of rows cost
    /// 1.4% of the writer thread (callgrind).
    private var recentStatements: [(sql: String, statement: any DatabaseStatement)] = []
    private var nextRecentSlot = 0
    /// Plans handed over so far, and plans written (by the writer) so far.
    private(set) var enqueued = 0
    private var written = 0
    /// Wall-clock seconds the context's thread waited for the writer: for its lookups, and for it to take plans,
    /// write them or run requests (each used by the context's thread only).
    private(set) var secondsWaitedForLookups = 0.0
    private(set) var secondsWaitedForWriting = 0.0
    /// The objects the context keeps between batches (used by the context's thread only).
    let retention: ObjectRetention
    /// The join rows of the plans handed over since the last eviction, which the writer may not have written yet
    /// (see ``didHandOver(links:)``; used by the context's thread only).
    private var linksHandedOver: [[Context.LinkChange]] = []
    /// Rows the writer's lookups read, which answer later lookups of the same keys (used by the writer thread only).
    let rowCache: RowCache?
    /// Set when the context used the connection itself (``waitUntilIdle()``): the writer forgets its cached rows
    /// before its next work, as that use may have changed them.
    private var rowCacheMayBeStale = false
    /// Plans that may wait, besides the one being written: one keeps the writer busy while the context
    /// decodes, without holding a second batch of values in memory. (Lookups do not count: they are small.)
    static let capacity = 1

    private enum Work {
        case plan(WritePlan)
        case lookup(Lookahead)
    }

    /// Work of the context's thread that the writer runs on the connection while that thread waits.
    private final class Request: @unchecked Sendable {
        // @unchecked: `body` runs on the writer thread while the thread that made the request waits for `isDone`
        // (set under the monitor), so the two never touch what it captures at the same time.
        /// Let go by the writer before `isDone` is set: the body wraps a non-escaping closure of the waiting
        /// thread, which must not outlive the wait.
        var body: (() -> Void)?
        var isDone = false
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// The connection does not enforce foreign keys (see `Importer`): deletes clear what refers to their rows.
    private let clearsReferences: Bool

    init(
        connection: any DatabaseConnection, storage: SQLStorage, clearsReferences: Bool = false,
        retention: ObjectRetention = ObjectRetention(), rowCache: RowCache? = nil
    ) {
        self.clearsReferences = clearsReferences
        self.retention = retention
        self.rowCache = rowCache
        self.connection = connection
        self.storage = storage
        self.model = storage.model
    }

    /// Starts the writer thread.
    func start() throws(ThreadStartError) {
        try worker.start { [self] in run() }
    }

    func didUse(_ object: any EntityObject, _ state: EntityState) {
        retention.didUse(object, state)
    }

    func mayHaveUnwrittenLinks(_ state: EntityState) -> Bool {
        retention.wasKept(state)
    }

    func didHandOver(links: [Context.LinkChange]) {
        linksHandedOver.append(links)
    }

    func mayHaveUnwrittenLinks(table: Int, owners: () -> [Int64], ownerIsSource: Bool) -> Bool {
        if linksHandedOver.isEmpty { return false }
        let rowIDs = Set(owners())
        return linksHandedOver.contains { changes in
            changes.contains { $0.table == table && rowIDs.contains(ownerIsSource ? $0.source : $0.target) }
        }
    }

    /// Ends a batch: the context keeps what ``retention`` says, and the links handed over so far concern only objects
    /// it kept, which ``mayHaveUnwrittenLinks(_:)`` answers for.
    func evict(from context: Context) {
        linksHandedOver.removeAll()
        retention.evict(from: context)
    }

    /// Hands a plan to the writer, waiting while ``capacity`` plans wait already.
    /// - Throws: the error of a plan that failed before.
    func enqueue(_ plan: WritePlan) throws {
        try monitor.withLock {
            secondsWaitedForWriting += monitor.wait(while: { waitingPlans >= Self.capacity && failure == nil })
            if let failure { throw failure }
            queue.append(.plan(plan))
            enqueued += 1
            monitor.broadcast()
        }
    }

    private var waitingPlans: Int {
        queue.count { if case .plan = $0 { true } else { false } }
    }

    /// Asks the writer to run these lookups after the plans handed over so far, and before any handed over
    /// later; ``waitForLookup(_:)`` waits for the rows.
    ///
    /// The rows are those of the store once the earlier plans are written: right for every key whose object
    /// the later plans do not write, that is, for every key the context does not hold when it takes the
    /// result (see `Context.adoptLookup(_:)`).
    func requestLookup(_ lookup: Lookahead) throws {
        try monitor.withLock {
            if let failure { throw failure }
            queue.append(.lookup(lookup))
            monitor.broadcast()
        }
    }

    /// Waits until the writer ran `lookup`.
    /// - Throws: the error of a plan or lookup that failed.
    func waitForLookup(_ lookup: Lookahead) throws {
        try monitor.withLock {
            secondsWaitedForLookups += monitor.wait(while: { !lookup.isDone && failure == nil })
            if let failure { throw failure }
        }
    }

    /// Waits until the first `count` plans handed over are written.
    /// - Throws: the error of a plan that failed.
    func waitUntilWritten(_ count: Int) throws {
        try monitor.withLock {
            secondsWaitedForWriting += monitor.wait(while: { written < count && failure == nil })
            if let failure { throw failure }
        }
    }

    /// Waits until every plan handed over is written.
    /// - Throws: the error of a plan that failed.
    func drain() throws {
        try waitUntilWritten(monitor.withLock { enqueued })
    }

    /// Waits until the writer is idle, without throwing: its error, if any, is thrown by the next
    /// ``enqueue(_:)`` or ``drain()``. The caller then uses the connection itself, and may change rows: the writer
    /// forgets its cached rows before it goes on.
    func waitUntilIdle() {
        monitor.withLock {
            while (running || !queue.isEmpty), failure == nil { monitor.wait() }
            rowCacheMayBeStale = true
        }
    }

    /// Runs `body` on the writer thread, between two of its statements (or at once when it is idle), and waits for
    /// it: the context's lookups and loads of rows no waiting plan writes.
    func withConnection<T>(_ body: () throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var result: Result<T, any Error>?
            let request = Request { result = Result { try body() } }
            monitor.withLock {
                precondition(self.request == nil, "a request to the writer thread while one waits")
                self.request = request
                monitor.broadcast()
                secondsWaitedForWriting += monitor.wait(while: { !request.isDone })
            }
            // A plan that failed left the transaction unusable (PostgreSQL refuses every later statement): the
            // cause is what the context must hear of.
            if let failure = monitor.withLock({ self.failure }) { throw failure }
            return try result!.get()
        }
    }

    /// Runs the context's waiting request, if any (on the writer thread).
    private func serveRequest() {
        guard let request = monitor.withLock({ () -> Request? in
            defer { self.request = nil }
            return self.request
        }) else { return }
        request.body?()
        request.body = nil
        monitor.withLock {
            request.isDone = true
            monitor.broadcast()
        }
    }

    /// Stops the writer, dropping the plans not written yet, and waits for its thread to end. Safe to call
    /// more than once. After it, the connection is the caller's alone.
    func finish() {
        worker.finish { queue.removeAll() }
        statements.removeAll()
        recentStatements.removeAll()
    }

    /// The CPU time the writer thread used, in seconds, once ``finish()`` joined it.
    var cpuSeconds: Double { worker.cpuSeconds }

    /// The writer thread: takes plans in order and runs their statements, and the context's requests between them.
    private func run() {
        while true {
            monitor.lock()
            while queue.isEmpty, request == nil, !worker.isStopping { monitor.wait() }
            if request != nil {
                monitor.unlock()
                serveRequest()
                continue
            }
            if worker.isStopping {
                monitor.unlock()
                return
            }
            let work = queue.removeFirst()
            running = true
            let forgetsRows = rowCacheMayBeStale
            rowCacheMayBeStale = false
            monitor.broadcast()
            monitor.unlock()
            if forgetsRows { rowCache?.clear() }

            var error: (any Error)?
            switch work {
            case .plan(let plan):
                let writer = StepWriter(storage: storage, connection: connection, clearsReferences: clearsReferences, statements: statement)
                for step in plan.steps {
                    serveRequest()
                    rowCache?.willWrite(step)
                    do {
                        try writer.run(step)
                    } catch let failed {
                        error = failed
                        break
                    }
                }
                if error == nil {
                    do { try writer.finish() } catch let failed { error = failed }
                }
            case .lookup(let lookup):
                serveRequest()
                do {
                    lookup.rows = try lookup.keys.enumerated().map { position, entry in
                        if position == 0, !lookup.stamps.isEmpty { return try lookUpComparingStamps(lookup, entity: entry.entity) }
                        return try lookUp(entry.keys, entity: entry.entity)
                    }
                    if let found = lookup.rows.first, found.count > 0 {
                        let owners = (0..<found.count).compactMap { row -> Int64? in
                            if case .integer(let rowID) = found[row].first { return rowID } else { return nil }
                        }
                        let owner = model.mappings[lookup.keys[0].entity]
                        lookup.membershipRows = try lookup.memberships.map { field in
                            try Self.loadMemberships(owners, owner.relationships[field]!, storage: storage, statements: statement)
                        }
                    }
                } catch let failed {
                    error = failed
                }
            }

            monitor.withLock {
                running = false
                if let error {
                    failure = error
                    queue.removeAll()
                } else if case .lookup(let lookup) = work {
                    lookup.isDone = true
                } else {
                    written += 1
                }
                monitor.broadcast()
            }
        }
    }

    /// The stored rows of these identities, as values: the row id, then the columns of `SQLStorage.selectSQL(_:)`.
    private func lookUp(_ keys: [Context.IdentityKey], entity: Int) throws -> StoredRows {
        let width = Int32(model.mappings[entity].insertColumnCount + 1)
        var rows = StoredRows(width: Int(width))
        let cache = rowCache.flatMap { $0.caches(entity) ? $0 : nil }
        var missing: [Context.IdentityKey]
        if let cache {
            // Cached rows are appended now; the keys the cache misses are asked of the store below.
            missing = []
            for key in keys where !cache.appendRow(entity: entity, key: key, to: &rows.values) {
                missing.append(key)
            }
        } else {
            missing = keys
        }
        let cached = rows.values.count
        let limit = connection.maximumVariableCount
        try storage.lookUp(missing, entity: entity, maximumVariableCount: limit, statements: statement) { statement in
            for column in 0..<width { rows.values.append(statement.value(at: column)) }
        }
        cache?.store(entity: entity, rows: rows.values[cached...])
        return rows
    }

    /// The stored rows of the first keys of `lookup` (the batch's own entity, never cached), but for those whose
    /// `_digest` is the digest of the key's record: only their keys and row ids are kept (see `RecordDigests`).
    private func lookUpComparingStamps(_ lookup: Lookahead, entity: Int) throws -> StoredRows {
        let mapping = model.mappings[entity]
        let width = Int32(mapping.insertColumnCount + 1)
        let identityColumns = mapping.description.identity.map { mapping.columnOfField[$0] }
        var rows = StoredRows(width: Int(width))
        var rowStamps: [Int64?] = []
        var unchangedKeys: [Context.IdentityKey] = []
        var unchangedRowIDs: [Int64] = []
        let limit = connection.maximumVariableCount
        try storage.lookUp(
            lookup.keys[0].keys, entity: entity, maximumVariableCount: limit, withStamp: true, statements: statement
        ) { statement in
            let stored = statement.value(at: width)
            if case .integer(let digest) = stored, case .integer(let rowID) = statement.value(at: 0) {
                let key =
                    identityColumns.count == 1
                    ? Context.IdentityKey(single: statement.value(at: identityColumns[0]))
                    : Context.IdentityKey(identityColumns.map { statement.value(at: $0) })
                if lookup.stamps[key] == digest {
                    unchangedKeys.append(key)
                    unchangedRowIDs.append(rowID)
                    return
                }
            }
            for column in 0..<width { rows.values.append(statement.value(at: column)) }
            if case .integer(let digest) = stored { rowStamps.append(digest) } else { rowStamps.append(nil) }
        }
        lookup.rowStamps = rowStamps
        lookup.unchangedKeys = unchangedKeys
        lookup.unchangedRowIDs = unchangedRowIDs
        return rows
    }

    /// Rows of a membership query for these owners (the batch's memberships are those stored in a join table: see
    /// BatchLookup). Each destination's columns are read from the statement once: a join table links few
    /// destinations to many owners (the labels of a million issues), and every later row of the same destination
    /// copies the values of its first row (a retain of each text) instead of making and validating its strings again.
    private static func loadMemberships(
        _ owners: [Int64], _ relationship: ResolvedRelationship, storage: SQLStorage,
        statements: (String) throws -> any DatabaseStatement
    ) throws -> StoredRows {
        // The width is known once a row is (a PostgreSQL statement has no columns before it ran).
        var rows = StoredRows(width: 0)
        // Where the destination's columns of the first row with each destination row id start in `rows.values`.
        var firstRow: [Int64: Int] = [:]
        try storage.loadMembers(relationship, of: owners, statements: statements) { statement in
            rows.width = Int(statement.columnCount)
            let owner = statement.value(at: 0)
            let destination = statement.value(at: 1)
            if case .integer(let rowID) = destination {
                if let start = firstRow[rowID] {
                    rows.values.append(owner)
                    // Element by element: appending a slice of the array itself would copy the whole array first.
                    for index in start..<(start + rows.width - 1) { rows.values.append(rows.values[index]) }
                    return
                }
                firstRow[rowID] = rows.values.count + 1
            }
            rows.values.append(owner)
            rows.values.append(destination)
            for column in 2..<Int32(rows.width) { rows.values.append(statement.value(at: column)) }
        }
        return rows
    }

    /// The writer's own prepared statement for `sql` (the context's cache is the context's thread's).
    private func statement(_ sql: String) throws -> any DatabaseStatement {
        for recent in recentStatements where recent.sql == sql {
            recent.statement.reset()
            return recent.statement
        }
        let statement: any DatabaseStatement
        if let cached = statements[sql] {
            cached.reset()
            statement = cached
        } else {
            statement = try connection.prepare(sql)
            statements[sql] = statement
        }
        if recentStatements.count < 8 {
            recentStatements.append((sql, statement))
        } else {
            recentStatements[nextRecentSlot] = (sql, statement)
            nextRecentSlot = (nextRecentSlot + 1) % recentStatements.count
        }
        return statement
    }
}
