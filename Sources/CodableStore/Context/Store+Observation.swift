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
    let values: [SQLiteValue?]

    /// An attribute's value. A value that does not fit its type (impossible unless the file was edited
    /// by hand) reads as the attribute's default conversion failure: this traps, as reading a corrupt
    /// object would throw.
    public subscript<V: AttributeValue>(_ keyPath: KeyPath<Entity, V>) -> V {
        guard let field = Entity.entityDescription.fieldIndex(for: keyPath), let value = values[field] else {
            preconditionFailure("\(keyPath) is not a stored attribute of \(Entity.self)")
        }
        do {
            return try V(sqliteValue: value)
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
    public subscript(field name: String) -> SQLiteValue? {
        guard let field = Entity.entityDescription.fields.firstIndex(where: { $0.name == name }) else { return nil }
        return values[field]
    }
}

/// The results of an observed query after one committed transaction, with what changed since the previous
/// results.
public struct QueryChange<Entity: EntityObject>: Sendable, Equatable {
    /// The current results, in the query's order.
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

    public struct Move: Sendable, Equatable {
        public let from: Int
        public let to: Int
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Whether nothing changed (a transaction touched the entities but not these results).
    public var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && updated.isEmpty && moved.isEmpty }

    init(previous: [Snapshot<Entity>], current: [Snapshot<Entity>]) {
        rows = current
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
}

/// Live results of a query: the current results first, then one ``QueryChange`` after every committed
/// transaction that changes the entities the query reads. Rolled-back transactions send nothing. The
/// sequence ends when the task iterating it is cancelled.
public typealias QueryObservation<Entity: EntityObject> = AsyncStream<QueryChange<Entity>>

/// The store's observers.
final class ObserverRegistry: Sendable {
    /// One observation: which entities it reads, and how to re-run it and send the change.
    final class Observer: Sendable {
        let entities: Set<Int>
        /// Re-reads the results in `context` and sends what changed.
        let refresh: @Sendable (Context) throws -> Void
        /// Ends the observation's sequence.
        let finish: @Sendable () -> Void

        init(
            entities: Set<Int>, refresh: @escaping @Sendable (Context) throws -> Void, finish: @escaping @Sendable () -> Void
        ) {
            self.entities = entities
            self.refresh = refresh
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
    ///     render(change.rows, inserted: change.inserted)
    /// }
    /// ```
    /// If the query fails (an invalid key path), the sequence ends, and the store's logger says why. A refresh that
    /// fails after a transaction (a busy or failing disk) is logged at error level and sends nothing; the next
    /// change is computed against the last results sent.
    public func observe<T: EntityObject>(
        _ type: T.Type, where predicate: EntityPredicate<T>? = nil, orderBy sort: [Sort<T>] = []
    ) -> QueryObservation<T> {
        let (stream, continuation) = AsyncStream<QueryChange<T>>.makeStream(bufferingPolicy: .unbounded)
        let evaluate: @Sendable (Context) throws -> [Snapshot<T>] = { context in
            try context.snapshots(T.self, where: predicate, orderBy: sort)
        }
        let root: EntitySchema
        let initial: [Snapshot<T>]
        listenForOtherProcesses()
        do {
            root = try model.mapping(for: T.self)
            initial = try read(evaluate)
        } catch {
            options.logger.error("observation ended: its query failed", metadata: ["entity": "\(T.self)", "error": "\(error)"])
            continuation.finish()
            return stream
        }
        var entities: Set<Int> = [root.index]
        for joined in predicate?.joinedEntities ?? [] {
            if let mapping = try? model.mapping(for: joined) { entities.insert(mapping.index) }
        }
        let previous = Locked(initial)
        let id = observers.add(
            ObserverRegistry.Observer(entities: entities) { context in
                let current = try evaluate(context)
                let change = previous.withLock { previous in
                    defer { previous = current }
                    return QueryChange(previous: previous, current: current)
                }
                continuation.yield(change)
            } finish: {
                continuation.finish()
            })
        continuation.yield(QueryChange(previous: [], current: initial))
        let registry = observers
        continuation.onTermination = { _ in registry.remove(id) }
        return stream
    }

    /// Observes one object by its identity: its snapshot (or none) first, then after every committed
    /// transaction that touches its entity.
    public func observe<T: EntityObject, V: AttributeValue>(_ type: T.Type, identity value: V) -> QueryObservation<T> {
        guard let mapping = try? model.mapping(for: T.self), mapping.identityColumns.count == 1 else {
            let (stream, continuation) = AsyncStream<QueryChange<T>>.makeStream()
            continuation.finish()
            return stream
        }
        return observe(T.self, where: .sql("\(quoteIdentifier(mapping.identityColumns[0])) = ?", [value.sqliteValue]))
    }

    /// Has the backend tell observers of other processes' commits (PostgreSQL), from the first observation on.
    private func listenForOtherProcesses() {
        let indexes = Dictionary(model.mappings.map { ($0.name, $0.index) }, uniquingKeysWith: { first, _ in first })
        connections.listenForChanges { [weak self] names in
            self?.notifyObservers(Set(names.compactMap { indexes[$0] }))
        }
    }

    /// Tells the observers of these entities about a committed transaction.
    func notifyObservers(_ entities: Set<Int>) {
        guard !entities.isEmpty, !observers.isEmpty else { return }
        for observer in observers.interested(in: entities) {
            do {
                try read { context in try observer.refresh(context) }
            } catch {
                // The observation goes on: the next change it hears of is computed against the last results it sent,
                // so it catches up then.
                options.logger.error("observation refresh failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
