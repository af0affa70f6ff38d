import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A SQLite-backed store of entities: the `Sendable` entry point for reading and writing.
///
/// ```swift
/// let store = try Store(path: "people.sqlite", entities: [Person.self, Country.self])
/// try store.write { context in
///     try context.insert(Person(id: 1, name: "Ada"))
/// }
/// let names = try store.read { context in
///     try context.fetch(Person.self, orderBy: [.ascending(\.name)]).map(\.name)
/// }
/// ```
///
/// Writes are serialized on one connection, each in one transaction (`BEGIN IMMEDIATE`): committed when the
/// closure returns, rolled back when it throws. Reads run concurrently on their own connections, each in a
/// transaction that sees one consistent snapshot, and are never blocked by a write (WAL mode). An in-memory
/// store has a single connection, so its reads wait for writes.
///
/// Related SQLite documentation: <https://www.sqlite.org/wal.html>, <https://www.sqlite.org/lang_transaction.html>
public final class Store: Sendable {
    /// How a store opens its database.
    public struct Options: Sendable {
        /// What to do when the stored model cannot be migrated by adding tables and columns.
        public var schemaChangePolicy: SchemaChangePolicy
        /// How long a connection waits for a lock held by another process, in milliseconds.
        public var busyTimeout: Int32
        /// The page cache of the writer connection, in KiB (readers get a quarter of it). An import raises the
        /// writer's for its duration (`ImportOptions/cacheSizeKiB`).
        public var cacheSizeKiB: Int
        /// At most this many reader connections are kept open.
        public var maximumReaderCount: Int
        /// Called with the SQL of every statement the store's connections run, for logging or for counting.
        /// During an import it is also called on the import's writer thread.
        public var statementObserver: (@Sendable (String) -> Void)?
        /// Called with the SQL of every statement the store's connections run (its text with `?` placeholders)
        /// and how long it ran, when it finishes: a statement profile, for finding where a write or an import
        /// spends its time (the import benchmark prints one with `IMPORT_BENCH_PROFILE=1`). During an import it is
        /// also called on the import's writer thread. Costs a callback per statement.
        public var statementProfiler: (@Sendable (String, Duration) -> Void)?
        /// Where the store logs: statements at trace, saves and schema changes at info, failed writes at error.
        /// Silent by default.
        public var logger: Logger
        /// The name of a registered SQLite VFS (the layer through which SQLite reaches the file system) that
        /// every connection of the store opens the file with; `nil` (the default) is SQLite's default VFS.
        ///
        /// ```swift
        /// // A VFS registered beforehand with sqlite3_vfs_register, e.g. one that encrypts, or that fails
        /// // chosen writes in a test.
        /// let store = try Store(path: path, entities: [Person.self], options: .init(vfs: "my-vfs"))
        /// ```
        /// Opening fails with `SQLiteError` (`SQLITE_ERROR`, "no such vfs: …") when no VFS of that name is
        /// registered. The VFS must support shared memory (version 2 or later), which WAL mode needs.
        ///
        /// Related SQLite documentation: <https://www.sqlite.org/vfs.html>, <https://www.sqlite.org/c3ref/vfs_find.html>
        public var vfs: String?
        /// The model's migrations, oldest first: the changes adding tables and columns cannot make (see ``Migration``).
        /// The ones the store has not recorded run when it opens.
        public var migrations: [Migration]
        /// How many times a write (``Store/write(_:)-2mz68``, an import's transaction) runs at most, on a backend with
        /// writers in parallel (PostgreSQL), when it fails only because another writer's transaction ran at the same
        /// moment (a deadlock, a serialization failure, an identity the other inserted first): the transaction is
        /// rolled back and run again from its start. 1 never runs one twice. SQLite's write lock keeps other writers
        /// out, so its writes never run twice.
        public var maximumWriteAttempts: Int

        public init(
            schemaChangePolicy: SchemaChangePolicy = .fail,
            busyTimeout: Int32 = 5_000,
            cacheSizeKiB: Int = 16 * 1024,
            maximumReaderCount: Int = 4,
            statementObserver: (@Sendable (String) -> Void)? = nil,
            statementProfiler: (@Sendable (String, Duration) -> Void)? = nil,
            logger: Logger = Logger(label: "CodableStore", factory: { _ in SwiftLogNoOpLogHandler() }),
            vfs: String? = nil,
            migrations: [Migration] = [],
            maximumWriteAttempts: Int = 8
        ) {
            self.migrations = migrations
            self.maximumWriteAttempts = max(1, maximumWriteAttempts)
            self.logger = logger
            self.vfs = vfs
            self.schemaChangePolicy = schemaChangePolicy
            self.busyTimeout = busyTimeout
            self.cacheSizeKiB = cacheSizeKiB
            self.maximumReaderCount = maximumReaderCount
            self.statementObserver = statementObserver
            self.statementProfiler = statementProfiler
        }
    }

    /// The database path, or `":memory:"`.
    public let path: String
    /// Whether the data lives only in memory.
    public let isInMemory: Bool
    package let model: Schema
    /// How the model's rows are written in SQLite: the backend side of the context's write plans.
    package let storage: SQLStorage
    package let options: Options
    /// The writer connection and the readers' pool.
    package let connections: any StoreBackend
    /// The SQLite connections, for a SQLite store (``withWriterConnection(_:)``).
    private let sqlite: SQLiteConnections?
    let observers = ObserverRegistry()

    /// Opens the store at `path`, creating the file and the schema if needed and applying additive changes
    /// of the model.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - entities: The entity classes; destinations of their relationships are added automatically.
    ///   - runtimeEntities: Entities described at run time (``RuntimeEntityBuilder``, or a model file read by
    ///     `CodableStoreModelFile`), each named uniquely; their relationships name their destinations.
    ///   - options: Schema change policy, timeouts, cache size.
    /// - Throws: `SQLiteError` when the file cannot be opened, is not a database, is corrupt, read-only or
    ///   locked; ``StoreError`` when the model is invalid or does not match the stored one. Nothing is changed
    ///   in the file unless the model is applied (or reset under ``SchemaChangePolicy/reset(onReset:)``).
    public convenience init(
        path: String, entities: [any EntityObject.Type], runtimeEntities: [EntityDescription] = [], options: Options = Options()
    ) throws {
        try self.init(path: path, inMemory: false, entities: entities, runtimeEntities: runtimeEntities, options: options)
    }

    /// A store that lives in memory and disappears when released.
    public static func inMemory(
        entities: [any EntityObject.Type], runtimeEntities: [EntityDescription] = [], options: Options = Options()
    ) throws -> Store {
        try Store(path: ":memory:", inMemory: true, entities: entities, runtimeEntities: runtimeEntities, options: options)
    }

    private init(
        path: String, inMemory: Bool, entities: [any EntityObject.Type], runtimeEntities: [EntityDescription], options: Options
    ) throws {
        let model = try Schema(entities: entities, runtime: runtimeEntities)
        let connections = try SQLiteConnections(path: path, inMemory: inMemory, options: options)
        try connections.prepareSchema(for: model, options: options)
        self.path = path
        self.isInMemory = inMemory
        self.model = model
        self.storage = SQLStorage(model: model)
        self.options = options
        self.connections = connections
        self.sqlite = connections
    }

    /// A store on another backend, reached through `backend` and written in `dialect`: what a backend module opens
    /// (its `Store.open(…)`). Creates the schema, or checks the stored one and migrates it
    /// (``StoreBackend/prepareSchema(for:options:)``).
    ///
    /// - Parameter description: Where the store is, for messages (``path``); without secrets.
    package init(
        backend: any StoreBackend, dialect: any SQLDialect, entities: [any EntityObject.Type],
        runtimeEntities: [EntityDescription] = [], options: Options, description: String
    ) throws {
        let model = try Schema(entities: entities, runtime: runtimeEntities)
        try backend.prepareSchema(for: model, options: options)
        self.path = description
        self.isInMemory = false
        self.model = model
        self.storage = SQLStorage(model: model, dialect: dialect)
        self.options = options
        self.connections = backend
        self.sqlite = nil
    }

    deinit {
        // Sequences of observations end when the store goes away, rather than waiting forever.
        observers.finishAll()
        connections.close()
    }

    // MARK: - Writing

    /// Runs `body` in a write transaction: saves and commits when it returns, rolls back when it throws.
    ///
    /// Writes are serialized: a second `write` waits for the first to finish. On PostgreSQL, where the writers of
    /// other processes write at the same time, a transaction that fails only because of one of theirs (a deadlock,
    /// an identity both inserted at once) is rolled back and `body` runs again, with a new context (from the third
    /// attempt on with no other writer beside it), up to ``Options/maximumWriteAttempts`` times: keep
    /// `body` free of effects outside the context.
    /// - Returns: What `body` returns.
    public func write<T: Sendable>(_ body: (Context) throws -> T) throws -> T {
        try retryingConflicts(operation: "write") { retries in try writeOnce(alone: Self.writesAlone(afterRetries: retries), body) }
    }

    /// Runs `attempt` again while it fails with a conflict of writers in parallel (``SQLDialect/isTransientConflict(_:)``),
    /// up to ``Options/maximumWriteAttempts`` times, waiting a little longer each time (a random share of it, so that
    /// writers that met do not meet again). `attempt` gets the number of attempts before it (see
    /// ``writesAlone(afterRetries:)``). The last attempt's conflict is thrown as it is when it is an identity
    /// conflict (which may be the caller's own), otherwise as a ``StoreError/Code/writeConflict``.
    package func retryingConflicts<T>(
        operation: String, isConflict: ((any Error) -> Bool)? = nil, _ attempt: (_ retries: Int) throws -> T
    ) throws -> T {
        try Self.retryingConflicts(
            maximumAttempts: options.maximumWriteAttempts, logger: options.logger, operation: operation,
            isConflict: isConflict ?? storage.dialect.isTransientConflict, attempt)
    }

    /// ``retryingConflicts(operation:isConflict:_:)`` for a caller without the store at hand (an import's batches).
    /// `attempt` leaves nothing behind when it throws (its transaction rolled back), so that no lock is held while
    /// the next attempt waits.
    package static func retryingConflicts<T>(
        maximumAttempts: Int, logger: Logger, operation: String, isConflict: (any Error) -> Bool,
        _ attempt: (_ retries: Int) throws -> T
    ) throws -> T {
        var attempts = 1
        while true {
            do {
                return try attempt(attempts - 1)
            } catch let error where isConflict(error) {
                guard attempts < maximumAttempts else {
                    if let storeError = error as? StoreError, storeError.code == .identityConflict { throw error }
                    throw StoreError(
                        .writeConflict,
                        "the \(operation) met other writers' transactions on each of its \(attempts) attempts and was rolled back "
                            + "(last: \(error)); run it again, or allow more attempts with Store.Options.maximumWriteAttempts",
                        cause: error)
                }
                logger.notice(
                    "\(operation) runs again: another writer's transaction ran at the same moment",
                    metadata: ["attempt": "\(attempts + 1)", "error": "\(error)"])
                backOff(attempt: attempts)
                attempts += 1
            }
        }
    }

    /// Whether an attempt after `retries` failed ones writes alone (``DatabaseConnection/beginWriteTransaction(alone:)``):
    /// the second attempt runs beside the other writers (its lookups find what the one it met committed, and most
    /// conflicts end there); from the third on, it waits for the writes running and keeps new ones out, so that it
    /// cannot meet another writer again. Alone from the second, 4 importers of one dump split in 4 spent 40% of their
    /// batches waiting for each other (no faster than one importer).
    package static func writesAlone(afterRetries retries: Int) -> Bool { retries >= 2 }

    /// Waits before attempt `attempt + 1` of a transaction that met another writer's: 1, 2, 4… ms up to 64, a random
    /// half of it or more.
    private static func backOff(attempt: Int) {
        let ceiling = UInt32(1 << min(max(attempt - 1, 0), 6)) * 1_000
        usleep(UInt32.random(in: (ceiling / 2)...ceiling))
    }

    /// `alone`: with no other writer beside it (see ``DatabaseConnection/beginWriteTransaction(alone:)``).
    private func writeOnce<T: Sendable>(alone: Bool, _ body: (Context) throws -> T) throws -> T {
        do {
            var touched = Set<Int>()  // filled on this thread, inside the (non-escaping) closure below
            let result = try connections.withWriter { connection in
                try connection.inWriteTransaction(alone: alone) {
                    let context = Context(connection: connection, storage: storage, isReadOnly: false)
                    defer { context.invalidate() }
                    let result = try body(context)
                    // A failure here rolls the whole transaction back: no savepoint needed.
                    try context.flush(usingSavepoint: false, isSave: true)
                    touched = context.touchedEntities
                    if !touched.isEmpty { try connection.announceChanges(to: touched.sorted().map { model.mappings[$0].name }) }
                    if !context.writeCounts.isEmpty {
                        let inserted = context.writeCounts.values.reduce(0) { $0 + $1.inserted }
                        let updated = context.writeCounts.values.reduce(0) { $0 + $1.updated }
                        options.logger.info("write saved", metadata: ["inserted": "\(inserted)", "updated": "\(updated)"])
                    }
                    return result
                }
            }
            // Committed: observers read the new state, outside the write lock.
            notifyObservers(touched)
            return result
        } catch {
            options.logger.error("write rolled back", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Runs `body` in a write transaction off the caller's thread (see ``write(_:)-2mz68``).
    public func write<T: Sendable>(_ body: @escaping @Sendable (Context) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.write(body) })
            }
        }
    }

    /// Runs `body` with a context whose changes are never saved: insert temporary objects, relate them to
    /// stored ones, query them, and everything is rolled back when the closure returns (or throws).
    ///
    /// ```swift
    /// let preview = try store.scratch { context in
    ///     try context.insert(Issue(id: -1, number: 0, title: "Draft"))
    ///     return try context.count(Issue.self)          // includes the draft
    /// }                                                  // the draft is gone
    /// ```
    /// It takes the write lock like ``write(_:)-2mz68``, since SQLite sees the temporary rows.
    public func scratch<T: Sendable>(_ body: (Context) throws -> T) throws -> T {
        try connections.withWriter { connection in
            try connection.beginWriteTransaction()
            defer { connection.rollbackIgnoringErrors() }
            let context = Context(connection: connection, storage: storage, isReadOnly: false)
            defer { context.invalidate() }
            return try body(context)
        }
    }

    // MARK: - Reading

    /// Runs `body` in a read transaction: it sees one consistent snapshot, including nothing that another
    /// write has not committed. Reads run concurrently with each other and with a write.
    public func read<T: Sendable>(_ body: (Context) throws -> T) throws -> T {
        try connections.withReader { connection in
            try connection.inReadTransaction {
                let context = Context(connection: connection, storage: storage, isReadOnly: true)
                defer { context.invalidate() }
                return try body(context)
            }
        }
    }

    /// Runs `body` in a read transaction off the caller's thread (see ``read(_:)-mvnk``).
    public func read<T: Sendable>(_ body: @escaping @Sendable (Context) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.read(body) })
            }
        }
    }

    // MARK: - Maintenance

    /// Runs `body` with the writer connection, outside any transaction: for maintenance and tests.
    ///
    /// - Throws: ``StoreError/Code/unsupported`` for a store on another backend than SQLite.
    public func withWriterConnection<T: Sendable>(_ body: (Connection) throws -> T) throws -> T {
        guard let sqlite else {
            throw StoreError(.unsupported, "withWriterConnection(_:) gives a SQLite connection; this store is \(path)")
        }
        return try sqlite.withWriter { connection in
            // SQL of the caller's fires the store's triggers, its stamp guards included (see StampGuards.quiet).
            try StampGuards.wake(on: connection)
            return try body(connection)
        }
    }

    /// Runs `body` with the writer connection of any backend, outside any transaction.
    package func withWriter<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try connections.withWriter(body)
    }
}
