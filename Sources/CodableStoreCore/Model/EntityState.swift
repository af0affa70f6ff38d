/// The tracking state of one entity object: which context holds it, which row it is, what changed.
///
/// Every entity owns one (``Entity()`` declares it). It is the only mutable state the runtime adds to your
/// objects, and it is touched only by the context that holds the object.
public final class EntityState {
    /// Where the object stands relative to its store.
    public enum Status: Sendable {
        /// Created, not inserted into any context.
        case transient
        /// Inserted into a context, not yet written.
        case inserted
        /// Stored in a row.
        case persistent
        /// Deleted in its context.
        case deleted
    }

    public init() {}

    /// The context holding the object, while that context is alive.
    public internal(set) var context: Context? {
        get { holdingContext }
        set { holdingContext = newValue }
    }
    /// Where the object stands.
    public internal(set) var status: Status {
        @inlinable get { uncheckedStatus }
        set { uncheckedStatus = newValue }
    }
    /// The row id (the `_pk` column): assigned on insert, before anything is written. 0 while transient.
    public internal(set) var rowID: Int64 {
        get { uncheckedRowID }
        set { uncheckedRowID = newValue }
    }
    /// Fields assigned a different value since the object was last written.
    public internal(set) var changedFields: FieldSet {
        @inlinable get { uncheckedChangedFields }
        set { uncheckedChangedFields = newValue }
    }
    /// Relationships not loaded yet: read from the store on first access.
    public internal(set) var unloadedRelationships: FieldSet {
        get { uncheckedUnloadedRelationships }
        set { uncheckedUnloadedRelationships = newValue }
    }

    // The stored properties opt out of run-time exclusivity checks, as the context's collections do (see
    // Context.registries): every decoded value updates them, and only the holding context's thread does. Without
    // the opt-outs, the checks cost 539 M instructions on the 100k import's decoding thread (+15%, callgrind). Those
    // behind the public properties above are internal, so that no public declaration opts out.

    // The stored properties are in an order that leaves no padding a field could use: Swift lays out a class's
    // stored properties in declaration order, and every object of every entity has one of these. In this order an
    // instance is 136 bytes, a 144-byte block of memory; in the order of their topics (with an `Int` entity index)
    // it was 169 bytes, a 176-byte block: 32 bytes more for every object a context holds.

    /// The storage of ``context``. `unowned(unsafe)` rather than `weak` or `unowned`, which reference-count every
    /// read and assignment (callgrind, `unowned`: about 27 M instructions of unowned reference counting on the 100k
    /// import's decoding thread, 0.75%, besides a release per read). It is safe because a context clears this
    /// property on every object it ever held (registered or deleted) when its closure ends, before the context
    /// itself can go away.
    @exclusivity(unchecked) unowned(unsafe) var holdingContext: Context?
    /// The storage of ``rowID``.
    @exclusivity(unchecked) var uncheckedRowID: Int64 = 0
    /// The storage of ``changedFields``.
    @usableFromInline @exclusivity(unchecked) var uncheckedChangedFields = FieldSet()
    /// The storage of ``unloadedRelationships``.
    @exclusivity(unchecked) var uncheckedUnloadedRelationships = FieldSet()
    /// The stored values of a stored object's attributes, recorded when each first changed after the last
    /// write: a save compares with them, so that a value set back to what is stored (page A, then page B
    /// again) writes nothing.
    @usableFromInline @exclusivity(unchecked) var storedValues: [Int: DatabaseValue]?
    /// The stored members (row ids, in order) of a stored object's to-many relationships, recorded when each first
    /// changed after the last write: a list set back to them (in the same order, for an ordered one) writes no links
    /// and no positions, and does not count as a change.
    @exclusivity(unchecked) var storedMembers: [Int: [Int64]]?
    /// To-one foreign keys of unloaded relationships, by field index.
    @exclusivity(unchecked) var foreignKeys = ForeignKeys()
    /// Changes made to the object in memory (attributes, relationships, links from either side), counted so that a
    /// stamp stays the object's only while nothing changed it after it was stamped (see ``RowStamps``).
    @exclusivity(unchecked) var changeCount: UInt32 = 0
    /// The stamp last given to the object, to write with the object's row; valid while
    /// ``changeCount`` is ``stampChangeCount``.
    @exclusivity(unchecked) var pendingStamp: Int64?
    /// Whether the object is in its context's list of updated objects.
    @exclusivity(unchecked) var isScheduledForUpdate = false
    /// Whether an identity attribute was ever assigned a new value: until then, the identity the context
    /// indexed the object under is still its identity, and lookups need not recompute it.
    @exclusivity(unchecked) var identityMayHaveChanged = false
    /// The storage of ``status``.
    @usableFromInline @exclusivity(unchecked) var uncheckedStatus: Status = .transient
    /// ``changeCount`` when the object was given ``pendingStamp`` (decoded from a record that had it).
    @exclusivity(unchecked) var stampChangeCount: UInt32 = 0
    /// The stamp of the object's row (its `_digest` column), when known (``storedStampIsKnown``): read with it, or written.
    @exclusivity(unchecked) var storedStamp: Int64?
    @exclusivity(unchecked) var storedStampIsKnown = false
    /// The storage of ``entityIndex``: 32 bits, which fill the end of the instance.
    @exclusivity(unchecked) private var storedEntityIndex: Int32 = -1

    /// The entity's index in the store model.
    var entityIndex: Int {
        @inline(__always) get { Int(storedEntityIndex) }
        @inline(__always) set { storedEntityIndex = Int32(truncatingIfNeeded: newValue) }
    }

    /// The stamp to write with the object's row: the pending one if nothing changed the object since, else none.
    var stampToWrite: Int64? { changeCount == stampChangeCount ? pendingStamp : nil }

    /// Whether the object is stored or inserted and has unsaved changes.
    public var hasChanges: Bool { status == .inserted || status == .deleted || !changedFields.isEmpty }
}

extension EntityState {
    /// Records an attribute change from `old`, the value before it (see ``storedValues``).
    @inlinable
    func didChange(_ object: some EntityObject, _ field: Int, from old: @autoclosure () -> DatabaseValue) {
        recordStoredValue(field, old())
        didChange(object, field)
    }

    /// Keeps `stored` as the stored value of `field` when the field is about to change for the first time since
    /// the last write of a stored object (see ``storedValues``).
    @inlinable
    func recordStoredValue(_ field: Int, _ stored: @autoclosure () -> DatabaseValue) {
        guard status == .persistent, !changedFields.contains(field) else { return }
        // Room for a record's worth of changes at once: an update changes several fields.
        if storedValues == nil { storedValues = Dictionary(minimumCapacity: 8) }
        storedValues![field] = stored()
    }

    /// Keeps `members` (their row ids) as the stored members of the to-many `field` when it is about to change for the
    /// first time since the last write of a stored object (see ``storedMembers``): whether it changes through itself,
    /// through its inverse (an item's `owner` set moves it into the owner's `items`), or is loaded with changes not
    /// written yet.
    func recordStoredMembers(_ field: Int, _ members: @autoclosure () -> [any EntityObject]) {
        guard status == .persistent, !changedFields.contains(field) else { return }
        if storedMembers == nil { storedMembers = [:] }
        storedMembers![field] = members().map(\.entityState.rowID)
    }

    /// Records an attribute change: in the context if the object has one.
    @usableFromInline
    func didChange(_ object: some EntityObject, _ field: Int) {
        if let context {
            context.markChanged(object, self, field)
        } else {
            changedFields.insert(field)
            changeCount &+= 1
        }
    }
}

/// To-one foreign keys by field index, for relationships not loaded yet.
///
/// Every object read from the store with a to-one relationship has one, and a dictionary per object was an
/// allocation (and a free) per row an import looked up. Most entities have at most one to-one: its key is stored
/// inline (16 bytes), any more in a dictionary. A field is in one place at most.
struct ForeignKeys {
    // In this order 20 bytes, not 24: the entity state's next field fills the rest.
    private var key: Int64 = 0
    private var more: [Int: Int64]?
    private var field: Int32 = -1

    subscript(field: Int) -> Int64? {
        get {
            if Int(self.field) == field { return key }
            return more?[field]
        }
        set {
            if Int(self.field) == field {
                if let newValue { key = newValue } else { self.field = -1 }
            } else if newValue == nil || more?[field] != nil {
                more?[field] = newValue
            } else if self.field < 0, let newValue, let narrow = Int32(exactly: field) {
                (self.field, key) = (narrow, newValue)
            } else {
                if more == nil { more = [:] }
                more![field] = newValue
            }
        }
    }
}

extension EntityState {
    // What the import's retention reads and writes for every object between two batches. Through accessors of the
    // core: a stored property's opt-out of run-time exclusivity checks covers its own module's accesses only, and
    // the import's direct accesses cost 130 M instructions of the decoding thread's 3.8 G (callgrind, 100k import).

    /// The index of the object's entity in the model.
    package var entityOfObject: Int { entityIndex }
    /// Whether `context` holds the object, not deleted.
    package func isLive(in context: Context) -> Bool { self.context === context && status != .deleted }
}
