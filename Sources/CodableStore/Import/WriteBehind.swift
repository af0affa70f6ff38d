/// Runs a context's write plans, and the identity lookups it asks for ahead of time, on a thread of its own,
/// in order, while the context goes on decoding: an import's SQLite work for one batch overlaps the decoding
/// of the next (the two use two cores).
///
/// The context and the writer share one connection, inside one transaction, so the context's queries see
/// every row written before them. SQLite's multi-thread mode allows a connection on several threads as long
/// as two calls never overlap, so every use of the connection takes `access`: the writer for each statement
/// it runs, the context for its identity lookups and membership loads (``withConnection(_:)``), with
/// priority, since decoding waits for them. Anything else the context asks of the connection first waits
/// until every plan handed over is written (``waitUntilIdle()``): see `Context.connection`.
///
/// What keeps lookups right while a plan is still waiting: the context keeps every object a waiting plan
/// writes (`Context.retireObjects()`), so a key of such an object is answered from memory and never from a
/// table the writer has not reached yet.
///
/// A failed plan or lookup stops the writer: later work is dropped, and the error is thrown by the next
/// ``enqueue(_:)``, ``requestLookup(_:)`` or wait; the caller then rolls the whole transaction back.
final class WriteBehind: DeferredWriter, @unchecked Sendable {
    // @unchecked: `queue`, `running`, `written` and `failure` are used under the worker's monitor; `statements`
    // only by the writer thread (and by `finish()` after it ended); the connection under `access`.
    private let connection: Connection
    private let storage: SQLiteStorage
    private let model: Schema
    private let worker = Worker()
    private var monitor: Monitor { worker.monitor }
    /// Who uses the connection; the context has priority: it waits for at most one statement of the writer,
    /// and the writer then waits for the context's query. (A plain mutex lets the writer take it back between
    /// two statements again and again, and the context waited milliseconds per lookup.)
    private let access = Monitor()
    private var accessOwned = false
    private var contextWaiting = false
    private var queue: [Work] = []
    private var running = false
    private var failure: (any Error)?
    private var statements: [String: Statement] = [:]
    /// Plans handed over so far, and plans written (by the writer) so far.
    private(set) var enqueued = 0
    private var written = 0
    /// Plans that may wait, besides the one being written: one keeps the writer busy while the context
    /// decodes, without holding a second batch of values in memory. (Lookups do not count: they are small.)
    static let capacity = 1

    private enum Work {
        case plan(WritePlan)
        case lookup(Lookahead)
    }

    init(connection: Connection, storage: SQLiteStorage) {
        self.connection = connection
        self.storage = storage
        self.model = storage.model
    }

    /// Starts the writer thread.
    func start() throws(ThreadStartError) {
        try worker.start { [self] in run() }
    }

    /// Hands a plan to the writer, waiting while ``capacity`` plans wait already.
    /// - Throws: the error of a plan that failed before.
    func enqueue(_ plan: WritePlan) throws {
        try monitor.withLock {
            while waitingPlans >= Self.capacity, failure == nil { monitor.wait() }
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
    /// later; ``lookupResult(_:)`` waits for the rows.
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
            while !lookup.isDone, failure == nil { monitor.wait() }
            if let failure { throw failure }
        }
    }

    /// Waits until the first `count` plans handed over are written.
    /// - Throws: the error of a plan that failed.
    func waitUntilWritten(_ count: Int) throws {
        try monitor.withLock {
            while written < count, failure == nil { monitor.wait() }
            if let failure { throw failure }
        }
    }

    /// Waits until every plan handed over is written.
    /// - Throws: the error of a plan that failed.
    func drain() throws {
        try waitUntilWritten(monitor.withLock { enqueued })
    }

    /// Waits until the writer is idle, without throwing: its error, if any, is thrown by the next
    /// ``enqueue(_:)`` or ``drain()``.
    func waitUntilIdle() {
        monitor.withLock {
            while (running || !queue.isEmpty), failure == nil { monitor.wait() }
        }
    }

    /// Runs `body` with the connection while the writer is between statements.
    func withConnection<T>(_ body: () throws -> T) rethrows -> T {
        access.withLock {
            contextWaiting = true
            while accessOwned { access.wait() }
            accessOwned = true
            contextWaiting = false
        }
        defer { releaseAccess() }
        return try body()
    }

    /// Stops the writer, dropping the plans not written yet, and waits for its thread to end. Safe to call
    /// more than once. After it, the connection is the caller's alone.
    func finish() {
        worker.finish { queue.removeAll() }
        statements.removeAll()
    }

    /// The CPU time the writer thread used, in seconds, once ``finish()`` joined it.
    var cpuSeconds: Double { worker.cpuSeconds }

    /// The writer thread: takes plans in order and runs their statements, each holding `access`.
    private func run() {
        while true {
            monitor.lock()
            while queue.isEmpty, !worker.isStopping { monitor.wait() }
            if worker.isStopping {
                monitor.unlock()
                return
            }
            let work = queue.removeFirst()
            running = true
            monitor.broadcast()
            monitor.unlock()

            var error: (any Error)?
            switch work {
            case .plan(let plan):
                for step in plan.steps {
                    takeAccess()
                    do {
                        try storage.run(step, statements: statement)
                    } catch let failed {
                        error = failed
                    }
                    releaseAccess()
                    if error != nil { break }
                }
            case .lookup(let lookup):
                takeAccess()
                do {
                    lookup.rows = try lookup.keys.map { entry in
                        try lookUp(entry.keys, entity: entry.entity)
                    }
                    if let found = lookup.rows.first, found.count > 0 {
                        let owners = (0..<found.count).compactMap { row -> Int64? in
                            if case .integer(let rowID) = found[row].first { return rowID } else { return nil }
                        }
                        let owner = model.mappings[lookup.keys[0].entity]
                        lookup.membershipRows = try lookup.memberships.map { field in
                            let sql = storage.membershipSQL(owner.relationships[field]!, owners: Context.membershipChunk)
                            return try Self.loadMemberships(owners, sql: sql, statements: statement)
                        }
                    }
                } catch let failed {
                    error = failed
                }
                releaseAccess()
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

    private func takeAccess() {
        access.withLock {
            while accessOwned || contextWaiting { access.wait() }
            accessOwned = true
        }
    }

    /// The stored rows of these identities, as values: the row id, then the columns of `selectSQL`.
    private func lookUp(_ keys: [Context.IdentityKey], entity: Int) throws -> StoredRows {
        let width = Int32(model.mappings[entity].insertColumnCount + 1)
        var rows = StoredRows(width: Int(width))
        let limit = connection.maximumVariableCount
        try storage.lookUp(keys, entity: entity, maximumVariableCount: limit, statements: statement) { statement in
            for column in 0..<width { rows.values.append(statement.value(at: column)) }
        }
        return rows
    }

    /// Rows of a membership query for these owners.
    private static func loadMemberships(
        _ owners: [Int64], sql: String, statements: (String) throws -> Statement
    ) throws -> StoredRows {
        let statement = try statements(sql)
        var rows = StoredRows(width: Int(statement.columnCount))
        try statement.run(chunksOf: owners, slots: Context.membershipChunk, bind: Context.bindRowID) { statement in
            for column in 0..<Int32(rows.width) { rows.values.append(statement.value(at: column)) }
        }
        return rows
    }

    private func releaseAccess() {
        access.withLock {
            accessOwned = false
            access.broadcast()
        }
    }

    /// The writer's own prepared statement for `sql` (the context's cache is the context's thread's).
    private func statement(_ sql: String) throws -> Statement {
        if let statement = statements[sql] {
            statement.reset()
            return statement
        }
        let statement = try connection.makeStatement(sql: sql, persistent: true)
        statements[sql] = statement
        return statement
    }
}
