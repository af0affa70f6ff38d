/// A class whose instances the store tracks: the protocol the runtime depends on.
///
/// ``Entity()`` generates the conformance. A class can also conform by hand: declare its schema with an
/// ``EntityDescriptionBuilder``, own an ``EntityState``, create itself from a row in `init(row:)`, and route
/// field assignments through the tracking helpers so that changes are recorded:
///
/// ```swift
/// final class Note: EntityObject {
///     let entityState = EntityState()
///     private var _id: Int
///     private var _text: String
///     var id: Int {
///         get { _id }
///         set { _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 } }
///     }
///     var text: String {
///         get { _text }
///         set { _$EntityAccess.set(self, 1, _text, newValue) { $0._text = $1 } }
///     }
///     static let entityDescription: EntityDescription = {
///         var builder = EntityDescriptionBuilder<Note>(name: "Note")
///         builder.field("id", \Note.id, as: Int.self, get: { $0._id }, set: { $0._id = $1 })
///         builder.field("text", \Note.text, as: String.self, get: { $0._text }, set: { $0._text = $1 })
///         return builder.build(identity: Identity(\Note.id))
///     }()
///     init(id: Int, text: String) { _id = id; _text = text }
///     init(row: EntityRow) throws { _id = try row.value(0, as: Int.self); _text = try row.value(1, as: String.self) }
/// }
/// ```
///
/// Entities are reference types compared by identity (`===`), which also makes them usable in `Set`s: two
/// objects are the same entity instance only if they are the same object. Within one ``Context`` there is one
/// object per stored row.
public protocol EntityObject: AnyObject, Hashable, SendableMetatype {
    /// The schema: fields, relationships and identity. Built once per type.
    static var entityDescription: EntityDescription { get }
    /// The object's tracking state: its context, row, and changed fields. The same object for the entity's whole
    /// life, held by the object: declare it as a stored `let` (as ``Entity()`` does). The store reads it once per
    /// object and keeps it beside the object without a reference of its own.
    var entityState: EntityState { get }
    /// Creates an object from a stored row, without calling the user's initializers.
    init(row: EntityRow) throws
}

extension EntityObject {
    /// Runs `body` with the object's state (one read of ``entityState``, a retain and a release). Paths taken for
    /// every object of an import take it from a `TrackedObject` instead. Inlinable: a closure the caller cannot see
    /// into makes every access it makes to its own properties a dynamic exclusivity check (callgrind, 100k import:
    /// 130 M instructions of the decoding thread's 3.9 G).
    @inlinable @inline(__always)
    package func withEntityState<Result>(_ body: (EntityState) throws -> Result) rethrows -> Result {
        try body(entityState)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The attributes that identify an entity: the key of upserts.
///
/// ```swift
/// static let identity = Identity(\Person.id)                           // single
/// static let identity = Identity(\Membership.teamID, \Membership.userID)   // composite
/// ```
/// An entity without identity is always inserted. The store keeps a UNIQUE index over the identity columns.
/// Identities are attributes: a relationship cannot be part of one (a store refuses the model); keep the related
/// object's id in an attribute of its own (its JSON key can be a key path, `"team.id"`) to identify by it.
///
/// APIs that send an id as a number in some payloads and as a string in others (`"id": 10` here, `"id": "10"`
/// there) are met with a `String` identity that reads numbers as their digits:
///
/// ```swift
/// static let identity = Identity(\Owner.id, numbersAsText: true)   // 10 and "10" are one owner, "10"
/// ```
/// Without it, a number where a `String` is declared is a type mismatch, as with `JSONDecoder`.
public struct Identity<Root: AnyObject>: @unchecked Sendable, ExpressibleByArrayLiteral {
    // Key paths are immutable once formed; @unchecked because `PartialKeyPath` does not declare Sendable.
    public let keyPaths: [PartialKeyPath<Root>]
    /// Whether the identity's `String` attributes take a JSON number as its text (`10` is `"10"`, `1.50` is
    /// `"1.50"`); its other attributes decode as always.
    public let readsNumbersAsText: Bool

    public init(_ keyPaths: PartialKeyPath<Root>..., numbersAsText: Bool = false) {
        self.keyPaths = keyPaths
        self.readsNumbersAsText = numbersAsText
    }

    public init(arrayLiteral elements: PartialKeyPath<Root>...) {
        self.keyPaths = elements
        self.readsNumbersAsText = false
    }
}

/// An index over attributes, for queries that filter or sort by them.
///
/// ```swift
/// static let indexes: [EntityIndex<Issue>] = [EntityIndex(\.state), EntityIndex(\.user, \.number, unique: true)]
/// ```
/// The identity has its own UNIQUE index already. New indexes are created when the store opens; indexes
/// no longer declared are dropped.
public struct EntityIndex<Root: AnyObject>: @unchecked Sendable {
    // @unchecked: key paths are immutable once formed; `PartialKeyPath` does not declare Sendable.
    public let keyPaths: [PartialKeyPath<Root>]
    public let isUnique: Bool

    public init(_ keyPaths: PartialKeyPath<Root>..., unique: Bool = false) {
        self.keyPaths = keyPaths
        self.isUnique = unique
    }
}

/// Two relationships that are each other's inverse, declared where the store cannot tell by itself.
///
/// The store pairs a relationship `A.r → B` with `B.s → A` when each is the only relationship of its entity
/// pointing at the other. When an entity has several relationships to the same destination, declare the
/// pairs; the relationships left undeclared are then paired by the same rule among themselves:
///
/// ```swift
/// @Entity final class Issue {
///     var author: User?
///     var assignee: User?
///     static let inverses = [Inverse(\Issue.author, \User.authored)]   // assignee ↔ assigned is found
/// }
/// @Entity final class User {
///     var authored: Set<Issue>
///     var assigned: Set<Issue>
/// }
/// ```
/// Declaring a pair on one side is enough; declaring it on both sides is allowed if they agree. Inverses are
/// kept consistent in memory (setting `issue.author` adds the issue to `user.authored`) and share storage:
/// a to-many whose inverse is a to-one is stored by that foreign key, a many-to-many pair by one join table.
public struct Inverse<Root: AnyObject>: @unchecked Sendable {
    // @unchecked: key paths are immutable once formed; `AnyKeyPath` does not declare Sendable.
    public let keyPath: PartialKeyPath<Root>
    public let inverse: AnyKeyPath
    /// The entity the inverse belongs to.
    public let destination: any EntityObject.Type

    public init<Destination: EntityObject>(_ keyPath: PartialKeyPath<Root>, _ inverse: PartialKeyPath<Destination>) {
        self.keyPath = keyPath
        self.inverse = inverse
        self.destination = Destination.self
    }
}

/// What deleting an object does to the objects one of its relationships reaches.
public enum RelationshipDeleteRule: Sendable, Equatable {
    /// The relationship is cleared on both sides, and the destinations stay (the default).
    case nullify
    /// The destinations are deleted too, with their own delete rules.
    case cascade
    /// The delete fails while the relationship has a destination: nothing is deleted.
    case deny
}

/// Declares the delete rule of a relationship; undeclared relationships nullify. Declared in
/// `static let deleteRules`, which ``Entity()`` reads by name:
///
/// ```swift
/// @Entity final class Issue {
///     var comments: [Comment] = []
///     var milestone: Milestone?
///     static let deleteRules: [DeleteRule<Issue>] = [.cascade(\.comments)]
/// }
/// @Entity final class Milestone {
///     var issues: Set<Issue> = []
///     static let deleteRules: [DeleteRule<Milestone>] = [.deny(\.issues)]   // only an empty milestone goes
/// }
/// ```
/// ``Context/delete(_:)`` and ``Context/deleteAll(_:where:)`` apply the rules over chains and cycles: everything a
/// delete would remove is found first, and a `deny` anywhere in it fails the delete before anything changes
/// (``StoreError/Code/deleteDenied``).
public struct DeleteRule<Root: AnyObject>: @unchecked Sendable {
    // @unchecked: key paths are immutable once formed; `AnyKeyPath` does not declare Sendable.
    public let keyPath: PartialKeyPath<Root>
    public let rule: RelationshipDeleteRule

    public init(_ keyPath: PartialKeyPath<Root>, _ rule: RelationshipDeleteRule) {
        self.keyPath = keyPath
        self.rule = rule
    }

    /// Deleting the object deletes the relationship's destinations.
    public static func cascade(_ keyPath: PartialKeyPath<Root>) -> DeleteRule { DeleteRule(keyPath, .cascade) }
    /// Deleting the object fails while the relationship has a destination.
    public static func deny(_ keyPath: PartialKeyPath<Root>) -> DeleteRule { DeleteRule(keyPath, .deny) }
    /// Deleting the object clears the relationship (what every relationship does unless declared otherwise).
    public static func nullify(_ keyPath: PartialKeyPath<Root>) -> DeleteRule { DeleteRule(keyPath, .nullify) }
}

/// An object with its state, read once: what the core keeps of an object it tracks (the identity index, the objects a
/// save writes, an import's batches) and hands along.
///
/// A read of ``EntityObject/entityState`` through the protocol is a call, a retain and a release (two atomic
/// operations); an import of 100k records made 3.4 M of them, +3.6% of its decoding thread's instructions, and passing
/// a strong state along costs as much (every copy that is stored or returned is a retain). So the state is held
/// unretained: the object holds its state in a `let` (what the protocol asks), and this struct holds the object, so
/// the state lives at least as long as the struct. ``withState(_:)`` lends it without reference counting.
package struct TrackedObject {
    package let object: any EntityObject
    private let stateReference: Unmanaged<EntityState>

    /// `state` must be `object.entityState`, read by the caller (checked in debug builds).
    @inline(__always)
    package init(_ object: any EntityObject, _ state: EntityState) {
        assert(object.entityState === state, "the state of another object, or an entityState that is not a stored let")
        self.object = object
        self.stateReference = Unmanaged.passUnretained(state)
    }

    @inline(__always)
    package init(_ object: any EntityObject) {
        self.init(object, object.entityState)
    }

    /// The object's state, retained: for paths that are not taken for every object of an import.
    package var state: EntityState { stateReference.takeUnretainedValue() }

    /// Runs `body` with the object's state, borrowed: `body` must not keep it beyond the call.
    @inline(__always)
    package func withState<Result>(_ body: (EntityState) throws -> Result) rethrows -> Result {
        try stateReference._withUnsafeGuaranteedRef(body)
    }
}

/// Objects with their states, unretained as in ``TrackedObject``, as two arrays: what the import keeps of the
/// objects a batch used, and hands the context when it lets objects go (``Context/evict(_:keeping:)``). Its loops read
/// `objects[i]` and `states[i]` themselves, with the standard library's inlinable `Unmanaged`: a module outside the
/// core cannot inline ``TrackedObject``'s package functions, and with arrays of it the 100k import's decoding thread
/// ran 0.9% more instructions.
package struct TrackedObjects {
    package private(set) var objects: [any EntityObject] = []
    /// `states[i]` is the state of `objects[i]`, unretained (`objects` holds the object, the object its state).
    package private(set) var states: [Unmanaged<EntityState>] = []

    package init(minimumCapacity: Int = 0) {
        objects.reserveCapacity(minimumCapacity)
        states.reserveCapacity(minimumCapacity)
    }

    package var count: Int { objects.count }

    /// Adds `object`, whose state is `state` (`object.entityState`, read by the caller).
    package mutating func append(_ object: any EntityObject, _ state: EntityState) {
        assert(object.entityState === state, "the state of another object, or an entityState that is not a stored let")
        objects.append(object)
        states.append(Unmanaged.passUnretained(state))
    }
}

extension Array where Element == TrackedObject {
    /// Calls `body` with each object and its state, borrowed (see `forEachBorrowed` of an array of objects).
    @inline(__always)
    package func forEachBorrowed(_ body: (any EntityObject, EntityState) -> Void) {
        withUnsafeBufferPointer { tracked in
            for position in tracked.indices { tracked[position].withState { body(tracked[position].object, $0) } }
        }
    }
}

extension Array where Element == any EntityObject {
    /// Calls `body` with each object, borrowed: a `for` loop copies each element out of the array, a retain and a
    /// release (two atomic operations) per object, on paths an import takes for every object of every batch.
    /// `body` must not keep the object beyond the call, nor change the array. It cannot throw: an error thrown out
    /// of `withUnsafeBufferPointer` in a `rethrows` function crashed debug builds (Swift 6.3).
    @inline(__always)
    func forEachBorrowed(_ body: (any EntityObject) -> Void) {
        withUnsafeBufferPointer { objects in
            for position in objects.indices { body(objects[position]) }
        }
    }
}
