/// A scope of work on the store: one object per row (the identity map), change tracking, and `save()`.
///
/// You get a context inside ``Store/write(_:)-2mz68`` or ``Store/read(_:)-mvnk``; it and
/// its objects live inside that closure and are not `Sendable`. Pass identities or ``EntityState/rowID``s
/// across closures, not objects.
///
/// ```swift
/// try store.write { context in
///     let person = Person(id: 1, name: "Ada")
///     try context.insert(person)
///     person.name = "Ada Lovelace"        // tracked: only `name` will be written
/// }                                        // saved and committed here
/// ```
///
/// A write context writes its pending changes (flushes) before every query it runs, inside the write
/// transaction, so fetches, counts and relationship loads always see what you changed, and nothing is
/// visible to other connections before the transaction commits.
public final class Context {
    /// The connection. Use ``connection`` instead, or ``withSharedConnection(_:)`` for lookups and loads.
    let storeConnection: any DatabaseConnection
    /// While set (an import under the stop policy), saves hand their plans to this writer thread instead of
    /// writing them, and it is told of every object the context uses (see ``DeferredWriter``). Internal: read for
    /// every object used, and a property other modules may access is checked for exclusive access at run time; the
    /// import sets it through ``writeBehind``.
    var deferredWriter: (any DeferredWriter)?
    /// The writer thread saves hand their plans to (see ``deferredWriter``).
    package var writeBehind: (any DeferredWriter)? {
        get { deferredWriter }
        set { deferredWriter = newValue }
    }
    /// False while the connection runs without foreign keys (an import turns them off, see `Importer`): whatever
    /// deletes rows then clears the links and foreign keys that refer to them, as the keys' `ON DELETE` actions would.
    package var enforcesForeignKeys = true
    /// The most parameters a statement takes (read once: saves ask for it, and must not wait for the writer).
    let maximumVariableCount: Int

    /// The connection, for queries: while a writer thread runs, only once it has written every plan handed to
    /// it, so that the query sees all the context's changes. (Its error, if any, is thrown by the next save.)
    package var connection: any DatabaseConnection {
        if let deferredWriter {
            precondition(!isSharingConnection, "waiting for the writer thread while holding the shared connection")
            deferredWriter.waitUntilIdle()
        }
        return storeConnection
    }

    /// Runs a lookup or a load on the connection without waiting for the plans handed to a writer thread (which
    /// then runs it between two of its statements): correct only for rows no waiting plan writes, see
    /// ``DeferredWriter``.
    func withSharedConnection<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        guard let deferredWriter, !isSharingConnection else { return try body(storeConnection) }
        isSharingConnection = true
        defer { isSharingConnection = false }
        return try deferredWriter.withConnection { try body(storeConnection) }
    }
    /// Tells a writer thread, if any, that `object` (whose state is `state`) was used (see
    /// ``DeferredWriter/didUse(_:_:)``).
    @inline(__always)
    func noteUse(_ object: any EntityObject, _ state: EntityState) {
        if let deferredWriter { deferredWriter.didUse(object, state) }
    }

    /// Whether a ``withSharedConnection(_:)`` body is running (it nests: the decoder's hold across a batch's
    /// lookups runs each of them inside it, on the same thread).
    private(set) var isSharingConnection = false
    package let model: Schema
    /// The backend that runs the context's write plans, lookups and queries.
    let storage: SQLStorage
    /// Whether inserts, deletes and saves are refused.
    public let isReadOnly: Bool

    // The collections below are mutated on every decoded value, and as stored properties of a class each access
    // pays a dynamic exclusivity check (swift_beginAccess) unless it opts out. A context is used by one thread at a
    // time and no mutation of these calls out to code that touches them again, so they opt out of the run-time
    // check (the compile-time checks still apply). Measured with callgrind without these opt-outs and those of
    // the identity index and filter: the 100k import's decoding thread ran 10.1% more instructions, a 20k decode
    // 3.3% and a 100k insert 6.3%.

    /// Registered objects by entity, by row id. Strong references: the context keeps its objects alive.
    @exclusivity(unchecked) var registries: [[IntegerKey: any EntityObject]]
    @exclusivity(unchecked) var insertedObjects: [TrackedObject] = []
    @exclusivity(unchecked) var updatedObjects: [TrackedObject] = []
    var deletedObjects: [(entity: Int, rowID: Int64)] = []
    /// Objects inserted and deleted again before a save: their rows are never written, nor are links to them.
    var discardedInsertions: [(entity: Int, rowID: Int64)] = []
    /// How many ``inSavepoint(_:)`` calls are running (``rollback()`` cannot run inside one).
    var savepointDepth = 0
    /// While what flushes wrote since the last save is in a savepoint of its own (see `Context+Rollback.swift`): the
    /// ``savepointDepth`` it was opened at.
    var unsavedWritesMark: Int?
    /// The context's bookkeeping at the last save, which ``rollback()`` goes back to.
    var lastSave = SavedBookkeeping()
    /// Objects deleted in this context, kept so that `invalidate()` can detach them too.
    var detachedObjects: [any EntityObject] = []
    @exclusivity(unchecked) private var lastInsertedType: ObjectIdentifier?
    @exclusivity(unchecked) private var lastInsertedEntity = -1
    @exclusivity(unchecked) var linkChanges: [LinkChange] = []
    /// Owners whose ordered join-table list is back at its stored members: their link changes are not written
    /// (filled while a save plans its updates, used when it plans its links).
    var unchangedLinkOwners: Set<UnchangedLinkOwner> = []
    /// The stamps the updates of the save being written set (NULL as nil), taken as stored once it is written.
    @exclusivity(unchecked) var updatedStamps: [(EntityState, Int64?)] = []
    /// The entities whose rows imports gave stamps, once read (see `stampedEntities()`).
    package var stampedEntityIndexes: Set<Int>?
    /// Row ids by identity of the batch's records that are stored as they would write them (see `takeUnchangedRow`).
    @exclusivity(unchecked) var unchangedRows: [IdentityKey: Int64] = [:]
    /// Records an import skipped as unchanged (see `takeUnchangedRow`).
    @exclusivity(unchecked) package var unchangedRecordsSkipped = 0
    /// The entity of ``unchangedRows`` (-1 while it is empty).
    @exclusivity(unchecked) var unchangedRowsEntity = -1
    struct UnchangedLinkOwner: Hashable {
        let table: Int
        let source: Int64
    }
    /// Deferred references by destination entity and identity (see `Context+DeferredReferences.swift`).
    var pendingReferences: [Int: [IdentityKey: [PendingReference]]] = [:]
    @exclusivity(unchecked) package var pendingReferenceCount = 0
    /// How many references were deferred so far: the next one's ``PendingReference/sequence``.
    @exclusivity(unchecked) var deferredReferenceSequence = 0
    /// Deferred references whose destination was inserted, linked at the next save.
    var readyReferences: [(destination: any EntityObject, references: [PendingReference])] = []
    /// Whether an identity attribute of an object was changed since the last flush: the store's rows then no
    /// longer answer identity lookups right until they are written (see `lookUp`).
    @exclusivity(unchecked) var hasUnwrittenIdentityChanges = false
    @exclusivity(unchecked) var nextRowIDs: [Int64?]
    /// Where the row ids the database reserved for each entity end (see ``DatabaseConnection/reserveRowIDs(table:)``);
    /// `Int64.max` where new rows follow the table's largest row id.
    @exclusivity(unchecked) var rowIDLimits: [Int64]
    /// Whether the connection reserves row ids (see ``rowIDLimits``).
    let reservesRowIDs: Bool
    /// An error raised where it could not be thrown (a relationship load inside a property getter);
    /// the next save throws it.
    var deferredError: (any Error)?
    /// Identity indexes by entity, created on first use (see `Context+Identity.swift`).
    @exclusivity(unchecked) var identityIndexes: [IdentityIndex?]
    /// Per entity, when set (by an import into a table that was empty), the keys that may be stored (see
    /// ``StoredKeys``): a key it rules out is not stored. Survives ``reset()``.
    @exclusivity(unchecked) package var storedKeys: [(any StoredKeys)?]
    /// Per entity, how many objects were read from the store or written to it since the last reset: when
    /// none were, no object of the entity can have stored to-many memberships to load before a decode
    /// replaces them.
    @exclusivity(unchecked) var materializedCounts: [Int]

    /// A join row a save adds or removes: of join table `table`, from the row `source` to the row `target`.
    package struct LinkChange {
        package let table: Int
        package let source: Int64
        package let target: Int64
        let isLink: Bool
    }


    package init(connection: any DatabaseConnection, storage: SQLStorage, isReadOnly: Bool) {
        self.storeConnection = connection
        self.maximumVariableCount = connection.maximumVariableCount
        self.storage = storage
        let model = storage.model
        self.model = model
        self.isReadOnly = isReadOnly
        self.registries = Array(repeating: [:], count: model.mappings.count)
        self.nextRowIDs = Array(repeating: nil, count: model.mappings.count)
        self.rowIDLimits = Array(repeating: .max, count: model.mappings.count)
        self.reservesRowIDs = connection.reservesRowIDs
        self.identityIndexes = Array(repeating: nil, count: model.mappings.count)
        self.storedKeys = Array(repeating: nil, count: model.mappings.count)
        self.materializedCounts = Array(repeating: 0, count: model.mappings.count)
    }

    /// Whether there are changes not yet written.
    public var hasChanges: Bool {
        !insertedObjects.isEmpty || !updatedObjects.isEmpty || !deletedObjects.isEmpty || !linkChanges.isEmpty
    }

    /// The number of objects the context holds.
    public var registeredObjectCount: Int { registries.reduce(0) { $0 + $1.count } }

    /// Rows written by this context's saves, per entity index: inserted, and updated (changed columns or
    /// memberships). The importer reports them.
    @exclusivity(unchecked) package var writeCounts: [Int: (inserted: Int, updated: Int)] = [:]
    /// Entities (by index) whose rows this context's saves changed: what observers of the store are told.
    @exclusivity(unchecked) var touchedEntities = Set<Int>()

    /// Forgets every object the context holds, and every change not yet saved: what the importer does
    /// between batches (after a save, to keep memory flat; after a rolled-back batch, to start over).
    package func reset() {
        readyReferences = []  // their objects go; deferred references themselves are kept by row id
        invalidate()
        deletedObjects.removeAll()
        discardedInsertions.removeAll()
        unchangedRows.removeAll()
        unchangedRowsEntity = -1
        deferredError = nil
    }

    /// Lets go of the objects `isKept` rejects, as ``reset()`` lets go of all of them, and keeps the others with
    /// their unsaved changes, looking at every object held: what an import with a writer thread falls back to between
    /// two batches when ``evict(_:keeping:)``, which looks only at the batch's objects, finds an object it was not
    /// told of (see `ObjectRetention`).
    ///
    /// Relationships of a kept object that reach an evicted one become unloaded, as if just read from the store,
    /// so that a relationship of an object used in every batch (a label's issues) does not grow for ever;
    /// relationships among kept objects stay as they are. Identity lookups of evicted objects go to the store again.
    package func evictObjects(keeping isKept: (EntityState) -> Bool) {
        for entity in registries.indices {
            let mapping = model.mappings[entity]
            // Room for as many objects as are registered now: the registry is filled to about as many again, and
            // growing a dictionary rehashes it (a tenth of the hashing of a re-import, counted with callgrind).
            var kept = [IntegerKey: any EntityObject](minimumCapacity: registries[entity].count)
            // Detaching an evicted object changes only its own relationships, and forgetting changes only the kept
            // object's: one pass does both, reading each state once.
            for (rowID, object) in registries[entity] {
                let state = object.entityState
                if isKept(state) {
                    kept[rowID] = object
                    if mapping.hasRelationships { unloadRelationships(object, state, mapping) { !isKept($0) } }
                } else {
                    detach(object, state, mapping)
                }
            }
            registries[entity] = kept
            // Only the kept objects answer from memory now; every other key goes to the store again.
            reindex(entity)
        }
        for object in detachedObjects {
            if let mapping = try? model.mapping(of: object) { detach(object, mapping) }
        }
        detachedObjects = []
    }

    /// Makes the relationships of `object` that reach an object `isGone` accepts unloaded, as if just read from the
    /// store: those of a kept object that reach an evicted one (see ``evict(_:keeping:)``), or all of those of
    /// an object an import retains (see ``prepareForRetention(_:_:)``). A to-one stored as a foreign key keeps it.
    /// With `destinations`, only relationships to the entities it marks are looked at (no object of the others is gone).
    private func unloadRelationships(
        _ object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, destinations: [Bool]? = nil,
        reaching isGone: (EntityState) -> Bool
    ) {
        mapping.forEachRelationship { relationship in
            let field = relationship.description.index
            if state.unloadedRelationships.contains(field) { return }
            if let destinations, !destinations[relationship.destination] { return }
            if relationship.description.isToMany {
                let members = relationship.description.getMany(object)
                if !members.contains(where: { $0.withEntityState(isGone) }) { return }
                relationship.description.setMany(object, [])
            } else {
                guard let destination = relationship.description.getOne(object), destination.withEntityState(isGone)
                else { return }
                if case .foreignKey = relationship.storage { state.foreignKeys[field] = destination.withEntityState { $0.rowID } }
                relationship.description.setOne(object, nil)
            }
            state.unloadedRelationships.insert(field)
        }
    }

    /// Makes the identity index of `entity` (if it has one) answer for the objects registered now, and for no other
    /// key: every other lookup goes to the store.
    private func reindex(_ entity: Int) {
        guard let index = identityIndexes[entity] else { return }
        let mapping = model.mappings[entity]
        index.entries = IdentityIndex.Table(roomFor: index.entries.count, like: index.entries)
        index.isComplete = false
        guard !mapping.identityColumns.isEmpty else { return }
        for object in registries[entity].values {
            index.entries[identityKey(of: object, mapping)] = .object(TrackedObject(object))
        }
    }

    /// The object of `state` if this context still holds it (not deleted, nor let go).
    package func heldObject(_ state: EntityState) -> (any EntityObject)? {
        guard state.context === self, let object = registries[state.entityIndex][state.rowID], object.entityState === state
        else { return nil }
        return object
    }

    /// Readies an object an import keeps beyond the batches that used it (see `ObjectRetention`): one with no unsaved
    /// change has its relationships unloaded, so that it reaches no other object (relationships that are empty or nil
    /// reach none, and stay as they are). Returns false, changing nothing, for an object with unsaved changes, which
    /// must not be retained.
    package func prepareForRetention(_ object: any EntityObject, _ state: EntityState) -> Bool {
        guard state.status == .persistent, state.changedFields.isEmpty, !state.isScheduledForUpdate else { return false }
        let mapping = model.mappings[state.entityIndex]
        if mapping.hasRelationships { unloadRelationships(object, state, mapping) { _ in true } }
        return true
    }

    /// Lets go of `evicted` and keeps every other object: what an import does between two batches while it retains
    /// objects (see `ObjectRetention`), at the cost of what the batch used rather than of every object held
    /// (``evictObjects(keeping:)``).
    ///
    /// The caller guarantees that no object held but not in `kept` (the objects used in the batch) reaches another
    /// object: the relationships of `kept` objects that reach one no longer held are unloaded, as
    /// ``evictObjects(keeping:)`` does, and no other object is looked at. Identity lookups of evicted objects, and of
    /// keys marked missing since the last eviction, go to the store again.
    package func evict(_ evicted: TrackedObjects, keeping kept: TrackedObjects) {
        var rebuilds: [Int] = []
        // The entities with an object gone: only relationships to them can reach one (an object evicted before
        // was unloaded then from every relationship of the objects kept, and retained objects reach nothing).
        var gone = Array(repeating: false, count: model.mappings.count)
        // Borrowed, as everything an eviction reads per object: `evicted` keeps the objects alive.
        for position in evicted.states.indices {
            evicted.states[position]._withUnsafeGuaranteedRef { state in
                model.withMapping(state.entityIndex) { mapping in
                    let object = evicted.objects[position]
                    gone[mapping.index] = true
                    registries[mapping.index][state.rowID] = nil
                    forgetIdentity(of: object, state, mapping, rebuilding: &rebuilds)
                    detach(object, state, mapping)
                }
            }
        }
        for object in detachedObjects {
            guard let mapping = try? model.mapping(of: object) else { continue }
            gone[mapping.index] = true
            forgetIdentity(of: object, object.entityState, mapping, rebuilding: &rebuilds)
            detach(object, mapping)
        }
        detachedObjects = []
        for case let index? in identityIndexes { index.forgetMissingKeys() }
        // An evicted object's identity changed in memory: entries under an older key may point at it.
        for entity in rebuilds { reindex(entity) }
        for position in kept.states.indices {
            kept.states[position]._withUnsafeGuaranteedRef { state in
                guard state.context === self else { return }
                model.withMapping(state.entityIndex) { mapping in
                    if mapping.hasRelationships {
                        unloadRelationships(kept.objects[position], state, mapping, destinations: gone) { $0.context !== self }
                    }
                }
            }
        }
    }

    /// Removes the identity index entry of an object let go, marking its entity's index incomplete.
    private func forgetIdentity(
        of object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, rebuilding rebuilds: inout [Int]
    ) {
        guard let index = identityIndexes[mapping.index] else { return }
        index.isComplete = false
        guard !mapping.identityColumns.isEmpty else { return }
        if state.identityMayHaveChanged {
            if !rebuilds.contains(mapping.index) { rebuilds.append(mapping.index) }
            return
        }
        index.entries.update(identityKey(of: object, mapping)) { entry in
            if case .object(let indexed)? = entry, indexed.object === object { entry = nil }
        }
    }

    /// Detaches every object when the context's closure ends (or the importer moves to its next batch).
    ///
    /// Relationships and their inverses reference each other (an issue its user, the user its issues): left
    /// as they are, such objects would keep each other alive after the context lets them go. So the
    /// relationships of every object are emptied here, which breaks the cycles; a detached object is no
    /// longer part of a graph anyway.
    func invalidate() {
        for (entity, registry) in registries.enumerated() {
            let mapping = model.mappings[entity]
            for object in registry.values {
                detach(object, mapping)
            }
        }
        for object in detachedObjects {
            if let mapping = try? model.mapping(of: object) { detach(object, mapping) }
        }
        detachedObjects = []
        registries = Array(repeating: [:], count: model.mappings.count)
        identityIndexes = Array(repeating: nil, count: model.mappings.count)
        forgetRowIDs()
        materializedCounts = Array(repeating: 0, count: model.mappings.count)
        insertedObjects = []
        updatedObjects = []
        linkChanges = []
        deletedObjects = []
        discardedInsertions = []
    }

    /// Whether the context holds nothing at all, and no import runs on it: only then may a decode change it
    /// optimistically and undo everything with ``inSavepoint(_:)`` (see ``ParallelArrayDecoding``).
    var isPristine: Bool {
        !isReadOnly && deferredWriter == nil && deferredError == nil && !hasChanges && detachedObjects.isEmpty
            && registries.allSatisfy(\.isEmpty) && storedKeys.allSatisfy { $0 == nil }
    }

    /// Runs `body` as a sub-transaction of the write: what it changes is kept when it returns, and undone when it
    /// throws, in the store and in the context, while the write goes on. The error is rethrown.
    ///
    /// ```swift
    /// try store.write { context in
    ///     try context.insert(Person(id: 1, name: "Ada"))
    ///     do {
    ///         try context.inSavepoint { try importOptionalExtras(into: context) }   // may fail alone
    ///     } catch {
    ///         log(error)                                                            // Ada is still written
    ///     }
    /// }
    /// ```
    /// Changes made before the call are saved first, and stay. When `body` throws, the context also forgets every
    /// object it holds (as ``Store/write(_:)-2mz68`` does when it ends): objects you hold are detached, so fetch
    /// what you need again. Savepoints nest.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_savepoint.html>
    /// - Throws: ``StoreError`` for a read-only context; what `body` throws; the store's error.
    public func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        try inSavepoint(savingAtEnd: true, body)
    }

    /// ``inSavepoint(_:)``; without `savingAtEnd`, what `body` leaves unsaved is saved later, outside the
    /// savepoint (the two-thread decode: its errors come at the next save, as a one-thread decode's do).
    func inSavepoint<T>(savingAtEnd: Bool, _ body: () throws -> T) throws -> T {
        if isReadOnly { throw StoreError.readOnly("inSavepoint") }
        precondition(deferredWriter == nil, "a context savepoint while a writer thread writes behind")
        try flush(isSave: true)
        let writeCounts = self.writeCounts
        let touchedEntities = self.touchedEntities
        let materializedCounts = self.materializedCounts
        let storedKeys = self.storedKeys
        let deferred = deferredReferences
        let depth = savepointDepth
        savepointDepth += 1
        defer {
            savepointDepth -= 1
            // Released with the savepoint when `body` returns (what it wrote is saved), or undone with it.
            if let mark = unsavedWritesMark, mark > depth { unsavedWritesMark = nil }
        }
        do {
            return try connection.inSavepoint(named: "codablestore_context") {
                let result = try body()
                if savingAtEnd { try flush(isSave: true) }  // inside: a failure to write rolls back to the savepoint too
                return result
            }
        } catch {
            reset()
            self.writeCounts = writeCounts
            self.touchedEntities = touchedEntities
            self.materializedCounts = materializedCounts
            self.storedKeys = storedKeys
            deferredReferences = deferred
            throw error
        }
    }

    private func detach(_ object: any EntityObject, _ mapping: EntitySchema) {
        detach(object, object.entityState, mapping)
    }

    func detach(_ object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema) {
        state.context = nil
        guard mapping.hasRelationships else { return }
        mapping.forEachRelationship { relationship in relationship.description.setMany(object, []) }
    }

    // MARK: - Insert

    /// Inserts a new object, and the new objects it refers to. It is written on the next save.
    ///
    /// The object gets its row id at once, so relationships to it can be written in any order.
    /// - Throws: ``StoreError`` if the context is read-only, the class is not an entity of the store, or the
    ///   object belongs to another context or was deleted.
    public func insert<T: EntityObject>(_ object: T) throws {
        try insertObject(object)
    }

    func insertObject(_ object: any EntityObject, identity: IdentityKey? = nil) throws {
        let state = object.entityState
        if isReadOnly { throw StoreError.readOnly("insert") }
        if let owner = state.context {
            if owner === self, state.status != .deleted { return }
            if owner !== self {
                throw StoreError(
                    .wrongContext, "\(type(of: object)) object is already held by another context",
                    entity: "\(type(of: object))")
            }
        }
        if state.status == .deleted {
            throw StoreError(.invalidObject, "a deleted \(type(of: object)) object cannot be inserted again", entity: "\(type(of: object))")
        }
        let entity: Int
        let type = ObjectIdentifier(Swift.type(of: object))
        if type == ObjectIdentifier(RuntimeObject.self) {
            // One class for every entity described at run time: the entity is the object's.
            entity = try model.mapping(of: unsafeDowncast(object, to: RuntimeObject.self)).index
        } else if type == lastInsertedType {
            entity = lastInsertedEntity
        } else {
            entity = try model.mapping(for: Swift.type(of: object)).index
            lastInsertedType = type
            lastInsertedEntity = entity
        }
        let mapping = model.mappings[entity]
        try register(inserted: object, state, mapping, identity: identity)
        if !mapping.hasRelationships { return }
        // Relationships assigned before insertion were not tracked: connect them now.
        try mapping.forEachRelationship { relationship in
            guard !relationship.description.isEmpty(object) else { return }
            try connectMembers(relationship.description.getMany(object), of: object, relationship)
        }
    }

    /// Inserts an object the decoder just created with `init(row:)`: new, in no context, with empty
    /// relationships, so none of ``insertObject(_:identity:)``'s checks apply.
    func insertCreated(_ object: any EntityObject, _ mapping: EntitySchema, identity: IdentityKey?) throws -> TrackedObject {
        if isReadOnly { throw StoreError.readOnly("insert") }
        let state = object.entityState
        try register(inserted: object, state, mapping, identity: identity)
        return TrackedObject(object, state)
    }

    private func register(
        inserted object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, identity: IdentityKey?
    ) throws {
        let entity = mapping.index
        let rowID = try nextRowID(for: entity)
        state.context = self
        state.entityIndex = entity
        state.status = .inserted
        state.rowID = rowID
        registries[entity][rowID] = object
        insertedObjects.append(TrackedObject(object, state))  // a writer thread is told of it when it is saved (see flush)
        let index = identityIndexes[entity]
        let filter = storedKeys[entity]
        if index != nil || filter != nil, !mapping.identityColumns.isEmpty {
            let key = identity ?? identityKey(of: object, mapping)
            index?.entries[key] = .object(TrackedObject(object, state))
            filter?.insert(key)
        }
        if pendingReferenceCount > 0 { objectArrived(object, mapping, identity: identity) }
    }

    /// Forgets the next row id of each entity (read again on the next insert), giving reserved ones that were not
    /// used back to the connection.
    func forgetRowIDs() {
        if reservesRowIDs {
            for entity in nextRowIDs.indices {
                guard let next = nextRowIDs[entity], next < rowIDLimits[entity] else { continue }
                storeConnection.returnRowIDs(next..<rowIDLimits[entity], table: model.mappings[entity].name)
            }
            rowIDLimits = Array(repeating: .max, count: model.mappings.count)
        }
        nextRowIDs = Array(repeating: nil, count: model.mappings.count)
    }

    private func nextRowID(for entity: Int) throws -> Int64 {
        if let next = nextRowIDs[entity], next < rowIDLimits[entity] {
            nextRowIDs[entity] = next + 1
            return next
        }
        // A server with writers in parallel hands out row ids in blocks (a statement of its own: no plan handed to
        // a writer thread needs to be written first).
        if reservesRowIDs {
            let table = model.mappings[entity].name
            guard let reserved = try withSharedConnection({ try $0.reserveRowIDs(table: table) }), !reserved.isEmpty else {
                throw StoreError(.unsupported, "the store's database reserved no row ids for \(table)")
            }
            nextRowIDs[entity] = reserved.lowerBound + 1
            rowIDLimits[entity] = reserved.upperBound
            return reserved.lowerBound
        }
        // The write transaction holds the write lock, so no one else inserts until it ends.
        let statement = try connection.cached(storage.largestRowID(model.mappings[entity]))
        _ = try statement.step()
        let next = statement.int64(at: 0) + 1
        statement.reset()
        nextRowIDs[entity] = next + 1
        return next
    }

    // MARK: - Delete

    /// Deletes an object. Relationships that point to it are cleared (to-one set to nil, to-many without it), and
    /// the related objects themselves are kept, unless a ``DeleteRule`` of the entity says otherwise: `cascade`
    /// deletes the destinations too (with their own rules), `deny` fails the delete while the relationship has a
    /// destination that is not deleted with it. Everything the delete reaches is found first, so a denied delete
    /// changes nothing.
    /// - Throws: ``StoreError`` (`deleteDenied`, `wrongContext`, `readOnly`), or the store's error when a
    ///   relationship the rules follow cannot be loaded.
    public func delete<T: EntityObject>(_ object: T) throws {
        try deleteApplyingRules([object])
    }

    /// Deletes `objects` and what their cascade rules reach, after checking every deny rule on the way; returns the
    /// number of objects deleted per entity index. A cascade does not reach objects `isKept` accepts (they stay, and
    /// a deny holds for them); a deny does not hold for objects `alsoDeleted` accepts (the caller deletes them too).
    @discardableResult
    func deleteApplyingRules(
        _ objects: [any EntityObject], keeping isKept: (EntityState) -> Bool = { _ in false },
        alsoDeleted: (EntityState) -> Bool = { _ in false }
    ) throws -> [Int: Int] {
        if isReadOnly { throw StoreError.readOnly("delete") }
        var deleting: [any EntityObject] = []
        var reached = ObjectSet()  // every object here is held by the context or by the caller until the end
        var denials: [(owner: any EntityObject, field: Int, members: [any EntityObject])] = []
        // Level by level (the objects given, then what their cascades reach, …), so that the relationships the rules
        // follow are loaded for all the objects of an entity at once: one query per relationship and 256 objects,
        // not one per object.
        var level = objects
        while !level.isEmpty {
            var byEntity: [Int: [any EntityObject]] = [:]
            for object in level {
                if isKept(object.entityState) { continue }
                guard reached.insert(object) else { continue }
                let state = object.entityState
                guard state.context === self else {
                    let type: any EntityObject.Type = Swift.type(of: object)
                    throw StoreError(.wrongContext, "cannot delete a \(type) object that this context does not hold", entity: "\(type)")
                }
                guard state.status == .inserted || state.status == .persistent else { continue }
                deleting.append(object)
                byEntity[state.entityIndex, default: []].append(object)
            }
            level = []
            for (entity, group) in byEntity.sorted(by: { $0.key < $1.key }) {
                let mapping = model.mappings[entity]
                for (field, rule) in mapping.description.deleteRules.sorted(by: { $0.key < $1.key }) where rule != .nullify {
                    guard let relationship = mapping.relationships[field] else { continue }
                    if relationship.description.isToMany { try loadToManyBatch(group, relationship) }
                    for object in group {
                        let members =
                            relationship.description.isToMany
                            ? loadToMany(object, relationship) : resolveToOne(object, relationship).map { [$0] } ?? []
                        try throwDeferredError()
                        if rule == .cascade { level += members } else if !members.isEmpty { denials.append((object, field, members)) }
                    }
                }
            }
        }
        for denial in denials {
            let kept = denial.members.filter { !reached.contains($0) && !alsoDeleted($0.entityState) }
            guard !kept.isEmpty else { continue }
            let mapping = model.mappings[denial.owner.entityState.entityIndex]
            let field = mapping.description.fields[denial.field].name
            let destination = mapping.relationships[denial.field].map { model.mappings[$0.destination].name } ?? "object"
            throw StoreError(
                .deleteDenied,
                "cannot delete \(mapping.name) \(describeIdentity(of: denial.owner, mapping)): its \(field) still has \(kept.count) \(destination) object\(kept.count == 1 ? "" : "s") (delete rule deny); nothing was deleted",
                entity: mapping.name, field: field)
        }
        var counts: [Int: Int] = [:]
        for object in deleting {
            counts[object.entityState.entityIndex, default: 0] += 1
            try deleteObject(object)
        }
        return counts
    }

    /// The values of an object's identity attributes, in identity order (empty for an entity without identity).
    func identityValues(of object: any EntityObject, _ mapping: EntitySchema) -> [DatabaseValue] {
        mapping.description.identity.compactMap { field in
            if case .attribute(let attribute) = mapping.description.fields[field] { attribute.value(of: object) } else { nil }
        }
    }

    /// An object's identity for a message (`id = 7`), or its row id when the entity has none.
    func describeIdentity(of object: any EntityObject, _ mapping: EntitySchema) -> String {
        let names = mapping.description.identity.map { mapping.description.fields[$0].name }
        let values = identityValues(of: object, mapping)
        guard !values.isEmpty else { return "row \(object.entityState.rowID)" }
        return zip(names, values).map { "\($0) = \($1)" }.joined(separator: ", ")
    }

    func deleteObject(_ object: any EntityObject) throws {
        if isReadOnly { throw StoreError.readOnly("delete") }
        let state = object.entityState
        guard state.context === self else {
            let type: any EntityObject.Type = Swift.type(of: object)
            throw StoreError(.wrongContext, "cannot delete a \(type) object that this context does not hold", entity: "\(type)")
        }
        guard state.status == .inserted || state.status == .persistent else { return }
        noteUse(object, state)  // an import's retention must hear of it (see ObjectRetention)
        let mapping = model.mappings[state.entityIndex]
        // Detach from related objects that are in memory; the database's foreign keys (SET NULL, CASCADE)
        // take care of rows that are not.
        for case let relationship? in mapping.relationships {
            let members: [any EntityObject]
            if relationship.description.isToMany {
                if state.unloadedRelationships.contains(relationship.description.index) {
                    if relationship.inverse == nil { continue }
                    members = loadToMany(object, relationship)
                } else {
                    members = relationship.description.getMany(object)
                }
            } else {
                members = resolveToOne(object, relationship).map { [$0] } ?? []
            }
            for member in members {
                if let inverse = relationship.inverseRelationship {
                    unlinkInverse(member: member, inverse, owner: object)
                }
            }
        }
        // Left in insertedObjects and updatedObjects (a save skips objects that are no longer inserted or
        // persistent): removing them one by one made a cascade over n objects take n² time.
        if state.status == .inserted {
            discardedInsertions.append((mapping.index, state.rowID))
        } else {
            deletedObjects.append((mapping.index, state.rowID))
        }
        // Link changes that involve the deleted row are left out when the links are written (see planLinks).
        registries[mapping.index][state.rowID] = nil
        detachedObjects.append(object)
        state.status = .deleted
        state.changedFields.removeAll()
        state.storedValues = nil
        state.storedMembers = nil
    }

    // MARK: - Change tracking

    /// Records that `field` of `object` changed.
    func markChanged(_ object: any EntityObject, _ state: EntityState, _ field: Int) {
        state.changedFields.insert(field)
        state.changeCount &+= 1
        if model.mappings[state.entityIndex].identityFields.contains(field) {
            state.identityMayHaveChanged = true
            hasUnwrittenIdentityChanges = true
            // The index (and the filter of inserted identities) no longer know every identity in use: lookups
            // of unknown keys ask the store again.
            identityIndexes[state.entityIndex]?.isComplete = false
            storedKeys[state.entityIndex] = nil
        }
        if state.status == .persistent, !state.isScheduledForUpdate {
            state.isScheduledForUpdate = true
            updatedObjects.append(TrackedObject(object, state))
        }
    }

    // MARK: - Materializing rows

    /// The object for the current row of `statement`: the registered one if the row is already in memory
    /// (its in-memory state wins), or a new one created with `init(row:)`.
    func object(for mapping: EntitySchema, statement: any DatabaseStatement, columnOffset: Int32 = 0) throws -> any EntityObject {
        let rowID = statement.int64(at: columnOffset)
        if let existing = registries[mapping.index][rowID] {
            noteUse(existing, existing.entityState)
            return existing
        }
        let row: EntityRow
        if let statement = statement as? Statement {
            // SQLite: `init(row:)` reads the columns it needs straight from the statement.
            row = EntityRow(statement: statement, mapping: mapping, columnOffset: columnOffset)
        } else {
            var values = Array(repeating: DatabaseValue.null, count: mapping.description.fields.count)
            for field in values.indices where mapping.columnOfField[field] > 0 {
                values[field] = statement.value(at: mapping.columnOfField[field] + columnOffset)
            }
            row = EntityRow(values: values, mapping: mapping)
        }
        let object = try mapping.description.makeObject(row)
        registerStored(object, mapping, rowID: rowID) { column in
            statement.isNull(at: column + columnOffset) ? nil : statement.int64(at: column + columnOffset)
        }
        return object
    }

    /// The registered object for a stored row given as values (the row id, then the columns of
    /// ``SQLStorage/selectSQL(_:)``), making it from them if it is not in memory.
    func object(for mapping: EntitySchema, row: ArraySlice<DatabaseValue>) throws -> any EntityObject {
        guard case .integer(let rowID) = row.first else {
            throw StoreError(.invalidObject, "a stored row of \(mapping.name) without its row id", entity: mapping.name)
        }
        if let existing = registries[mapping.index][rowID] {
            noteUse(existing, existing.entityState)
            return existing
        }
        return try makeStoredObject(for: mapping, rowID: rowID, row: row)
    }

    /// Makes and registers the object of a stored row given as values (see ``object(for:row:)``), which the
    /// caller knows is not in memory.
    func makeStoredObject(for mapping: EntitySchema, rowID: Int64, row: ArraySlice<DatabaseValue>) throws -> any EntityObject {
        let object = try mapping.description.makeObject(EntityRow(row: row, mapping: mapping))
        registerStored(object, mapping, rowID: rowID) { column in
            if case .integer(let value) = row[row.startIndex + Int(column)] { return value }
            return nil
        }
        return object
    }

    /// Registers an object just read from the store: persistent, its to-many relationships unloaded, its
    /// to-one relationships unloaded with the foreign key `foreignKey(column)` gives (nil for NULL).
    private func registerStored(_ object: any EntityObject, _ mapping: EntitySchema, rowID: Int64, foreignKey: (Int32) -> Int64?) {
        let state = object.entityState
        state.context = self
        state.entityIndex = mapping.index
        state.status = .persistent
        state.rowID = rowID
        noteUse(object, state)
        materializedCounts[mapping.index] += 1
        mapping.forEachRelationship { relationship in
            let field = relationship.description.index
            if case .foreignKey = relationship.storage {
                if let key = foreignKey(mapping.columnOfField[field]) {
                    state.unloadedRelationships.insert(field)
                    state.foreignKeys[field] = key
                }
            } else {
                state.unloadedRelationships.insert(field)
            }
        }
        registries[mapping.index][rowID] = object
    }

    /// Reads the stored rows of `rowIDs` (the row id, then the columns of ``SQLStorage/selectSQL(_:)``), a chunk of
    /// ``membershipChunk`` row ids per statement, and calls `body` on each; a row id without a row is skipped.
    func forEachStoredRow(of mapping: EntitySchema, rowIDs: [Int64], _ body: (any DatabaseStatement) throws -> Void) throws {
        guard !rowIDs.isEmpty else { return }
        let statement = try connection.cached(storage.selectByRowIDs(mapping, count: Self.membershipChunk))
        try statement.run(rowIDs: rowIDs, slots: Self.membershipChunk, row: body)
    }

    /// The registered object for a row id, reading the row if it is not in memory.
    func object(entity: Int, rowID: Int64) throws -> (any EntityObject)? {
        if let existing = registries[entity][rowID] {
            noteUse(existing, existing.entityState)
            return existing
        }
        let mapping = model.mappings[entity]
        // An object not in memory: no plan waiting for a writer thread writes its row (see ``DeferredWriter``).
        return try withSharedConnection { connection in
            let statement = try connection.cached(storage.selectByRowID(mapping))
            defer { statement.reset() }
            try statement.bind(rowID, at: 1)
            guard try statement.step() else { return nil }
            return try object(for: mapping, statement: statement)
        }
    }
}

@available(*, unavailable)
extension Context: Sendable {}
