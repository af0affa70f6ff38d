/// Relationship loading and inverse maintenance.
///
/// Inverses are kept consistent in memory on both sides: assigning `person.country = france` removes the
/// person from the old country's `people` and adds it to `france.people`, when those are loaded. A side that
/// is not loaded yet is not touched: when it is read, the changes not written yet are applied to what the store
/// gives (see `unwrittenMemberships`), so it sees the change without writing it first.
extension Context {
    func relationship(_ owner: some EntityObject, _ field: Int) -> ResolvedRelationship {
        model.mappings[owner.entityState.entityIndex].relationships[field]!
    }

    // MARK: - Loading

    /// The to-one destination, loading it if it is a fault.
    func resolveToOne(_ owner: any EntityObject, _ relationship: ResolvedRelationship) -> (any EntityObject)? {
        owner.withEntityState { resolveToOne(owner, $0, relationship) }
    }

    private func resolveToOne(_ owner: any EntityObject, _ state: EntityState, _ relationship: ResolvedRelationship)
        -> (any EntityObject)?
    {
        let field = relationship.description.index
        guard state.unloadedRelationships.contains(field) else { return relationship.description.getOne(owner) }
        noteUse(owner, state)  // it now reaches another object: an import's retention must look at it (see ObjectRetention)
        var destination: (any EntityObject)?
        if let rowID = state.foreignKeys[field] {
            do {
                destination = try object(entity: relationship.destination, rowID: rowID)
            } catch {
                deferredError = deferredError ?? relationshipLoadError(relationship, error)
            }
        }
        state.unloadedRelationships.remove(field)
        state.foreignKeys[field] = nil
        relationship.description.setOne(owner, destination)
        return destination
    }

    /// The to-many members, loading them if they are not loaded.
    @discardableResult
    func loadToMany(_ owner: any EntityObject, _ relationship: ResolvedRelationship) -> [any EntityObject] {
        let state = owner.entityState
        let field = relationship.description.index
        guard state.unloadedRelationships.contains(field) else { return relationship.description.getMany(owner) }
        state.unloadedRelationships.remove(field)
        noteUse(owner, state)  // as in resolveToOne
        var members: [any EntityObject] = []
        // flush() throws (and forgets) a failure deferred earlier: that one stays the error the next save
        // throws. Wrapped in this relationship's error instead, it would be wrapped again by the next load, and
        // on a failing disk the error grew one level deeper per relationship read.
        let earlierError = deferredError
        do {
            let unwritten = try unwrittenMemberships(relationship, of: CollectionOfOne(owner))
            let destination = model.mappings[relationship.destination]
            let sql = storage.membershipSQL(relationship, owners: 1)
            try withMembershipConnection(relationship, owners: CollectionOfOne(owner)) { connection in
                let statement = try connection.cached(sql)
                defer { statement.reset() }
                try statement.bind(state.rowID, at: 1)
                while try statement.step() {
                    members.append(try object(for: destination, statement: statement, columnOffset: 1))
                }
            }
            if let unwritten { members = withUnwrittenChanges(unwritten, stored: members, of: owner, state, relationship) }
        } catch {
            deferredError = earlierError ?? deferredError ?? relationshipLoadError(relationship, error)
        }
        relationship.description.setMany(owner, members)
        return members
    }

    private func relationshipLoadError(_ relationship: ResolvedRelationship, _ error: any Error) -> StoreError {
        let owner = model.mappings[relationship.owner].name
        return StoreError(
            .relationshipLoad, "\(owner).\(relationship.description.name) could not be loaded", entity: owner,
            field: relationship.description.name, cause: error)
    }

    // MARK: - Changes

    /// After `owner`'s to-one storage changed from `old` to `new`.
    /// `storedForeignKey`: the foreign key as stored, when the relationship was not changed since (the save
    /// compares with it: see `EntityState.storedValues`).
    ///
    /// `state` and `newState` are the owner's and the new destination's states, read once by the caller.
    private func toOneDidChange(
        _ owner: any EntityObject, _ state: EntityState, _ relationship: ResolvedRelationship, old: (any EntityObject)?,
        new: (any EntityObject)?, _ newState: EntityState?, storedForeignKey: Int64?
    ) {
        let field = relationship.description.index
        recordStoredForeignKey(state, relationship, storedForeignKey)
        state.unloadedRelationships.remove(field)
        state.foreignKeys[field] = nil
        markChanged(owner, state, field)
        if let new, let newState, newState.status == .transient { insertForRelationship(new) }
        guard let inverse = relationship.inverseRelationship else { return }
        if let old { unlinkInverse(member: old, inverse, owner: owner) }
        if let new, let newState { linkInverse(member: new, newState, inverse, owner: owner) }
    }

    /// Records a stored object's foreign key as stored before its first change since the last write (see
    /// `EntityState.storedValues`); `storedForeignKey`: the row id of the destination it had until now.
    func recordStoredForeignKey(_ state: EntityState, _ relationship: ResolvedRelationship, _ storedForeignKey: Int64?) {
        guard case .foreignKey = relationship.storage else { return }
        state.recordStoredValue(relationship.description.index, storedForeignKey.map { .integer($0) } ?? .null)
    }

    /// The row id a destination has in the store, or nil for none (or one not inserted).
    static func storedRowID(_ object: (any EntityObject)?) -> Int64? {
        object?.withEntityState { storedRowID($0) }
    }

    /// The row id the object of `state` has in the store, or nil for none (or one not inserted).
    @inline(__always)
    static func storedRowID(_ state: EntityState?) -> Int64? {
        guard let state, state.status != .transient else { return nil }
        return state.rowID
    }

    /// After `owner`'s to-many storage changed from `old` to `new`.
    ///
    /// Each object's state is read once per member: `entityState` is a protocol getter, and each read costs a
    /// call and two reference counting operations (a tenth of the decoding thread's, on a large import).
    func toManyDidChange(_ owner: any EntityObject, _ relationship: ResolvedRelationship, old: [any EntityObject], new: [any EntityObject]) {
        owner.withEntityState { toManyDidChange(owner, $0, relationship, old: old, new: new) }
    }

    private func toManyDidChange(
        _ owner: any EntityObject, _ state: EntityState, _ relationship: ResolvedRelationship, old: [any EntityObject],
        new: [any EntityObject]
    ) {
        let field = relationship.description.index
        // Unchanged since loaded (every change of a list through itself marks it, and so does every change of an
        // ordered list through its inverse), `old` is what is stored.
        state.recordStoredMembers(field, old)
        state.unloadedRelationships.remove(field)
        markChanged(owner, state, field)
        let removed: [any EntityObject]
        let added: [any EntityObject]
        if old.isEmpty {
            // A new object's relationship, most often: nothing to compare.
            removed = []
            added = new
        } else if old.count <= 16, new.count <= 16 {
            removed = old.filter { member in !new.contains { $0 === member } }
            added = new.filter { member in !old.contains { $0 === member } }
        } else {
            let oldIDs = Set(old.map { ObjectIdentifier($0) })
            let newIDs = Set(new.map { ObjectIdentifier($0) })
            removed = old.filter { !newIDs.contains(ObjectIdentifier($0)) }
            added = new.filter { !oldIDs.contains(ObjectIdentifier($0)) }
        }
        let inverse = relationship.inverseRelationship
        for member in removed {
            member.withEntityState { memberState in
                if case .joinTable(let table, let ownerIsSource) = relationship.storage {
                    recordLink(table, owner, state, member, memberState, ownerIsSource: ownerIsSource, isLink: false)
                }
                if let inverse { unlinkInverse(member: member, memberState, inverse, owner: owner) }
            }
        }
        link(added, to: owner, state, relationship, insertingTransient: true)
    }

    /// At insertion: relationships assigned while the object was transient.
    func connectMembers(_ members: [any EntityObject], of owner: any EntityObject, _ relationship: ResolvedRelationship) throws {
        for member in members where member.entityState.status == .transient { try insertObject(member) }
        link(members, to: owner, owner.entityState, relationship, insertingTransient: false)
    }

    /// Records the join rows of members added to `owner`'s relationship, and adds `owner` to their inverse side.
    /// `insertingTransient`: inserts each transient member first (an error is thrown by the next save), with the same
    /// read of its state.
    private func link(
        _ members: [any EntityObject], to owner: any EntityObject, _ state: EntityState, _ relationship: ResolvedRelationship,
        insertingTransient: Bool
    ) {
        let inverse = relationship.inverseRelationship
        members.forEachBorrowed { member in
            member.withEntityState { memberState in
                if insertingTransient, memberState.status == .transient { insertForRelationship(member) }
                if case .joinTable(let table, let ownerIsSource) = relationship.storage {
                    recordLink(table, owner, state, member, memberState, ownerIsSource: ownerIsSource, isLink: true)
                }
                if let inverse { linkInverse(member: member, memberState, inverse, owner: owner) }
            }
        }
    }

    private func insertForRelationship(_ object: any EntityObject) {
        do {
            try insertObject(object)
        } catch {
            deferredError = deferredError ?? error
        }
    }

    private func recordLink(
        _ table: Int, _ ownerObject: any EntityObject, _ owner: EntityState, _ memberObject: any EntityObject,
        _ member: EntityState, ownerIsSource: Bool, isLink: Bool
    ) {
        let ownerRow = owner.rowID
        let memberRow = member.rowID
        guard ownerRow != 0, memberRow != 0 else { return }
        noteUse(ownerObject, owner)
        noteUse(memberObject, member)
        // A link is a change of both sides, whichever side made it (see EntityState.changeCount).
        owner.changeCount &+= 1
        member.changeCount &+= 1
        linkChanges.append(
            LinkChange(
                table: table, source: ownerIsSource ? ownerRow : memberRow, target: ownerIsSource ? memberRow : ownerRow,
                isLink: isLink))
    }

    /// Makes `member`'s side of the relationship (`inverse`) include `owner`.
    func linkInverse(member: any EntityObject, _ inverse: ResolvedRelationship, owner: any EntityObject) {
        member.withEntityState { linkInverse(member: member, $0, inverse, owner: owner) }
    }

    private func linkInverse(member: any EntityObject, _ state: EntityState, _ inverse: ResolvedRelationship, owner: any EntityObject) {
        guard state.status == .inserted || state.status == .persistent else { return }
        let field = inverse.description.index
        if inverse.description.kind == .toOne {
            let current = resolveToOne(member, inverse)
            if current === owner { return }
            // The member leaves its previous owner (one-to-many) or partner (one-to-one).
            if let current, let forward = inverse.inverseRelationship {
                removeInMemory(member, from: current, forward)
            }
            recordStoredForeignKey(state, inverse, Self.storedRowID(current))
            inverse.description.setOne(member, owner)
            markChanged(member, state, field)
        } else {
            if state.unloadedRelationships.contains(field) { return }
            if inverse.description.isOrdered { state.recordStoredMembers(field, inverse.description.getMany(member)) }
            if inverse.description.insertMember(member, owner), inverse.description.isOrdered {
                markChanged(member, state, field)
            }
        }
    }

    /// Makes `member`'s side of the relationship (`inverse`) no longer include `owner`.
    func unlinkInverse(member: any EntityObject, _ inverse: ResolvedRelationship, owner: any EntityObject) {
        member.withEntityState { unlinkInverse(member: member, $0, inverse, owner: owner) }
    }

    private func unlinkInverse(member: any EntityObject, _ state: EntityState, _ inverse: ResolvedRelationship, owner: any EntityObject) {
        guard state.status == .inserted || state.status == .persistent else { return }
        let field = inverse.description.index
        if inverse.description.kind == .toOne {
            guard resolveToOne(member, inverse) === owner else { return }
            recordStoredForeignKey(state, inverse, Self.storedRowID(owner))
            inverse.description.setOne(member, nil)
            markChanged(member, state, field)
        } else {
            if state.unloadedRelationships.contains(field) { return }
            guard inverse.description.containsMember(member, owner) else { return }
            if inverse.description.isOrdered { state.recordStoredMembers(field, inverse.description.getMany(member)) }
            inverse.description.removeMember(member, owner)
            if inverse.description.isOrdered { markChanged(member, state, field) }
        }
    }

    /// Removes `member` from `holder`'s loaded relationship, in memory only.
    private func removeInMemory(_ member: any EntityObject, from holder: any EntityObject, _ relationship: ResolvedRelationship) {
        let state = holder.entityState
        let field = relationship.description.index
        if state.unloadedRelationships.contains(field) { return }
        if relationship.description.kind == .toOne {
            if relationship.description.getOne(holder) === member {
                recordStoredForeignKey(state, relationship, Self.storedRowID(member))
                relationship.description.setOne(holder, nil)
                markChanged(holder, state, field)
            }
        } else if relationship.description.containsMember(holder, member) {
            if relationship.description.isOrdered { state.recordStoredMembers(field, relationship.description.getMany(holder)) }
            relationship.description.removeMember(holder, member)
            if relationship.description.isOrdered { markChanged(holder, state, field) }
        }
    }
}

extension Context {
    /// Loads one to-many relationship of many objects with one query per chunk of owners, instead of one
    /// query per owner: what decoding a batch of stored objects needs before replacing their memberships.
    func loadToManyBatch(_ owners: [any EntityObject], _ relationship: ResolvedRelationship) throws {
        let field = relationship.description.index
        let pending = owners.filter { $0.entityState.unloadedRelationships.contains(field) && $0.entityState.rowID != 0 }
        if pending.isEmpty { return }
        if case .foreignKey = relationship.storage { return }
        let unwritten = try unwrittenMemberships(relationship, of: pending)
        let destination = model.mappings[relationship.destination]
        // Rows come with the owner's row id first; the entity's columns follow, shifted by one.
        // Each owner once: an owner in two chunks would get its members twice.
        var seen = Set<Int64>()
        let rowIDs = pending.map(\.entityState.rowID).filter { seen.insert($0).inserted }
        var members: [Int64: [any EntityObject]] = [:]
        try withMembershipConnection(relationship, owners: pending) { connection in
            try storage.loadMembers(relationship, of: rowIDs, statements: connection.cached) { statement in
                members[statement.int64(at: 0), default: []].append(try object(for: destination, statement: statement, columnOffset: 1))
            }
        }
        for owner in pending where owner.entityState.unloadedRelationships.contains(field) {
            owner.entityState.unloadedRelationships.remove(field)
            noteUse(owner, owner.entityState)  // as in resolveToOne
            let stored = members[owner.entityState.rowID] ?? []
            guard let unwritten else {
                relationship.description.setMany(owner, stored)
                continue
            }
            relationship.description.setMany(owner, withUnwrittenChanges(unwritten, stored: stored, of: owner, owner.entityState, relationship))
        }
    }

    /// The members of `owner`'s just loaded relationship: `stored`, as the store gives them, with the changes not
    /// written yet applied. When they differ, the relationship is a change of the owner from its stored members,
    /// recorded as such (see `EntityState.storedMembers`): a save writes the positions of an ordered one, and writes
    /// nothing when it is set back to them.
    private func withUnwrittenChanges(
        _ unwritten: UnwrittenMemberships, stored: [any EntityObject], of owner: any EntityObject, _ state: EntityState,
        _ relationship: ResolvedRelationship
    ) -> [any EntityObject] {
        let members = unwritten.apply(to: stored, of: state.rowID, relationship)
        guard members.count != stored.count || !zip(members, stored).allSatisfy({ $0 === $1 }) else { return members }
        let field = relationship.description.index
        state.recordStoredMembers(field, stored)
        markChanged(owner, state, field)
        return members
    }

    /// The changes not written yet that alter what the store answers for these owners' memberships, to apply to
    /// the rows the store gives (nil when there are none). Deletes are written first instead (a deleted object's
    /// row would come back from the store as a new object).
    ///
    /// Why not write the changes first, as queries do: a decode that moves members between owners and back (page
    /// A, page B, page A again; a nested record that moves an item to another owner before its own record moves it
    /// back) would write every intermediate membership and then write it back, where the save at the end, which
    /// compares with what is stored, writes nothing.
    private func unwrittenMemberships(
        _ relationship: ResolvedRelationship, of owners: some Collection<any EntityObject>
    ) throws -> UnwrittenMemberships? {
        guard hasChanges else { return nil }
        if !deletedObjects.isEmpty {
            try flush()
            return nil
        }
        var unwritten = UnwrittenMemberships()
        switch relationship.storage {
        case .foreignKey:
            return nil
        case .joinTable(let table, let ownerIsSource):
            guard linkChanges.contains(where: { $0.table == table }) else { return nil }
            let rowIDs = Set(owners.map(\.entityState.rowID))
            // The net change of each link, as a save writes it (see planLinks): the last change, unless it undoes
            // the first.
            var first: [UnwrittenMemberships.Link: Bool] = [:]
            var last: [UnwrittenMemberships.Link: (isLink: Bool, position: Int)] = [:]
            for (position, change) in linkChanges.enumerated() where change.table == table {
                let owner = ownerIsSource ? change.source : change.target
                guard rowIDs.contains(owner) else { continue }
                let link = UnwrittenMemberships.Link(owner: owner, member: ownerIsSource ? change.target : change.source)
                if first[link] == nil { first[link] = change.isLink }
                last[link] = (change.isLink, position)
            }
            let destination = relationship.destination
            for (link, change) in last.sorted(by: { $0.value.position < $1.value.position }) where first[link] == change.isLink {
                if change.isLink {
                    // Recorded from objects the context holds; one let go since was deleted (and is no member).
                    guard let member = registries[destination][link.member] else { continue }
                    unwritten.added[link.owner, default: []].append(member)
                } else {
                    unwritten.removed.insert(link)
                }
            }
        case .inverseForeignKey:
            // Members whose foreign key changed and is not written: they join the owner their to-one names now
            // (the rows the store gives for another owner are checked one by one, see `apply`).
            guard let inverse = relationship.inverse else { return nil }
            let rowIDs = Set(owners.map(\.entityState.rowID))
            func collect(_ object: any EntityObject, _ state: EntityState) {
                guard state.entityIndex == relationship.destination, !state.unloadedRelationships.contains(inverse),
                    state.status == .inserted || (state.status == .persistent && state.changedFields.contains(inverse)),
                    let owner = relationship.inverseRelationship?.description.getOne(object),
                    let ownerRowID = Self.storedRowID(owner), rowIDs.contains(ownerRowID)
                else { return }
                unwritten.added[ownerRowID, default: []].append(object)
            }
            insertedObjects.forEachBorrowed(collect)
            updatedObjects.forEachBorrowed(collect)
            unwritten.checksOwners = true
        }
        return unwritten
    }

    /// Owners (row ids) per membership query, and per load or delete by row id: the storage's chunk.
    package static let membershipChunk = SQLStorage.referenceChunk
}

extension Context {
    /// Runs a membership load of `owners`. While a writer thread runs, a plan it has not written yet may change
    /// the join rows of an object the context kept across its last eviction, or one a save of the current batch
    /// handed over (see ``DeferredWriter/mayHaveUnwrittenLinks(_:)``), so those loads wait for the writer. So do loads of memberships stored as the
    /// members' foreign keys: a member moved from an owner the context does not hold changes that owner's memberships.
    private func withMembershipConnection(
        _ relationship: ResolvedRelationship, owners: some Sequence<any EntityObject>, _ body: (any DatabaseConnection) throws -> Void
    ) throws {
        guard let deferredWriter else { return try withSharedConnection(body) }
        guard case .joinTable(let table, let ownerIsSource) = relationship.storage else { return try body(connection) }
        // Links a save in the middle of this batch handed over (a hook's load saves first) may not be written yet.
        let handedOver = deferredWriter.mayHaveUnwrittenLinks(
            table: table, owners: { owners.map(\.entityState.rowID) }, ownerIsSource: ownerIsSource)
        if handedOver || owners.contains(where: { deferredWriter.mayHaveUnwrittenLinks($0.entityState) }) {
            try body(connection)
        } else {
            try withSharedConnection(body)
        }
    }
}

extension Context {
    /// Sets a to-one relationship through the type-erased description, with inverse maintenance.
    func setToOne(_ owner: any EntityObject, _ relationship: ResolvedRelationship, _ new: (any EntityObject)?) {
        owner.withEntityState { setToOne(owner, $0, relationship, new, new?.entityState) }
    }

    /// `setToOne(_:_:_:)` with the states of the owner and of the new destination read (the decoder has them).
    func setToOne(
        _ owner: any EntityObject, _ state: EntityState, _ relationship: ResolvedRelationship, _ new: (any EntityObject)?,
        _ newState: EntityState?
    ) {
        let field = relationship.description.index
        if case .foreignKey = relationship.storage, state.unloadedRelationships.contains(field) {
            // Not loaded: the stored foreign key says what it is, without reading the old destination. Only an
            // old destination in memory can have a loaded inverse to update; one that is not was never read.
            let stored = state.foreignKeys[field]
            let newRowID = Self.storedRowID(newState)
            state.unloadedRelationships.remove(field)
            state.foreignKeys[field] = nil
            noteUse(owner, state)  // as in resolveToOne
            if stored == newRowID, (new == nil) == (stored == nil) {
                relationship.description.setOne(owner, new)
                return
            }
            let old = stored.flatMap { registries[relationship.destination][$0] }
            relationship.description.setOne(owner, new)
            toOneDidChange(owner, state, relationship, old: old, new: new, newState, storedForeignKey: stored)
            return
        }
        let old = resolveToOne(owner, state, relationship)
        if old === new { return }
        relationship.description.setOne(owner, new)
        // Unchanged since loaded, the loaded destination is the stored one.
        toOneDidChange(owner, state, relationship, old: old, new: new, newState, storedForeignKey: Self.storedRowID(old))
    }

    /// Sets a to-many relationship through the type-erased description, with inverse maintenance; the same
    /// members (in the same order, for an ordered relationship) change nothing.
    func setToMany(_ owner: any EntityObject, _ relationship: ResolvedRelationship, _ members: [any EntityObject]) {
        owner.withEntityState { setToMany(owner, $0, relationship, members) }
    }

    /// `setToMany(_:_:_:)` with the owner's state read (the decoder has it).
    func setToMany(
        _ owner: any EntityObject, _ state: EntityState, _ relationship: ResolvedRelationship, _ members: [any EntityObject]
    ) {
        let field = relationship.description.index
        if !state.unloadedRelationships.contains(field), relationship.description.isEmpty(owner) {
            // Nothing to compare with (a new object, most often).
            if members.isEmpty { return }
            let new = Self.withoutDuplicates(members)
            relationship.description.setMany(owner, new)
            toManyDidChange(owner, state, relationship, old: [], new: new)
            return
        }
        let old = loadToMany(owner, relationship)
        let new = Self.withoutDuplicates(members)
        if old.count == new.count {
            if relationship.description.isOrdered {
                if zip(old, new).allSatisfy({ $0 === $1 }) { return }
            } else if Self.sameMembers(old, new) {
                return
            }
        }
        relationship.description.setMany(owner, new)
        toManyDidChange(owner, state, relationship, old: old, new: new)
    }

    /// The members in order, each once. Short lists (most relationships in JSON) are checked pairwise, without
    /// hashing.
    static func withoutDuplicates(_ members: [any EntityObject]) -> [any EntityObject] {
        if members.count < 2 { return members }
        if members.count <= 16 {
            var hasDuplicates = false
            for index in 1..<members.count where !hasDuplicates {
                for earlier in 0..<index where members[earlier] === members[index] {
                    hasDuplicates = true
                    break
                }
            }
            if !hasDuplicates { return members }
        }
        var seen = Set<ObjectIdentifier>(minimumCapacity: members.count)
        return members.filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// Whether two duplicate-free lists of the same length hold the same objects, in any order.
    static func sameMembers(_ old: [any EntityObject], _ new: [any EntityObject]) -> Bool {
        if old.count <= 16 {
            return new.allSatisfy { member in old.contains { $0 === member } }
        }
        return Set(old.map { ObjectIdentifier($0) }) == Set(new.map { ObjectIdentifier($0) })
    }
}

/// Membership changes made in memory and not written yet, by owner row id: what a relationship load applies to
/// the rows the store gives (see `Context.unwrittenMemberships(_:of:)`).
struct UnwrittenMemberships {
    struct Link: Hashable {
        let owner: Int64
        let member: Int64
    }
    /// Members to add at the end of an owner's list (unless the store gave them already), in the order they were
    /// linked.
    var added: [Int64: [any EntityObject]] = [:]
    /// Links removed.
    var removed: Set<Link> = []
    /// Whether each stored member must still name the owner through its to-one (memberships stored as the members'
    /// foreign keys: a member held in memory may have moved to another owner).
    var checksOwners = false

    /// `stored`, the members the store gives for `owner`, with the unwritten changes applied.
    func apply(to stored: [any EntityObject], of owner: Int64, _ relationship: ResolvedRelationship) -> [any EntityObject] {
        var members = stored
        if !removed.isEmpty {
            members.removeAll { removed.contains(Link(owner: owner, member: $0.entityState.rowID)) }
        }
        if checksOwners, let inverse = relationship.inverseRelationship {
            let field = inverse.description.index
            members.removeAll { member in
                member.withEntityState { state in
                    guard !state.unloadedRelationships.contains(field) else { return false }
                    return Context.storedRowID(inverse.description.getOne(member)) != owner
                }
            }
        }
        for member in added[owner] ?? [] where !members.contains(where: { $0 === member }) {
            members.append(member)
        }
        return members
    }
}
