/// Runs a context's write plans on a thread of its own, in order, while the context goes on decoding: the
/// import's SQLite writes for one batch overlap the decoding of the next (the two use two cores).
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
/// A failed plan stops the writer: later plans are dropped, and the error is thrown by the next
/// ``enqueue(_:)`` or ``drain()``; the caller then rolls the whole transaction back.
final class WriteBehind: @unchecked Sendable {
    // @unchecked: `queue`, `running`, `written`, `failure` and `stopping` are used under `monitor`;
    // `statements` only by the writer thread (and by `finish()` after it ended); the connection under `access`.
    private let connection: Connection
    private let model: StoreModel
    private let monitor = Monitor()
    /// Who uses the connection; the context has priority: it waits for at most one statement of the writer,
    /// and the writer then waits for the context's query. (A plain mutex lets the writer take it back between
    /// two statements again and again, and the context waited milliseconds per lookup.)
    private let access = Monitor()
    private var accessOwned = false
    private var contextWaiting = false
    private var queue: [WritePlan] = []
    private var running = false
    private var stopping = false
    private var failure: (any Error)?
    private var thread: JoinableThread?
    private var statements: [String: Statement] = [:]
    /// Plans handed over so far, and plans written (by the writer) so far.
    private(set) var enqueued = 0
    private var written = 0
    /// Plans that may wait, besides the one being written: one keeps the writer busy while the context
    /// decodes, without holding a second batch of values in memory.
    static let capacity = 1

    init(connection: Connection, model: StoreModel) {
        self.connection = connection
        self.model = model
    }

    deinit {
        precondition(thread == nil, "WriteBehind released while its writer runs: call finish()")
    }

    /// Starts the writer thread.
    func start() throws(ThreadStartError) {
        thread = try JoinableThread { [self] in run() }
    }

    /// Hands a plan to the writer, waiting while ``capacity`` plans wait already.
    /// - Throws: the error of a plan that failed before.
    func enqueue(_ plan: WritePlan) throws {
        try monitor.withLock {
            while queue.count >= Self.capacity, failure == nil { monitor.wait() }
            if let failure { throw failure }
            queue.append(plan)
            enqueued += 1
            monitor.broadcast()
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
        monitor.withLock {
            stopping = true
            queue.removeAll()
            monitor.broadcast()
        }
        thread?.join()
        thread = nil
        statements.removeAll()
    }

    /// The writer thread: takes plans in order and runs their statements, each holding `access`.
    private func run() {
        while true {
            monitor.lock()
            while queue.isEmpty, !stopping { monitor.wait() }
            if stopping {
                monitor.unlock()
                return
            }
            let plan = queue.removeFirst()
            running = true
            monitor.broadcast()
            monitor.unlock()

            var error: (any Error)?
            for step in plan.steps {
                access.withLock {
                    while accessOwned || contextWaiting { access.wait() }
                    accessOwned = true
                }
                do {
                    try WritePlan.run(step, model: model, statements: statement)
                } catch let failed {
                    error = failed
                }
                releaseAccess()
                if error != nil { break }
            }

            monitor.withLock {
                running = false
                if let error {
                    failure = error
                    queue.removeAll()
                } else {
                    written += 1
                }
                monitor.broadcast()
            }
        }
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
