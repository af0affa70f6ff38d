import Dispatch
import Logging

/// An entity's stored values as a `Sendable` value: what reads and observations hand across tasks.
///
/// ```swift
/// let titles = try store.read { context in
///     try context.snapshots(Issue.self, where: \.state == "open").map { $0[\.title] }
/// }
/// ```
/// Attributes are read back with their Swift types through key paths (`snapshot[\.title]` is a `String`);
/// a to-one relationship is its destination's row id (``rowID(of:)``). A snapshot is a copy: it does not
/// change with the store.
///
/// Why a generic type rather than one generated per entity: a macro sees only syntax, so it cannot tell an
/// attribute of a user's type from a relationship to an entity, and a generated struct would have to hold
/// relationship fields somehow; key paths give the same typed access, for hand-written entities too.
public struct Snapshot<Entity: EntityObject>: Sendable, Hashable {
    /// The row id (`_pk`).
    public let rowID: Int64
    /// Stored values by field index (attributes, and to-one relationships as row ids).
    let values: [DatabaseValue?]
    /// The field names of an entity described at run time (its snapshots are `Snapshot<RuntimeObject>`, whose class
    /// describes no field); nil for a compiled entity.
    var fieldNames: [String]? = nil

    /// An attribute's value. A value that does not fit its type (impossible unless the file was edited
    /// by hand) reads as the attribute's default conversion failure: this traps, as reading a corrupt
    /// object would throw.
    public subscript<V: AttributeValue>(_ keyPath: KeyPath<Entity, V>) -> V {
        guard let field = Entity.entityDescription.fieldIndex(for: keyPath), let value = values[field] else {
            preconditionFailure("\(keyPath) is not a stored attribute of \(Entity.self)")
        }
        do {
            return try V(databaseValue: value)
        } catch {
            preconditionFailure("\(Entity.self): stored value \(value) does not fit \(V.self): \(error)")
        }
    }

    /// The row id of a to-one relationship's destination, or nil when it is not set.
    public func rowID<D: EntityObject>(of keyPath: KeyPath<Entity, D?>) -> Int64? {
        guard let field = Entity.entityDescription.fieldIndex(for: keyPath), case .integer(let rowID)? = values[field] else {
            return nil
        }
        return rowID
    }

    /// A field's stored value by name, or nil if the entity has no such stored field.
    public subscript(field name: String) -> DatabaseValue? {
        let field = fieldNames.map { $0.firstIndex(of: name) } ?? Entity.entityDescription.fields.firstIndex { $0.name == name }
        guard let field else { return nil }
        return values[field]
    }
}

/// The results of an observed query after one committed transaction, with what changed since the previous
/// results; or the failure of a refresh, with the results last read.
public struct QueryChange<Entity: EntityObject>: Sendable, Equatable {
    /// The current results, in the query's order. For a change that reports a ``failure``, the results last read
    /// (those of the previous change), which may be out of date.
    public let rows: [Snapshot<Entity>]
    /// Indexes in ``rows`` of rows that were not in the previous results.
    public let inserted: [Int]
    /// Indexes in the previous results of rows that are gone.
    public let deleted: [Int]
    /// Indexes in ``rows`` of rows whose values changed.
    public let updated: [Int]
    /// Rows present in both whose position among the rows present in both changed: (previous index,
    /// current index).
    public let moved: [Move]
    /// Why the results could not be read, for a change that reports a failed refresh rather than new results:
    /// a ``StoreError`` with code ``StoreError/Code/observationFailed`` whose ``StoreError/cause`` is the read's
    /// error (an I/O error, a busy store, a server gone). ``rows`` are then the results last read, and every list
    /// of changes is empty. Nil for a change whose results were read.
    ///
    /// ```swift
    /// for await change in store.observe(Issue.self) {
    ///     if let failure = change.failure { banner.show("Not up to date: \(failure.message)"); continue }
    ///     banner.hide()
    ///     table.apply(inserted: change.inserted, deleted: change.deleted, updated: change.updated)
    /// }
    /// ```
    public let failure: StoreError?

    public struct Move: Sendable, Equatable {
        public let from: Int
        public let to: Int
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Whether nothing changed (a transaction touched the entities but not these results, or the refresh
    /// failed).
    public var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && updated.isEmpty && moved.isEmpty }

    init(previous: [Snapshot<Entity>], current: [Snapshot<Entity>]) {
        rows = current
        failure = nil
        let previousIndex = Dictionary(previous.enumerated().map { ($1.rowID, $0) }, uniquingKeysWith: { a, _ in a })
        let currentIndex = Dictionary(current.enumerated().map { ($1.rowID, $0) }, uniquingKeysWith: { a, _ in a })
        inserted = current.indices.filter { previousIndex[current[$0].rowID] == nil }
        deleted = previous.indices.filter { currentIndex[previous[$0].rowID] == nil }
        updated = current.indices.filter { index in
            previousIndex[current[index].rowID].map { previous[$0].values != current[index].values } ?? false
        }
        let keptBefore = previous.filter { currentIndex[$0.rowID] != nil }.map(\.rowID)
        let keptAfter = current.filter { previousIndex[$0.rowID] != nil }.map(\.rowID)
        var moves: [Move] = []
        for (position, rowID) in keptAfter.enumerated() where keptBefore[position] != rowID {
            moves.append(Move(from: previousIndex[rowID]!, to: currentIndex[rowID]!))
        }
        moved = moves
    }

    /// A failed refresh: the rows last read, nothing changed.
    init(failure: StoreError, rows: [Snapshot<Entity>]) {
        self.rows = rows
        self.failure = failure
        inserted = []
        deleted = []
        updated = []
        moved = []
    }

    /// Equal rows and changes, and failures with the same description (a ``StoreError`` is not `Equatable`: its
    /// cause is any error).
    public static func == (lhs: QueryChange, rhs: QueryChange) -> Bool {
        lhs.rows == rhs.rows && lhs.inserted == rhs.inserted && lhs.deleted == rhs.deleted && lhs.updated == rhs.updated
            && lhs.moved == rhs.moved && lhs.failure?.description == rhs.failure?.description
    }
}

/// Live results of a query: the current results first, then one ``QueryChange`` after every committed
/// transaction that changes the entities the query reads. Rolled-back transactions send nothing. A refresh that
/// fails sends a change with its ``QueryChange/failure`` and is retried (see ``Store/observe(_:where:orderBy:)``).
/// The sequence ends when the task iterating it is cancelled, or when the store goes away.
public typealias QueryObservation<Entity: EntityObject> = AsyncStream<QueryChange<Entity>>

/// Live results of a query that end at the first failure, throwing its ``StoreError``: what
/// ``Store/observeThrowing(_:where:orderBy:)`` returns. Its changes never carry a ``QueryChange/failure``.
public typealias ThrowingQueryObservation<Entity: EntityObject> = AsyncThrowingStream<QueryChange<Entity>, any Error>

/// The store's observers.
final class ObserverRegistry: Sendable {
    /// One observation: which entities it reads, and how to re-run it and send the change.
    final class Observer: Sendable {
        let entities: Set<Int>
        /// The observed entity, for messages.
        let entity: String
        /// Re-reads the results in `context` and sends what changed; sends nothing when it throws.
        let refresh: @Sendable (Context) throws -> Void
        /// Reports the first failed refresh of a run of them; returns whether the observation goes on (and retries).
        let fail: @Sendable (StoreError) -> Bool
        /// Ends the observation's sequence.
        let finish: @Sendable () -> Void
        /// Held for a whole refresh, so that one observation refreshes once at a time and sends in order (a commit's
        /// refresh and a retry may come from two threads).
        let refreshing = Locked(RefreshState())

        struct RefreshState {
            /// The refreshes that failed since the last that did not.
            var failures = 0
            var isRetryScheduled = false
        }

        init(
            entities: Set<Int>, entity: String, refresh: @escaping @Sendable (Context) throws -> Void,
            fail: @escaping @Sendable (StoreError) -> Bool, finish: @escaping @Sendable () -> Void
        ) {
            self.entities = entities
            self.entity = entity
            self.refresh = refresh
            self.fail = fail
            self.finish = finish
        }
    }

    private let observers = Locked<[Int: Observer]>([:])
    private let nextID = Locked(0)

    func add(_ observer: Observer) -> Int {
        let id = nextID.withLock { value in
            value += 1
            return value
        }
        observers.withLock { $0[id] = observer }
        return id
    }

    func remove(_ id: Int) {
        _ = observers.withLock { $0.removeValue(forKey: id) }
    }

    func contains(_ observer: Observer) -> Bool {
        observers.withLock { $0.values.contains { $0 === observer } }
    }

    func interested(in entities: Set<Int>) -> [Observer] {
        observers.withLock { $0.values.filter { !$0.entities.isDisjoint(with: entities) } }
    }

    var isEmpty: Bool { observers.withLock { $0.isEmpty } }

    /// Ends every observation: the store is going away, so no change will come.
    func finishAll() {
        let all = observers.withLock { observers in
            defer { observers.removeAll() }
            return Array(observers.values)
        }
        for observer in all { observer.finish() }
    }
}

extension Store {
    /// Observes a query: the current results first, then the results after every committed transaction that
    /// touches the entities involved (the queried one and those reached with ``EntityPredicate/through(_:_:)``),
    /// with the inserted, deleted, updated and moved rows. One element per transaction.
    ///
    /// ```swift
    /// for await change in store.observe(Issue.self, where: \.state == "open", orderBy: [.ascending(\.number)]) {
    ///     if let failure = change.failure { banner.show(failure.message); continue }   // rows are the last read
    ///     render(change.rows, inserted: change.inserted)
    /// }
    /// ```
    /// A refresh that fails after a transaction (a failing disk, a busy store, a server gone) sends a change whose
    /// ``QueryChange/failure`` says why, with the results last read as its rows and nothing inserted, deleted,
    /// updated or moved; the failure is logged at error level. The observation goes on and retries the refresh by
    /// itself, 0.1 s later and then twice as long each time up to every 5 s, as well as after every transaction
    /// that touches its entities: the first refresh that reads the results sends the change from the rows last
    /// sent, without a failure. A run of failures sends one failure change, not one per retry. If the query cannot
    /// run at all when the observation starts (an invalid key path or SQL), the sequence sends one change with that
    /// failure and no rows, then ends. Use ``observeThrowing(_:where:orderBy:)`` for a sequence that ends with the
    /// error instead.
    ///
    /// On PostgreSQL, the transactions of other processes reach the observation as well (the store listens for
    /// them from the first observation on), and their refreshes fail and recover the same way.
    ///
    /// - Parameters:
    ///   - type: The entity to fetch.
    ///   - predicate: Which objects; all when nil.
    ///   - sort: The order of ``QueryChange/rows``; then by row id.
    /// - Returns: The changes, from the current results on; the sequence ends when the iterating task is
    ///   cancelled or the store goes away.
    public func observe<T: EntityObject>(
        _ type: T.Type, where predicate: EntityPredicate<T>? = nil, orderBy sort: [Sort<T>] = []
    ) -> QueryObservation<T> {
        // The model, not the store: the observer the store keeps must not keep the store (it ends when the store goes).
        let model = self.model
        return observation("\(T.self)", { () throws(StoreError) in try model.mapping(for: T.self) }, where: predicate, orderBy: sort)
    }

    /// Observes a query as ``observe(_:where:orderBy:)`` does, in a sequence that ends at the first failure by
    /// throwing it: the current results first, then one change after every committed transaction that touches
    /// the entities involved.
    ///
    /// ```swift
    /// do {
    ///     for try await change in store.observeThrowing(Issue.self, where: \.state == "open") {
    ///         render(change.rows)
    ///     }
    /// } catch let error as StoreError where error.code == .observationFailed {
    ///     showStale(error.message)         // error.cause: the read's own error
    /// }
    /// ```
    /// The sequence ends with a ``StoreError`` with code ``StoreError/Code/observationFailed`` when the results
    /// cannot be read, when it starts (an invalid query) or after a transaction (a failing disk, a busy store, a
    /// server gone); its ``StoreError/cause`` is the read's error. Nothing is retried: a new observation starts
    /// again from the results as they are then. It ends without an error when the iterating task is cancelled or
    /// the store goes away.
    ///
    /// - Parameters:
    ///   - type: The entity to fetch.
    ///   - predicate: Which objects; all when nil.
    ///   - sort: The order of ``QueryChange/rows``; then by row id.
    /// - Returns: The changes, from the current results on.
    public func observeThrowing<T: EntityObject>(
        _ type: T.Type, where predicate: EntityPredicate<T>? = nil, orderBy sort: [Sort<T>] = []
    ) -> ThrowingQueryObservation<T> {
        let model = self.model  // not the store: see observe(_:where:orderBy:)
        return throwingObservation(
            "\(T.self)", { () throws(StoreError) in try model.mapping(for: T.self) }, where: predicate, orderBy: sort)
    }

    /// Observes a query of the entity named `entity`, described at run time, as ``observe(_:where:orderBy:)`` observes
    /// a class's: its snapshots are read by field name (``Snapshot/subscript(field:)``).
    ///
    /// ```swift
    /// for await change in store.observe(entity: "Issue", where: .field("state") == "open", orderBy: [.ascending("number")]) {
    ///     print(change.rows.map { $0[field: "title"] })
    /// }
    /// ```
    public func observe(
        entity: String, where predicate: EntityPredicate<RuntimeObject>? = nil, orderBy sort: [Sort<RuntimeObject>] = []
    ) -> QueryObservation<RuntimeObject> {
        let model = self.model  // not the store: see observe(_:where:orderBy:)
        return observation(entity, { () throws(StoreError) in try model.mapping(named: entity) }, where: predicate, orderBy: sort)
    }

    /// Observes a query of the entity named `entity` as ``observe(entity:where:orderBy:)`` does, in a sequence
    /// that ends at the first failure by throwing it.
    public func observeThrowing(
        entity: String, where predicate: EntityPredicate<RuntimeObject>? = nil, orderBy sort: [Sort<RuntimeObject>] = []
    ) -> ThrowingQueryObservation<RuntimeObject> {
        let model = self.model  // not the store: see observe(_:where:orderBy:)
        return throwingObservation(
            entity, { () throws(StoreError) in try model.mapping(named: entity) }, where: predicate, orderBy: sort)
    }

    /// The sequence of ``observe(_:where:orderBy:)``: failures are sent as changes, and it goes on.
    private func observation<T: EntityObject>(
        _ label: String, _ mapping: @escaping @Sendable () throws(StoreError) -> EntitySchema, where predicate: EntityPredicate<T>?,
        orderBy sort: [Sort<T>]
    ) -> QueryObservation<T> {
        let (stream, continuation) = AsyncStream<QueryChange<T>>.makeStream(bufferingPolicy: .unbounded)
        startObserving(
            label, mapping, where: predicate, orderBy: sort, send: { continuation.yield($0) },
            fail: { failure, rows in
                continuation.yield(QueryChange(failure: failure, rows: rows))
                return true
            },
            end: { failure in
                if let failure { continuation.yield(QueryChange(failure: failure, rows: [])) }
                continuation.finish()
            },
            onTermination: { handler in continuation.onTermination = { _ in handler() } })
        return stream
    }

    /// The sequence of ``observeThrowing(_:where:orderBy:)``: the first failure ends it.
    private func throwingObservation<T: EntityObject>(
        _ label: String, _ mapping: @escaping @Sendable () throws(StoreError) -> EntitySchema, where predicate: EntityPredicate<T>?,
        orderBy sort: [Sort<T>]
    ) -> ThrowingQueryObservation<T> {
        let (stream, continuation) = AsyncThrowingStream<QueryChange<T>, any Error>.makeStream(bufferingPolicy: .unbounded)
        startObserving(
            label, mapping, where: predicate, orderBy: sort, send: { continuation.yield($0) },
            fail: { failure, _ in
                continuation.finish(throwing: failure)
                return false
            },
            end: { failure in continuation.finish(throwing: failure) },
            onTermination: { handler in continuation.onTermination = { _ in handler() } })
        return stream
    }

    /// Observes one object by its identity: its snapshot (or none) first, then after every committed
    /// transaction that touches its entity. Failures are reported as ``observe(_:where:orderBy:)`` reports them;
    /// an entity whose identity is not one attribute cannot be observed this way (a failure, then the end).
    public func observe<T: EntityObject, V: AttributeValue>(_ type: T.Type, identity value: V) -> QueryObservation<T> {
        do {
            return observe(T.self, where: try identityPredicate(T.self, value))
        } catch {
            let (stream, continuation) = AsyncStream<QueryChange<T>>.makeStream()
            continuation.yield(QueryChange(failure: .observationFailed("\(T.self)", error), rows: []))
            continuation.finish()
            return stream
        }
    }

    /// Observes one object by its identity as ``observe(_:identity:)`` does, in a sequence that ends at the first
    /// failure by throwing it (see ``observeThrowing(_:where:orderBy:)``).
    public func observeThrowing<T: EntityObject, V: AttributeValue>(_ type: T.Type, identity value: V) -> ThrowingQueryObservation<T> {
        do {
            return observeThrowing(T.self, where: try identityPredicate(T.self, value))
        } catch {
            let (stream, continuation) = AsyncThrowingStream<QueryChange<T>, any Error>.makeStream()
            continuation.finish(throwing: StoreError.observationFailed("\(T.self)", error))
            return stream
        }
    }

    /// `identity = value`, for an entity whose identity is one attribute.
    private func identityPredicate<T: EntityObject, V: AttributeValue>(_ type: T.Type, _ value: V) throws -> EntityPredicate<T> {
        let mapping = try model.mapping(for: T.self)
        guard mapping.identityColumns.count == 1 else {
            throw StoreError(
                .invalidQuery,
                "\(mapping.name)'s identity is [\(mapping.identityColumns.joined(separator: ", "))], not one attribute: observe it with a predicate",
                entity: mapping.name)
        }
        return .sql("\(quoteIdentifier(mapping.identityColumns[0])) = ?", [value.databaseValue])
    }

    /// Registers an observation of the entity `mapping` gives (named `label` in messages) and sends its first
    /// results. `send` sends a change; `fail` reports a failed refresh with the rows last sent and says whether the
    /// observation goes on; `end` ends it (with the failure of the first read, if that failed); `onTermination`
    /// installs what the sequence's end must do.
    private func startObserving<T: EntityObject>(
        _ label: String, _ mapping: @escaping @Sendable () throws(StoreError) -> EntitySchema, where predicate: EntityPredicate<T>?,
        orderBy sort: [Sort<T>],
        send: @escaping @Sendable (QueryChange<T>) -> Void,
        fail: @escaping @Sendable (StoreError, [Snapshot<T>]) -> Bool,
        end: @escaping @Sendable (StoreError?) -> Void,
        onTermination: (@escaping @Sendable () -> Void) -> Void
    ) {
        let evaluate: @Sendable (Context) throws -> [Snapshot<T>] = { context in
            try context.snapshots(try mapping(), where: predicate, orderBy: sort, limit: nil)
        }
        let root: EntitySchema
        let initial: [Snapshot<T>]
        listenForOtherProcesses()
        do {
            root = try mapping()
            initial = try read(evaluate)
        } catch {
            let failure = StoreError.observationFailed(label, error)
            options.logger.error("observation ended: its query failed", metadata: ["entity": "\(label)", "error": "\(error)"])
            end(failure)
            return
        }
        var entities: Set<Int> = [root.index]
        entities.formUnion(predicate?.joinedEntities(of: root) ?? [])
        // The rows last sent: what the next change is computed from, and what a failure change shows.
        let previous = Locked(initial)
        let id = observers.add(
            ObserverRegistry.Observer(entities: entities, entity: label) { context in
                let current = try evaluate(context)
                let change = previous.withLock { previous in
                    defer { previous = current }
                    return QueryChange(previous: previous, current: current)
                }
                send(change)
            } fail: { failure in
                fail(failure, previous.withLock { $0 })
            } finish: {
                end(nil)
            })
        send(QueryChange(previous: [], current: initial))
        let registry = observers
        onTermination { registry.remove(id) }
    }

    /// Has the backend tell observers of other processes' commits (PostgreSQL), from the first observation on.
    private func listenForOtherProcesses() {
        let indexes = Dictionary(model.mappings.map { ($0.name, $0.index) }, uniquingKeysWith: { first, _ in first })
        connections.listenForChanges { [weak self] names in
            self?.notifyObservers(Set(names.compactMap { indexes[$0] }))
        }
    }

    /// Tells the observers of these entities about a committed transaction.
    package func notifyObservers(_ entities: Set<Int>) {
        guard !entities.isEmpty, !observers.isEmpty else { return }
        for observer in observers.interested(in: entities) { refresh(observer) }
    }

    /// The delay before retrying a refresh after `failures` failures in a row: 0.1 s, then twice as long each time,
    /// up to 5 s.
    static func retryDelay(afterFailures failures: Int) -> Double {
        min(0.1 * Double(1 << min(failures - 1, 16)), 5)
    }

    /// Re-reads an observation's results and sends the change; when that fails, reports the first failure of a run
    /// and schedules a retry (if the observation goes on).
    private func refresh(_ observer: ObserverRegistry.Observer) {
        let retry: Double? = observer.refreshing.withLock { state in
            do {
                try read { context in try observer.refresh(context) }
                if state.failures > 0 {
                    options.logger.info(
                        "observation refresh recovered", metadata: ["entity": "\(observer.entity)", "failures": "\(state.failures)"])
                }
                state.failures = 0
                return nil
            } catch {
                state.failures += 1
                if state.failures == 1 {
                    options.logger.error("observation refresh failed", metadata: ["entity": "\(observer.entity)", "error": "\(error)"])
                    guard observer.fail(StoreError.observationFailed(observer.entity, error)) else { return nil }
                }
                guard !state.isRetryScheduled else { return nil }
                state.isRetryScheduled = true
                return Self.retryDelay(afterFailures: state.failures)
            }
        }
        guard let retry else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + retry) { [weak self] in
            let isFailing = observer.refreshing.withLock { state in
                state.isRetryScheduled = false
                return state.failures > 0
            }
            // Not if a commit's refresh did it meanwhile, nor once the observation or the store is gone.
            guard isFailing, let self, self.observers.contains(observer) else { return }
            self.refresh(observer)
        }
    }
}

extension StoreError {
    /// An observation's results could not be read: `cause` is the read's error.
    static func observationFailed(_ entity: String, _ cause: any Error) -> StoreError {
        let reason =
            switch cause {
            case let error as StoreError: error.message
            case let error as SQLiteError: error.message
            default: "\(cause)"
            }
        return StoreError(
            .observationFailed, "the observation of \(entity) could not read its results: \(reason)", entity: entity, cause: cause)
    }
}
