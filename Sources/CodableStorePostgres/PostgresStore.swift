import CLibPQ
import CLibPQLoader
import CodableStore
import Foundation
import Logging
import Synchronization

/// Where a PostgreSQL store lives: a server, a database, a user, and the schema that holds the store's tables.
///
/// ```swift
/// let configuration = try PostgresConfiguration(url: "postgres://app:secret@db.internal:5432/issues")
/// let store = try Store.open(postgres: configuration, entities: [Issue.self, User.self, Label.self])
/// ```
///
/// URL forms: `postgres://user[:password]@host[:port]/database`, and for a Unix socket
/// `postgres://user@/database?host=/var/run/postgresql` (the folder of the socket; the port picks its file name).
/// `?schema=NAME` keeps the store's tables in that schema (created if needed) instead of the user's default (`public`).
/// Every other query item is a libpq connection parameter, passed on as it is: `sslmode` (`prefer` by default: TLS
/// when the server offers it; `require`, `verify-full` with `sslrootcert=/path/to/ca.pem`), `connect_timeout` (10
/// seconds by default), `keepalives_idle` (30 seconds by default: with 3 probes 10 seconds apart, a server host that
/// vanished is noticed within a minute), `application_name`… An unknown one fails the connection, naming it. What the URL leaves out,
/// libpq takes from its environment variables (`PGPASSWORD`, `PGSSLMODE`…) and files (`~/.pgpass`), as `psql` does.
public struct PostgresConfiguration: Sendable {
    /// The host name or address; for a Unix socket, the folder that holds it (starting with `/`).
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    /// The database; nil for libpq's default (the user's name).
    public var database: String?
    /// The schema of the store's tables; nil for the connection's default search path.
    public var schema: String?
    /// Further libpq connection parameters (`sslmode`, `connect_timeout`…), by keyword.
    public var parameters: [String: String]
    /// The URL without its password, for messages.
    public let redactedURL: String

    /// Parses a `postgres://` or `postgresql://` URL.
    /// - Throws: ``StoreError/Code/connectionFailed`` when the URL is not one.
    public init(url: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw StoreError(.connectionFailed, "'\(url)' is not a postgres:// URL")
        }
        // URLComponents decodes the user and the password already.
        user = components.user ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        password = components.password
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? nil : path
        var query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        port = components.port ?? 5432
        if let socketFolder = query.removeValue(forKey: "host"), socketFolder.hasPrefix("/") {
            host = socketFolder
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw StoreError(.connectionFailed, "'\(url)' names no host (use ?host=/folder for a Unix socket)")
            }
            self.host = host
        }
        schema = query.removeValue(forKey: "schema").flatMap { $0.isEmpty ? nil : $0 }
        parameters = query
        var redacted = components
        if redacted.password != nil { redacted.password = "***" }
        redactedURL = redacted.string ?? "postgres://"
    }

    /// The keywords and values libpq connects with (`PQconnectdbParams`).
    var libpqParameters: [(keyword: String, value: String?)] {
        var list: [(keyword: String, value: String?)] = [
            ("host", host), ("port", String(port)), ("user", user), ("password", password), ("dbname", database),
            // Without a name, the server's activity view shows nothing; a URL's own wins.
            ("application_name", "codablestore"),
            // libpq waits as long as the system does for a host that does not answer (minutes): ten seconds, as
            // postgres-nio did, unless the URL says otherwise.
            ("connect_timeout", "10"),
            // A server host that vanishes without closing the connection (a network partition, a powered-off
            // machine) would leave a statement waiting for hours: TCP keepalives find it within a minute (30 s idle,
            // then 3 probes 10 s apart). Over a Unix socket, libpq ignores them.
            ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ]
        for (keyword, value) in parameters.sorted(by: { $0.key < $1.key }) {
            list.removeAll { $0.keyword == keyword }
            list.append((keyword, value))
        }
        // libpq ends the list at the first NULL value: parameters left out are left out.
        return list.filter { $0.value != nil }
    }
}

extension Store {
    /// Opens (creating if needed) a store in a PostgreSQL database: the same models, contexts, decoder and importer
    /// as a SQLite store.
    ///
    /// The schema is created on first open, checked on later ones, and additive changes are applied, as for SQLite.
    /// The writes of different processes run in parallel: row ids come from the server's sequences, identities stay
    /// unique, and a write that met another's (an identity both inserted, a deadlock) runs again, from its third attempt
    /// with no other writer beside it (see `Store/Options/maximumWriteAttempts`); schema changes keep other writers out. Reads run in
    /// `REPEATABLE READ` snapshots beside them.
    ///
    /// The synchronous methods of the returned store wait for the server on the calling thread; call them from
    /// threads of your own (a command-line tool's main thread), and the `async` variants from Swift concurrency:
    /// those run the work on a thread of their own, so no cooperative thread waits for the network.
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/connectionFailed`` when the server cannot be reached), or
    ///   ``PostgresError`` for what the server refused.
    public static func open(
        postgres configuration: PostgresConfiguration, entities: [any EntityObject.Type],
        runtimeEntities: [EntityDescription] = [], options: Options = Options()
    ) throws -> Store {
        let backend = try PostgresBackend(configuration: configuration, options: options)
        return try Store(
            backend: backend, dialect: PostgresDialect(), entities: entities, runtimeEntities: runtimeEntities, options: options,
            description: configuration.redactedURL)
    }

    /// Opens a store in a PostgreSQL database given by URL (see ``PostgresConfiguration/init(url:)``).
    public static func open(
        postgres url: String, entities: [any EntityObject.Type], runtimeEntities: [EntityDescription] = [],
        options: Options = Options()
    ) throws -> Store {
        try open(postgres: PostgresConfiguration(url: url), entities: entities, runtimeEntities: runtimeEntities, options: options)
    }

    /// Opens a store in a PostgreSQL database without holding a cooperative thread while connecting.
    public static func open(
        postgres url: String, entities: [any EntityObject.Type], runtimeEntities: [EntityDescription] = [],
        options: Options = Options()
    ) async throws -> Store {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result { try open(postgres: url, entities: entities, runtimeEntities: runtimeEntities, options: options) })
            }
        }
    }
}

/// The connections of a PostgreSQL store: one writer behind a lock (writes of this process are serialized here; those
/// of other processes run beside them, see `PostgresDatabaseConnection.beginWriteTransaction()`), and a pool of
/// readers.
final class PostgresBackend: StoreBackend {
    private let configuration: PostgresConfiguration
    private let options: Store.Options
    // Locked (pthread mutexes), not Synchronization.Mutex: ThreadSanitizer cannot see a contended Mutex hand over
    // (see Locked), and took two writes in turn for a race on the writer connection.
    private let writer: Locked<Box>
    private let readers = Locked<[Box]>([])
    /// The channel of this store's schema, and this store's mark on its own announcements (it hears of its own
    /// writes directly).
    private let channel: String
    private let token = UUID().uuidString
    /// The connection that listens for other processes' announcements, from the first observation on.
    private let listener = Locked<PostgresListener?>(nil)

    /// A connection passed between threads; used by one at a time (under the writer's lock, or taken out of the pool).
    final class Box: @unchecked Sendable {
        let connection: PostgresDatabaseConnection
        init(_ connection: PostgresDatabaseConnection) { self.connection = connection }
    }

    init(configuration: PostgresConfiguration, options: Store.Options) throws {
        self.configuration = configuration
        self.options = options
        let connection = try Self.connect(configuration, options: options)
        guard case .text(let schema)? = try connection.scalar(sql: "SELECT current_schema()") else {
            throw StoreError(.connectionFailed, "\(configuration.redactedURL) has no current schema (check search_path)")
        }
        // A channel name is an identifier of at most 63 bytes: a digest of the schema's name keeps it short.
        channel = "codablestore_" + String(UInt64(bitPattern: Int64(truncatingIfNeeded: Self.stableHash(schema))), radix: 36)
        connection.announcement = (channel, token)
        self.writer = Locked(Box(connection))
    }

    /// FNV-1a: the same in every process (Swift's `hashValue` is seeded per process).
    private static func stableHash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0100_0000_01b3 }
    }

    private static func connect(_ configuration: PostgresConfiguration, options: Store.Options) throws -> PostgresDatabaseConnection {
        let connection = try PostgresDatabaseConnection.connect(configuration, options: options)
        // The store's statements are short and many: JIT compilation, which the planner turns on for statements it
        // expects to be costly (every statement on a table filled in the current transaction, which has no
        // statistics yet), took 80 ms of a 100 ms membership query at 1M rows. Reads wait for a table's lock as long
        // as writes do (a schema change, an import loading empty tables alone: see LoadDeferral), then fail as
        // busy; a write sets its own for its transaction. A URL's own lock_timeout (in `options`) wins.
        let ownLockTimeout = configuration.parameters["options"]?.contains("lock_timeout") == true
        try connection.execute(
            sql: "SELECT set_config('jit', 'off', false)"
                + (ownLockTimeout ? "" : ", set_config('lock_timeout', '\(max(1, Int(options.busyTimeout)))', false)"))
        if let schema = configuration.schema {
            let name = quoteIdentifier(schema)
            // Created only when missing: CREATE SCHEMA IF NOT EXISTS needs the privilege to create even when it exists.
            if try connection.scalar(sql: "SELECT count(*) FROM pg_namespace WHERE nspname = ?", arguments: [.text(schema)]) == .integer(0) {
                do {
                    try connection.execute(sql: "CREATE SCHEMA IF NOT EXISTS \(name)")
                } catch let error as PostgresError where error.sqlState == "23505" || error.sqlState == "42P06" {
                    // Another process created it at the same moment: IF NOT EXISTS does not cover that race (both
                    // see no schema, and the second insert into the catalog fails on its unique index).
                }
            }
            try connection.execute(sql: "SET search_path TO \(name)")
        }
        return connection
    }

    func prepareSchema(for model: Schema, options: Store.Options) throws {
        try writer.withLock { box in
            try PostgresSchema.prepare(
                box.connection, model: model, policy: options.schemaChangePolicy, migrations: options.migrations, logger: options.logger)
        }
    }

    func withWriter<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try writer.withLock { box in
            if box.connection.isClosed {
                // The server restarted or the network dropped: the next write gets a new connection.
                let connection = try Self.connect(configuration, options: options)
                connection.announcement = (channel, token)
                box = Box(connection)
            }
            return try body(box.connection)
        }
    }

    func withReader<T: Sendable>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        // A pooled connection the server ended while it waited is dropped (closed as it is released).
        let pooled = readers.withLock { pool -> Box? in
            while let box = pool.popLast() {
                if !box.connection.isClosed { return box }
            }
            return nil
        }
        let box = try pooled ?? Box(Self.connect(configuration, options: options))
        defer {
            readers.withLock { pool in
                if pool.count < options.maximumReaderCount, !box.connection.isClosed { pool.append(box) }
            }
        }
        return try body(box.connection)
    }

    func listenForChanges(_ handler: @escaping @Sendable ([String]) -> Void) {
        listener.withLock { current in
            guard current == nil else { return }
            let token = token
            do {
                let connection = try Self.connect(configuration, options: options)
                // Listening before the observation's first read: no commit falls between the two.
                try connection.execute(sql: "LISTEN \(quoteIdentifier(channel))")
                current = PostgresListener(connection, logger: options.logger) { payload in
                    let parts = payload.split(separator: " ", maxSplits: 1)
                    guard parts.count == 2, parts[0] != token else { return }
                    let names = parts[1].split(separator: ",").map(String.init)
                    // Observers read the store synchronously: on a thread of their own (one that closed the store
                    // from the listener's would wait for the listener to end).
                    DispatchQueue.global().async { handler(names) }
                }
            } catch {
                options.logger.error(
                    "observations will not hear of other processes' changes: listening failed", metadata: ["error": "\(error)"])
            }
        }
    }

    func close() {
        listener.withLock { current in
            current?.stop()
            current = nil
        }
        for box in readers.withLock({ pool in defer { pool.removeAll() }; return pool }) { box.connection.close() }
        writer.withLock { $0.connection.close() }
    }
}

/// The connection that waits for other processes' announcements (`NOTIFY`) on a thread of its own, and hands each
/// payload to its handler there: nothing waits on Swift's cooperative pool.
final class PostgresListener: @unchecked Sendable {
    // @unchecked: the connection is used by the listening thread alone, until `stop()` has waited for it to end.
    private let connection: PostgresDatabaseConnection
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(_ connection: PostgresDatabaseConnection, logger: Logger, handler: @escaping @Sendable (String) -> Void) {
        self.connection = connection
        let thread = Thread { [self] in
            listen(logger: logger, handler: handler)
            finished.signal()
        }
        thread.name = "CodableStore PostgreSQL listener"
        thread.start()
    }

    /// Waits for the socket (a quarter of a second at most, to see `stop()`), then hands over what arrived.
    private func listen(logger: Logger, handler: @Sendable (String) -> Void) {
        guard let handle = connection.handle else { return }
        while !stopped.load(ordering: .acquiring) {
            switch connection.readInput(waitingMilliseconds: 250) {
            case .nothing: continue
            case .read: break
            case .failed:
                logger.error(
                    "observations no longer hear of other processes' changes: the listening connection failed",
                    metadata: ["error": "\(PostgresError.connectionMessage(handle))"])
                return
            }
            while let notification = codable_store_PQnotifies(handle) {
                let payload = notification.pointee.extra.map { String(cString: $0) } ?? ""
                codable_store_PQfreemem(notification)
                handler(payload)
            }
        }
    }

    /// Stops listening and closes the connection.
    func stop() {
        stopped.store(true, ordering: .releasing)
        finished.wait()
        connection.close()
    }
}
