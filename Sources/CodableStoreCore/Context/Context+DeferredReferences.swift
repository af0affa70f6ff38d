/// References that wait for their destination: the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy.
///
/// A deferred reference is kept by its owner's row id (an import forgets the objects of earlier batches) and
/// the destination's identity. When an object with that identity is inserted, the reference is ready; the next
/// save links it before it writes, so that the link is part of that save (an import's batch, a write's end).
extension Context {
    struct PendingReference {
        let owner: Int
        let ownerRowID: Int64
        let field: Int
        /// The order in which references were deferred (see ``Context/deferredReferenceSequence``): the order of the
        /// members of one to-many in its JSON, and what tells the references one decode deferred from earlier ones.
        let sequence: Int
    }

    /// The deferred references not resolved yet, to go back to when a batch or a decode is rolled back (the
    /// references it deferred name rows that are gone).
    struct DeferredReferences {
        let pending: [Int: [IdentityKey: [PendingReference]]]
        let count: Int
    }

    var deferredReferences: DeferredReferences {
        get { DeferredReferences(pending: pendingReferences, count: pendingReferenceCount) }
        set {
            pendingReferences = newValue.pending
            pendingReferenceCount = newValue.count
            readyReferences = []
        }
    }

    /// Keeps a reference from `owner`'s relationship `field` to the object of `destination` with identity `key`,
    /// which is not stored yet.
    func deferReference(from owner: any EntityObject, field: Int, to destination: Int, _ key: IdentityKey) {
        let state = owner.entityState
        let pending = PendingReference(
            owner: state.entityIndex, ownerRowID: state.rowID, field: field, sequence: deferredReferenceSequence)
        pendingReferences[destination, default: [:]][key, default: []].append(pending)
        pendingReferenceCount += 1
        deferredReferenceSequence += 1
    }

    /// Called for each inserted object while references wait for its entity.
    func objectArrived(_ object: any EntityObject, _ mapping: EntitySchema, identity: IdentityKey?) {
        guard let waiting = pendingReferences[mapping.index], !waiting.isEmpty else { return }
        let key = identity ?? identityKey(of: object, mapping)
        guard let references = pendingReferences[mapping.index]?.removeValue(forKey: key) else { return }
        pendingReferenceCount -= references.count
        readyReferences.append((object, references))
    }

    /// Links the references whose destination arrived (before a save plans its writes).
    func linkReadyReferences() throws {
        while !readyReferences.isEmpty {
            let ready = readyReferences
            readyReferences = []
            for (destination, references) in ready {
                guard destination.entityState.status == .inserted || destination.entityState.status == .persistent else { continue }
                for reference in references {
                    guard let owner = try object(entity: reference.owner, rowID: reference.ownerRowID),
                        let relationship = model.mappings[reference.owner].relationships[reference.field]
                    else { continue }
                    if relationship.description.isToMany {
                        let members = loadToMany(owner, relationship)
                        if !members.contains(where: { $0 === destination }) { setToMany(owner, relationship, members + [destination]) }
                    } else {
                        setToOne(owner, relationship, destination)
                    }
                }
            }
        }
    }

    // MARK: - Unresolved references

    /// How many references kept by the deferred policy wait for their destination, per destination entity: cheap
    /// (no query). ``listUnresolvedReferences(limit:)`` says which object refers to what.
    ///
    /// ```swift
    /// context.unresolvedReferences   // ["Issue": 2]
    /// ```
    public var unresolvedReferences: [String: Int] {
        var counts: [String: Int] = [:]
        for (entity, byKey) in pendingReferences {
            let count = byKey.values.reduce(0) { $0 + $1.count }
            if count > 0 { counts[model.mappings[entity].name] = count }
        }
        return counts
    }

    /// The references kept by the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy whose destination has not
    /// arrived (yet): for each, the object that refers (entity and identity), the relationship, and the missing
    /// identity.
    ///
    /// ```swift
    /// try store.write { context in
    ///     _ = try decoder.decode([Comment].self, from: comments, into: context)
    ///     for reference in try context.listUnresolvedReferences() {
    ///         print(reference)   // Comment id = 7: issue → Issue id = 99 never arrived
    ///     }
    /// }
    /// ```
    /// The order is deterministic: by the owner's entity name, then by owner (row id: the order in which the objects
    /// were first inserted), then by relationship (in declaration order), then in the order the references were
    /// deferred (a to-many's missing members in JSON order). An owner's identity is read from the object when the
    /// context holds it, and from the store otherwise (an import forgets the objects of its earlier batches):
    /// one query per owner entity (of up to 256 row ids per statement), not one per reference. A reference whose
    /// owner has been deleted since is not listed (``unresolvedReferences`` still counts it).
    ///
    /// - Parameter limit: The most references to return, the first ones in that order; nil for all of them.
    /// - Returns: The unresolved references, at most `limit`.
    /// - Throws: The store's error when the owners' identities cannot be read.
    public func listUnresolvedReferences(limit: Int? = nil) throws -> [UnresolvedReference] {
        try listUnresolvedReferences(deferredSince: 0, limit: limit)
    }

    /// Throws if a reference kept by the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy is still waiting for
    /// its destination: the check for a write that decodes several payloads whose references may arrive in any of
    /// them (a comment page refers to issues of a later page), once all of them are decoded.
    ///
    /// ```swift
    /// try store.write { context in
    ///     for page in pages {
    ///         _ = try decoder.decode([Comment].self, from: page, into: context)   // decoder.unknownReferencePolicy = .deferred
    ///     }
    ///     try context.requireResolvedReferences()   // thrown out of the closure: the write is rolled back
    /// }
    /// ```
    /// It changes nothing, even when it throws: let the error leave the `write` closure (the transaction is rolled
    /// back), or catch it and fix the data first. ``StoreDecoder/failsOnUnresolvedReferences`` checks each decode
    /// instead; an import checks at its end with `ImportOptions/failsOnUnresolvedReferences`.
    ///
    /// - Throws: ``UnresolvedReferencesError`` listing every unresolved reference (as
    ///   ``listUnresolvedReferences(limit:)`` does); the store's error when the owners' identities cannot be read.
    public func requireResolvedReferences() throws {
        guard pendingReferenceCount > 0 else { return }
        let references = try listUnresolvedReferences()
        if !references.isEmpty { throw UnresolvedReferencesError(listing: references) }
    }

    /// Runs `body` (a decode under ``StoreDecoder/failsOnUnresolvedReferences``) in a savepoint, as
    /// ``inSavepoint(savingAtEnd:_:)`` does, and fails it when a reference it deferred is still unresolved at its end:
    /// then the store and the context are as before the call, and ``UnresolvedReferencesError`` lists those
    /// references (not those deferred before, which may still arrive).
    /// A read-only context has nothing to undo in the store: it only checks.
    func failingOnUnresolvedReferences<T>(savingAtEnd: Bool, _ body: () throws -> T) throws -> T {
        func checked() throws -> T {
            let first = deferredReferenceSequence
            let result = try body()
            if pendingReferenceCount > 0 {
                let references = try listUnresolvedReferences(deferredSince: first, limit: nil)
                if !references.isEmpty { throw UnresolvedReferencesError(listing: references) }
            }
            return result
        }
        if isReadOnly { return try checked() }
        return try inSavepoint(savingAtEnd: savingAtEnd, checked)
    }

    /// The unresolved references deferred from sequence number `first` on, in the order of
    /// ``listUnresolvedReferences(limit:)``, at most `limit`.
    func listUnresolvedReferences(deferredSince first: Int, limit: Int?) throws -> [UnresolvedReference] {
        var pending: [(destination: Int, key: IdentityKey, reference: PendingReference)] = []
        for (destination, byKey) in pendingReferences {
            for (key, references) in byKey {
                for reference in references where reference.sequence >= first { pending.append((destination, key, reference)) }
            }
        }
        let names = model.mappings.map(\.name)
        pending.sort { a, b in
            let (x, y) = (a.reference, b.reference)
            if x.owner != y.owner { return names[x.owner] < names[y.owner] }
            if x.ownerRowID != y.ownerRowID { return x.ownerRowID < y.ownerRowID }
            if x.field != y.field { return x.field < y.field }
            return x.sequence < y.sequence
        }
        let wanted = limit.map { max(0, $0) } ?? pending.count
        var listed: [UnresolvedReference] = []
        var start = 0
        while start < pending.count, listed.count < wanted {
            // The owners of a window at a time: with a limit, about as many as are listed are read (more only when
            // owners were deleted since).
            let window = pending[start..<min(pending.count, start + max(wanted - listed.count, Self.membershipChunk))]
            start = window.endIndex
            let owners = try ownerIdentities(window.map { OwnerKey(entity: $0.reference.owner, rowID: $0.reference.ownerRowID) })
            for entry in window where listed.count < wanted {
                let reference = entry.reference
                // An owner deleted since: nothing refers any more.
                guard let owner = owners[OwnerKey(entity: reference.owner, rowID: reference.ownerRowID)] else { continue }
                let ownerMapping = model.mappings[reference.owner]
                let destination = model.mappings[entry.destination]
                listed.append(
                    UnresolvedReference(
                        ownerEntity: ownerMapping.name, ownerIdentity: owner.names.isEmpty ? nil : owner,
                        ownerRowID: reference.ownerRowID, relationship: ownerMapping.description.fields[reference.field].name,
                        destinationEntity: destination.name,
                        missingIdentity: UnresolvedReference.Identity(names: identityNames(destination), values: entry.key.values)))
            }
        }
        return listed
    }

    private struct OwnerKey: Hashable {
        let entity: Int
        let rowID: Int64
    }

    /// The identities of `owners` (no names nor values for an entity without identity): from the objects the context
    /// holds, else from their stored rows, with one statement per entity. An owner deleted since has none.
    private func ownerIdentities(_ owners: [OwnerKey]) throws -> [OwnerKey: UnresolvedReference.Identity] {
        var identities: [OwnerKey: UnresolvedReference.Identity] = [:]
        var deleted = Set<OwnerKey>()
        for (entity, rowID) in deletedObjects { deleted.insert(OwnerKey(entity: entity, rowID: rowID)) }
        var unheld: [Int: [Int64]] = [:]
        for owner in owners where identities[owner] == nil && !deleted.contains(owner) {
            let mapping = model.mappings[owner.entity]
            if let object = registries[owner.entity][owner.rowID] {
                identities[owner] = UnresolvedReference.Identity(names: identityNames(mapping), values: identityValues(of: object, mapping))
            } else {
                unheld[owner.entity, default: []].append(owner.rowID)
            }
        }
        for (entity, rowIDs) in unheld.sorted(by: { $0.key < $1.key }) {
            let mapping = model.mappings[entity]
            let names = identityNames(mapping)
            let columns = mapping.description.identity.map { mapping.columnOfField[$0] }
            try forEachStoredRow(of: mapping, rowIDs: rowIDs) { statement in
                let owner = OwnerKey(entity: entity, rowID: statement.int64(at: 0))
                identities[owner] = UnresolvedReference.Identity(names: names, values: columns.map { statement.value(at: $0) })
            }
        }
        return identities
    }

    /// The names of an entity's identity attributes, in identity order.
    private func identityNames(_ mapping: EntitySchema) -> [String] {
        mapping.description.identity.map { mapping.description.fields[$0].name }
    }
}
