/// Writing pending changes: deletes, inserts, updates of changed columns only, join-table links, positions.
extension Context {
    /// Writes every pending change to the store, inside the current write transaction.
    ///
    /// You rarely need to call it: ``Store/write(_:)-2mz68`` saves when its closure returns, and the
    /// context saves before each query. Only the columns of changed fields are written; objects without
    /// changes are not written at all. If a write fails (an identity conflict, say), the store is left as it
    /// was before this save and the error is thrown.
    /// - Throws: ``StoreError`` (``StoreError/Code/identityConflict``, ``StoreError/Code/readOnly``) or
    ///   `SQLiteError`.
    public func save() throws {
        if isReadOnly { throw StoreError.readOnly("save") }
        try flush(isSave: true)
    }

    /// Saves, then lets go of every object the context holds, so that a long write (a hand-written import
    /// loop) keeps memory flat. Objects you still hold afterwards are detached: their relationships are
    /// emptied and they are no longer tracked; fetch them again to go on.
    ///
    /// ```swift
    /// try store.write { context in
    ///     for page in pages {
    ///         _ = try decoder.decode([Issue].self, from: page, into: context)
    ///         try context.saveAndForgetObjects()
    ///     }
    /// }
    /// ```
    public func saveAndForgetObjects() throws {
        try save()
        reset()
    }

    /// Throws (once) the error deferred by a relationship load that could not throw where it happened.
    func throwDeferredError() throws {
        guard let error = deferredError else { return }
        deferredError = nil
        throw error
    }

    /// Writes pending changes. With `usingSavepoint`, a failure leaves nothing behind (the context's caller
    /// may catch the error and go on); without, the caller rolls back a larger scope itself (the end of a
    /// write, an import batch), and SQLite keeps no statement journal for what may be a very large save.
    ///
    /// `isSave`: the point ``rollback()`` goes back to moves here (``save()``, the end of a write or of an import's
    /// batch). Other flushes (before a query) write inside a savepoint kept open until the next save, so that a
    /// rollback can undo them (see `Context+Rollback.swift`).
    package func flush(usingSavepoint: Bool = true, isSave: Bool = false) throws {
        guard !isReadOnly else { return }
        try throwDeferredError()
        if !readyReferences.isEmpty { try linkReadyReferences() }
        guard hasChanges else {
            if isSave { try didSave() }
            return
        }
        // A writer thread is told of the objects a plan writes: it keeps them while the plan waits (see
        // ``DeferredWriter``).
        var touched = Array(repeating: false, count: model.mappings.count)
        insertedObjects.forEachBorrowed { object, state in
            touched[state.entityIndex] = true
            noteUse(object, state)
        }
        updatedObjects.forEachBorrowed { object, state in
            touched[state.entityIndex] = true
            noteUse(object, state)
        }
        // Links by table first: a batch changes hundreds of links, of a few tables.
        var touchedTables = Array(repeating: false, count: model.joinTables.count)
        for change in linkChanges { touchedTables[change.table] = true }
        for (table, isTouched) in touchedTables.enumerated() where isTouched {
            touched[model.joinTables[table].source] = true
            touched[model.joinTables[table].target] = true
        }
        for (entity, isTouched) in touched.enumerated() where isTouched { touchedEntities.insert(entity) }
        for (entity, _) in deletedObjects { touchedEntities.insert(entity) }
        if let deferredWriter {
            // The writer thread writes it; the objects it writes are kept meanwhile (see ``DeferredWriter``).
            // Never while holding the connection: the writer could not finish the plan this waits for.
            precondition(!isSharingConnection, "a save while holding the shared connection")
            var plan = WritePlan()
            try writeSteps { plan.steps.append($0) }
            try deferredWriter.enqueue(plan)
            // A deleted object is not held, so its row must be gone before the next lookup (imports rarely
            // delete: only a decoding hook can).
            if !deletedObjects.isEmpty { deferredWriter.waitUntilIdle() }
        } else if usingSavepoint {
            try connection.checkInsideTransaction(function: #function)
            if !isSave { try markUnsavedWrites() }
            // A savepoint makes a failed flush leave nothing behind, so the caller may fix things and retry.
            try connection.inSavepoint(named: "codablestore_save") { try writeNow() }
        } else {
            try connection.checkInsideTransaction(function: #function)
            if !isSave { try markUnsavedWrites() }
            try writeNow()
        }
        // Only now that everything is written (or handed to the writer) does the in-memory state move on.
        var inserted = Array(repeating: 0, count: model.mappings.count)
        insertedObjects.forEachBorrowed { _, state in
            guard state.status == .inserted else { return }
            state.status = .persistent
            state.changedFields.removeAll()
            state.storedStamp = state.stampToWrite
            state.storedStampIsKnown = true
            inserted[state.entityIndex] += 1
        }
        for (entity, count) in inserted.enumerated() where count > 0 {
            writeCounts[entity, default: (0, 0)].inserted += count
            materializedCounts[entity] += count
        }
        updatedObjects.forEachBorrowed { _, state in
            state.isScheduledForUpdate = false
            if state.status == .persistent, !state.changedFields.isEmpty {
                writeCounts[state.entityIndex, default: (0, 0)].updated += 1
            }
            state.changedFields.removeAll()
            state.storedValues = nil
            state.storedMembers = nil
        }
        for (state, stamp) in updatedStamps {
            state.storedStamp = stamp
            state.storedStampIsKnown = true
        }
        updatedStamps.removeAll(keepingCapacity: true)
        insertedObjects.removeAll(keepingCapacity: true)
        updatedObjects.removeAll(keepingCapacity: true)
        deletedObjects.removeAll()
        discardedInsertions.removeAll()
        if let deferredWriter, !linkChanges.isEmpty { deferredWriter.didHandOver(links: linkChanges) }
        linkChanges.removeAll()
        hasUnwrittenIdentityChanges = false
        if isSave { try didSave() }
    }

    /// Runs each step of the pending changes as soon as it is made, so that a large save never holds all its
    /// values at once.
    private func writeNow() throws {
        let writer = StepWriter(storage: storage, connection: connection, clearsReferences: !enforcesForeignKeys) { sql in try self.connection.cached(sql) }
        try writeSteps { step in try writer.run(step) }
        try writer.finish()
    }

    /// The pending changes as SQL and values, step by step, in the order they must be written: deletes,
    /// inserts, updates, links, positions. Reads the objects; writes nothing itself.
    func writeSteps(_ emit: (WritePlan.Step) throws -> Void) throws {
        let stamped = storage.storesStamps && (!deletedObjects.isEmpty || !linkChanges.isEmpty) ? try stampedEntities() : []
        updatedStamps.removeAll(keepingCapacity: true)
        for (entity, rowID) in deletedObjects {
            for other in stamped.sorted() where !storage.stampClearing(of: other, referringTo: entity).isEmpty {
                try emit(.clearStampsReferring(entity: other, destination: entity, rowID: rowID))
            }
            try emit(.delete(entity: entity, rowID: rowID))
        }
        try planInserts(emit)
        try planUpdates(emit)
        try planLinks(emit, stamped: stamped)
        try planPositions(emit)
    }

    /// Clears the stamps of the rows that refer to rows of `entity` deleted by SQL (see ``RowStamps``), before they go.
    func clearStampsReferring(to entity: Int, rowIDs: [Int64]) throws {
        guard storage.storesStamps, !rowIDs.isEmpty else { return }
        for other in try stampedEntities().sorted() {
            for sql in storage.stampClearing(of: other, referringTo: entity) {
                let statement = try connection.cached(sql)
                for rowID in rowIDs {
                    try statement.bind(rowID, at: 1)
                    try statement.execute()
                }
            }
        }
    }

    /// The entities whose rows imports gave stamps (see ``RowStamps``), read from the store once per context.
    func stampedEntities() throws -> Set<Int> {
        if let stampedEntityIndexes { return stampedEntityIndexes }
        let entities = try RowStamps.stampedEntities(model, on: connection)
        stampedEntityIndexes = entities
        return entities
    }

    /// Inserts new objects, grouped by entity, several rows per statement (as a hand-written importer
    /// would): fewer statement executions for SQLite to run. Foreign keys are checked at commit, so any order
    /// is correct; parents go first (``Schema/insertOrder``) because a child row inserted before its
    /// parent costs a deferred violation, and the parent's insert then a search of the child table.
    private func planInserts(_ emit: (WritePlan.Step) throws -> Void) rethrows {
        // Objects and their states are borrowed (`insertedObjects` keeps both alive while the plan is made): a copy
        // of each is a retain and a release per inserted row, and so is every copy of a column's binder (see
        // `EntitySchema.insertBinders`).
        var byEntity: [[Int]] = Array(repeating: [], count: model.mappings.count)
        insertedObjects.withUnsafeBufferPointer { insertedObjects in
            for position in insertedObjects.indices {
                insertedObjects[position].withState { state in
                    if state.status == .inserted { byEntity[state.entityIndex].append(position) }
                }
            }
        }
        for entity in model.insertOrder where !byEntity[entity].isEmpty {
            let positions = byEntity[entity]
            let mapping = model.mappings[entity]
            let width = storage.insertWidth(entity)
            let storesStamps = storage.storesStamps
            let fits = EntitySchema.insertBatchRows * width <= maximumVariableCount
            let rowsPerStatement = fits ? EntitySchema.insertBatchRows : 1
            var start = 0
            while start < positions.count {
                let rows = positions.count - start >= rowsPerStatement ? rowsPerStatement : 1
                var values: [DatabaseValue] = []
                values.reserveCapacity(rows * width)
                // Nothing throws inside: an error thrown out of `withUnsafeBufferPointer` in a `rethrows` function
                // crashed debug builds (Swift 6.3).
                insertedObjects.withUnsafeBufferPointer { insertedObjects in
                    for position in positions[start..<(start + rows)] {
                        let object = insertedObjects[position].object
                        insertedObjects[position].withState { state in
                            values.append(.integer(state.rowID))
                            for binder in mapping.insertBinders {
                                switch binder {
                                case .attribute(let attribute):
                                    values.append(attribute._withUnsafeGuaranteedRef { $0.readValue(object) })
                                case .foreignKey(let relationship):
                                    values.append(relationship._withUnsafeGuaranteedRef { foreignKey($0, of: object, state) })
                                }
                            }
                            if storesStamps { values.append(state.stampToWrite.map(DatabaseValue.integer) ?? .null) }
                        }
                    }
                }
                try emit(.insert(entity: entity, rows: rows, values: values))
                start += rows
            }
        }
    }

    /// The stored value of a to-one relationship's foreign key: the destination's row id, or NULL.
    @inline(__always)
    private func foreignKey(_ relationship: RelationshipDescription, of object: any EntityObject, _ state: EntityState) -> DatabaseValue {
        if state.unloadedRelationships.contains(relationship.index), let rowID = state.foreignKeys[relationship.index] {
            return .integer(rowID)
        } else if let destination = relationship.getOne(object) {
            return destination.withEntityState { destinationState in
                destinationState.status == .inserted || destinationState.status == .persistent
                    ? .integer(destinationState.rowID) : .null
            }
        }
        return .null
    }

    /// The stored value of a column of `object`: an attribute, a foreign key as the destination's row id, or
    /// NULL for a position (written afterwards).
    private func value(of column: EntitySchema.Column, of object: any EntityObject, _ state: EntityState) -> DatabaseValue {
        switch column.kind {
        case .attribute(let attribute):
            return attribute.value(of: object)
        case .foreignKey(let relationship, _):
            return foreignKey(relationship, of: object, state)
        case .order:
            return .null
        }
    }

    private func planUpdates(_ emit: (WritePlan.Step) throws -> Void) rethrows {
        for tracked in updatedObjects {
            let (object, state) = (tracked.object, tracked.state)
            guard state.status == .persistent else { continue }
            let mapping = model.mappings[state.entityIndex]
            // Attributes and foreign keys set back to their stored value are not changes.
            if let stored = state.storedValues {
                for (field, value) in stored where state.changedFields.contains(field) {
                    let column = mapping.columnOfField[field]
                    if column > 0, self.value(of: mapping.columns[Int(column) - 1], of: object, state) == value {
                        state.changedFields.remove(field)
                    }
                }
            }
            // To-many lists set back to their stored members (in their order, for an ordered one): no positions to
            // write, and no links of this owner in the join table it owns (every link of the owner is as stored).
            if let stored = state.storedMembers {
                for (field, members) in stored where state.changedFields.contains(field) && !state.unloadedRelationships.contains(field) {
                    guard let relationship = mapping.relationships[field] else { continue }
                    let current = relationship.description.getMany(object).map(\.entityState.rowID)
                    // Members are distinct: the same count and every one stored is the same set (pairwise for the
                    // short lists of JSON, as `sameMembers` compares).
                    let isAsStored =
                        relationship.description.isOrdered
                        ? current == members
                        : current.count == members.count
                            && (current.count <= 16 ? current.allSatisfy(members.contains) : Set(current) == Set(members))
                    guard isAsStored else { continue }
                    state.changedFields.remove(field)
                    if case .joinTable(let table, ownerIsSource: true) = relationship.storage {
                        unchangedLinkOwners.insert(UnchangedLinkOwner(table: table, source: state.rowID))
                    }
                }
            }
            var columns = FieldSet()
            state.changedFields.forEachIndex { field in
                if mapping.columnNameOfField[field] != nil { columns.insert(field) }
            }
            let stamp = storage.storesStamps ? state.stampToWrite : nil
            // A record that changed no column still leaves its stamp, when the row does not have it yet.
            let writesStamp = stamp != nil && (!state.storedStampIsKnown || state.storedStamp != stamp)
            if columns.isEmpty && !writesStamp { continue }
            let fields = columns.indexes
            var values: [DatabaseValue] = []
            values.reserveCapacity(fields.count + 2)
            for field in fields {
                values.append(value(of: mapping.columns[Int(mapping.columnOfField[field]) - 1], of: object, state))
            }
            if storage.storesStamps {
                values.append(stamp.map(DatabaseValue.integer) ?? .null)
                updatedStamps.append((state, stamp))
            }
            values.append(.integer(state.rowID))
            try emit(.update(entity: mapping.index, fields: fields, values: values))
            // A row that leaves an ordered relationship stored by this foreign key leaves its position too (a new
            // owner's position is written by `planPositions`, when that owner's list is loaded).
            for (position, field) in fields.enumerated() {
                guard let orderColumn = mapping.orderColumnOfForeignKeyField[field], values[position] == .null else { continue }
                try emit(.setOrder(entity: mapping.index, orderColumn: orderColumn, rowID: state.rowID, position: nil))
            }
        }
    }

    /// The join-table changes: only the last change of each link counts, and none when it undoes the first (unlinking
    /// and linking again leaves the stored link; linking and unlinking again leaves no link), so the unlinks can go
    /// first and the links in multi-row INSERTs of ``JoinTable/linkBatchRows`` rows per table. In the order they were
    /// made, a decode that replaces memberships interleaves unlinks and links, and nearly every link was a one-row
    /// INSERT: at 1M reference records, 843k statements and a fifth of the writer thread's time.
    private func planLinks(_ emit: (WritePlan.Step) throws -> Void, stamped: Set<Int>) throws {
        let unchanged = unchangedLinkOwners
        unchangedLinkOwners = []
        if linkChanges.isEmpty { return }
        // Rows whose links change while their stamp stays: cleared once each (see RowStamps). By entity index,
        // not through the set: its two SipHash-hashed lookups per link change were about 1% of the decoding thread.
        let isStamped = stamped.isEmpty ? [] : model.mappings.indices.map(stamped.contains)
        var stampsCleared = Set<Row>()
        func clearStamp(_ entity: Int, _ rowID: Int64) throws {
            guard isStamped[entity] else { return }
            if let object = registries[entity][rowID] {
                let state = object.entityState
                // Its insert or update writes its stamp (or NULL), or the row has none.
                if state.status == .inserted || state.stampToWrite != nil { return }
                if state.storedStampIsKnown && state.storedStamp == nil { return }
            }
            guard stampsCleared.insert(Row(entity: entity, rowID: rowID)).inserted else { return }
            try emit(.clearStamp(entity: entity, rowID: rowID))
        }
        struct Link: Hashable {
            let table: Int
            let source: Int64
            let target: Int64

            // Hashed as IntegerKey hashes, twice chained, instead of through SipHash (a save hashes each link change
            // two or three times: 1% of the 100k import's decoding thread, callgrind); the seed enters both rounds.
            func _rawHashValue(seed: Int) -> Int {
                let first = IntegerKey(source)._rawHashValue(seed: seed ^ table)
                return IntegerKey(target ^ Int64(first))._rawHashValue(seed: seed)
            }
        }
        var lastChange = [Link: Int](minimumCapacity: linkChanges.count)
        // For a change, the link's change before it (-1 for none): filled only once a link changes twice, from what
        // `updateValue` returns, so that finding a link's first change costs no hashing of its own.
        var previousChange: [Int] = []
        for (position, change) in linkChanges.enumerated() {
            guard let previous = lastChange.updateValue(position, forKey: Link(table: change.table, source: change.source, target: change.target))
            else { continue }
            if previousChange.isEmpty { previousChange = Array(repeating: -1, count: linkChanges.count) }
            previousChange[position] = previous
        }
        let allDistinct = previousChange.isEmpty
        // Each change of a link is a real change of the memberships in memory (a list is loaded, or known empty,
        // before it changes), so a link's changes alternate between linking and unlinking, and the first one
        // starts from what is stored. A link whose last change undoes its first (linked and unlinked again, or
        // unlinked and linked again) ends as stored: nothing to write.
        /// Whether the change at `position` is the last of its link, and leaves the link other than stored.
        func isLast(_ position: Int) -> Bool {
            if allDistinct { return true }
            let change = linkChanges[position]
            guard lastChange[Link(table: change.table, source: change.source, target: change.target)] == position else { return false }
            var first = position
            while previousChange[first] >= 0 { first = previousChange[first] }
            return linkChanges[first].isLink == change.isLink
        }
        // Rows deleted in this save, and rows never written (inserted, then deleted): their links would point to
        // nothing (the foreign keys would fail the commit), and their unlinks are done by the cascade.
        var gone = Set<Row>()
        for (entity, rowID) in deletedObjects { gone.insert(Row(entity: entity, rowID: rowID)) }
        for (entity, rowID) in discardedInsertions { gone.insert(Row(entity: entity, rowID: rowID)) }
        func involvesGoneRow(_ change: LinkChange) -> Bool {
            guard !gone.isEmpty else { return false }
            let join = model.joinTables[change.table]
            return gone.contains(Row(entity: join.source, rowID: change.source)) || gone.contains(Row(entity: join.target, rowID: change.target))
        }
        var links: [[Int]] = Array(repeating: [], count: model.joinTables.count)
        for position in linkChanges.indices where isLast(position) {
            let change = linkChanges[position]
            if !unchanged.isEmpty, unchanged.contains(UnchangedLinkOwner(table: change.table, source: change.source)) { continue }
            if involvesGoneRow(change) { continue }
            if !stamped.isEmpty {
                let join = model.joinTables[change.table]
                try clearStamp(join.source, change.source)
                try clearStamp(join.target, change.target)
            }
            if change.isLink {
                links[change.table].append(position)
            } else {
                try emit(.unlink(table: change.table, source: change.source, target: change.target))
            }
        }
        for (table, changes) in links.enumerated() where !changes.isEmpty {
            let join = model.joinTables[table]
            // (change, position in the owner's list; nil for a table without positions)
            var rowsToWrite: [(change: Int, position: Int?)] = []
            rowsToWrite.reserveCapacity(changes.count)
            for index in changes {
                let change = linkChanges[index]
                guard join.hasPosition else {
                    rowsToWrite.append((index, nil))
                    continue
                }
                if let position = self.position(of: change.target, in: change.source, join) {
                    rowsToWrite.append((index, position))
                } else {
                    // Its place in the owner's list is unknown (linked from the other side, the list not loaded):
                    // appended to what is stored, not written with a NULL position (nor erasing the position of
                    // a link that exists).
                    try emit(.appendLink(table: table, source: change.source, target: change.target))
                }
            }
            var start = 0
            while start < rowsToWrite.count {
                let rows = rowsToWrite.count - start >= JoinTable.linkBatchRows ? JoinTable.linkBatchRows : 1
                var values: [DatabaseValue] = []
                values.reserveCapacity(rows * join.linkWidth)
                for row in rowsToWrite[start..<(start + rows)] {
                    let change = linkChanges[row.change]
                    values.append(.integer(change.source))
                    values.append(.integer(change.target))
                    if join.hasPosition { values.append(row.position.map { .integer(Int64($0)) } ?? .null) }
                }
                try emit(.link(table: table, rows: rows, values: values))
                start += rows
            }
        }
    }

    /// A row of an entity, in a save's bookkeeping.
    private struct Row: Hashable {
        let entity: Int
        let rowID: Int64
    }

    /// The position of `target` in the loaded ordered relationship of `source` that owns `join`.
    private func position(of target: Int64, in source: Int64, _ join: JoinTable) -> Int? {
        guard let owner = registries[join.source][source] else { return nil }
        let mapping = model.mappings[join.source]
        for case let relationship? in mapping.relationships {
            guard case .joinTable(join.index, ownerIsSource: true) = relationship.storage else { continue }
            if owner.entityState.unloadedRelationships.contains(relationship.description.index) { return nil }
            return relationship.description.getMany(owner).firstIndex { $0.entityState.rowID == target }
        }
        return nil
    }

    /// Positions of ordered relationships whose order changed on stored objects.
    private func planPositions(_ emit: (WritePlan.Step) throws -> Void) rethrows {
        for tracked in updatedObjects {
            let (object, state) = (tracked.object, tracked.state)
            guard state.status == .persistent else { continue }
            let mapping = model.mappings[state.entityIndex]
            try state.changedFields.forEachIndex { field in
                guard let relationship = mapping.relationships[field], relationship.description.isOrdered,
                    !state.unloadedRelationships.contains(field)
                else { return }
                let members = relationship.description.getMany(object)
                switch relationship.storage {
                case .inverseForeignKey(_, let orderColumn?):
                    try planOrderColumn(orderColumn, of: members, in: model.mappings[relationship.destination], emit)
                case .joinTable(let index, ownerIsSource: true) where model.joinTables[index].hasPosition:
                    for (position, member) in members.enumerated() {
                        try emit(
                            .setLinkPosition(table: index, source: state.rowID, target: member.entityState.rowID, position: Int64(position)))
                    }
                default:
                    return
                }
            }
        }
        // Positions of new objects' ordered relationships stored by a foreign key.
        guard model.hasOrderedForeignKeyRelationships else { return }
        for tracked in insertedObjects where tracked.state.status == .inserted {
            let (object, state) = (tracked.object, tracked.state)
            let mapping = model.mappings[state.entityIndex]
            if !mapping.hasRelationships { continue }
            for case let relationship? in mapping.relationships {
                guard case .inverseForeignKey(_, let orderColumn?) = relationship.storage else { continue }
                let members = relationship.description.getMany(object)
                if members.isEmpty { continue }
                try planOrderColumn(orderColumn, of: members, in: model.mappings[relationship.destination], emit)
            }
        }
    }

    /// Each member's position in an ordered one-to-many relationship, written into its order column.
    private func planOrderColumn(_ orderColumn: String, of members: [any EntityObject], in destination: EntitySchema, _ emit: (WritePlan.Step) throws -> Void) rethrows {
        for (position, member) in members.enumerated() {
            noteUse(member, member.entityState)  // its row is written: held while the plan waits
            try emit(.setOrder(entity: destination.index, orderColumn: orderColumn, rowID: member.entityState.rowID, position: Int64(position)))
        }
    }
}
