import Synchronization

/// A row as a `Sendable` value: what observations hand across tasks.
///
/// Values are keyed by field name, as stored (attributes, and to-one relationships as the destination's row
/// id). Read them with ``subscript(_:)``.
public struct EntitySnapshot: Sendable, Hashable {
    /// The entity name.
    public let entity: String
    /// The row id (`_pk`).
    public let rowID: Int64
    /// Stored values by field name.
    public let values: [String: SQLiteValue]

    /// The stored value of a field, or nil if the entity has no such stored field.
    public subscript(_ field: String) -> SQLiteValue? { values[field] }
}

/// The results of an observed query after one committed transaction, with what changed since the previous
/// results.
public struct QueryChange: Sendable, Equatable {
    /// The current results, in the query's order.
    public let rows: [EntitySnapshot]
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

    init(previous: [EntitySnapshot], current: [EntitySnapshot]) {
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
public typealias QueryObservation = AsyncStream<QueryChange>

/// The store's observers.
final class ObserverRegistry: Sendable {
    final class Observer: Sendable {
        let entities: Set<Int>
        let evaluate: @Sendable (Context) throws -> [EntitySnapshot]
        let continuation: AsyncStream<QueryChange>.Continuation
        /// The results last sent.
        let previous: Mutex<[EntitySnapshot]>

        init(
            entities: Set<Int>, evaluate: @escaping @Sendable (Context) throws -> [EntitySnapshot],
            continuation: AsyncStream<QueryChange>.Continuation, previous: [EntitySnapshot]
        ) {
            self.entities = entities
            self.evaluate = evaluate
            self.continuation = continuation
            self.previous = Mutex(previous)
        }
    }

    private let observers = Mutex<[Int: Observer]>([:])
    private let nextID = Mutex(0)

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
}

extension Store {
    /// Observes a query: the current results first, then the results after every committed transaction that
    /// touches the entities involved (the queried one and those reached with ``Predicate/through(_:_:)``),
    /// with the inserted, deleted, updated and moved rows. One element per transaction.
    ///
    /// ```swift
    /// for await change in store.observe(Issue.self, where: \.state == "open", orderBy: [.ascending(\.number)]) {
    ///     render(change.rows, inserted: change.inserted)
    /// }
    /// ```
    /// If the query fails (an invalid key path), the sequence ends.
    public func observe<T: EntityObject>(
        _ type: T.Type, where predicate: Predicate<T>? = nil, orderBy sort: [Sort<T>] = []
    ) -> QueryObservation {
        let (stream, continuation) = AsyncStream<QueryChange>.makeStream(bufferingPolicy: .unbounded)
        let evaluate: @Sendable (Context) throws -> [EntitySnapshot] = { context in
            try context.fetchSnapshots(T.self, where: predicate, orderBy: sort)
        }
        guard let root = try? model.mapping(for: T.self), let initial = try? read(evaluate) else {
            continuation.finish()
            return stream
        }
        var entities: Set<Int> = [root.index]
        for joined in predicate?.joinedEntities ?? [] {
            if let mapping = try? model.mapping(for: joined) { entities.insert(mapping.index) }
        }
        let id = observers.add(
            ObserverRegistry.Observer(entities: entities, evaluate: evaluate, continuation: continuation, previous: initial))
        continuation.yield(QueryChange(previous: [], current: initial))
        let registry = observers
        continuation.onTermination = { _ in registry.remove(id) }
        return stream
    }

    /// Observes one object by its identity: its snapshot (or none) first, then after every committed
    /// transaction that touches its entity.
    public func observe<T: EntityObject, V: AttributeValue>(_ type: T.Type, identity value: V) -> QueryObservation {
        guard let mapping = try? model.mapping(for: T.self), mapping.identityColumns.count == 1 else {
            let (stream, continuation) = AsyncStream<QueryChange>.makeStream()
            continuation.finish()
            return stream
        }
        return observe(T.self, where: .sql("\(quoteIdentifier(mapping.identityColumns[0])) = ?", [value.sqliteValue]))
    }

    /// Tells the observers of these entities about a committed transaction.
    func notifyObservers(_ entities: Set<Int>) {
        guard !entities.isEmpty, !observers.isEmpty else { return }
        for observer in observers.interested(in: entities) {
            guard let current = try? read(observer.evaluate) else { continue }
            let change = observer.previous.withLock { previous in
                defer { previous = current }
                return QueryChange(previous: previous, current: current)
            }
            observer.continuation.yield(change)
        }
    }
}
