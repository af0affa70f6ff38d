/// Going back to the last save: ``Context/rollback()``.
///
/// What a save wrote stays; what was written since (a query writes pending changes first, so that it sees them)
/// is in a savepoint of its own, opened by the first such write after a save and released by the next save
/// (`codablestore_unsaved`). A rollback undoes that savepoint, then gives every object the context holds its row's
/// values again, so the objects stay usable.
extension Context {
    /// The savepoint that holds what flushes wrote since the last save.
    static let unsavedWritesSavepoint = "codablestore_unsaved"

    /// The bookkeeping a rollback goes back to, as it was at the last save.
    struct SavedBookkeeping {
        var writeCounts: [Int: (inserted: Int, updated: Int)] = [:]
        var touchedEntities = Set<Int>()
        var deferredReferences = DeferredReferences(pending: [:], count: 0)
    }

    /// Discards the changes made since the last save, saved nothing of them, and goes on: what was saved before
    /// stays (and is committed when the write ends), and every object the context holds is usable, with its saved
    /// values.
    ///
    /// ```swift
    /// try store.write { context in
    ///     try apply(firstBatch, in: context)
    ///     try context.save()                                  // kept
    ///     try apply(secondBatch, in: context)
    ///     if try !isConsistent(context) { try context.rollback() }   // the second batch is gone, the first stays
    /// }
    /// ```
    /// As Core Data's `rollback()`: objects inserted since the last save leave the context (they are transient
    /// again, and may be inserted anew); objects deleted since are back; changed objects have their saved values
    /// again, and their relationships are read from the store again on first use. Changes written since the last
    /// save by a query (a context writes what is pending before each query, so that the query sees it) are undone
    /// too: only ``save()``, the end of ``Store/write(_:)-2mz68``, ``inSavepoint(_:)`` and an import's batches save.
    ///
    /// To abandon the whole write instead, saved changes included, throw out of the `write` closure: nothing of it
    /// is committed. For a part that may fail alone, use ``inSavepoint(_:)``.
    /// - Throws: ``StoreError`` for a read-only context or inside ``inSavepoint(_:)``; the store's error when it
    ///   cannot go back (the database rolled the whole transaction back by itself after an I/O error or a full disk:
    ///   nothing of the write is left then), or cannot read the saved rows again.
    public func rollback() throws {
        if isReadOnly { throw StoreError.readOnly("rollback") }
        guard savepointDepth == 0 else {
            throw StoreError(
                .invalidObject,
                "rollback() cannot run inside inSavepoint: throw from the savepoint's closure to undo what it did, or call rollback() after it")
        }
        precondition(deferredWriter == nil, "a rollback while a writer thread writes behind")
        // The database may have ended the transaction by itself after an error (SQLite, after an I/O error or a full
        // disk): nothing to go back to. A PostgreSQL transaction aborted by a failed statement is usable again after
        // the rollback to the savepoint.
        if !connection.isInsideTransaction { try connection.checkInsideTransaction(function: "rollback()") }
        if unsavedWritesMark != nil {
            unsavedWritesMark = nil
            try connection.rollbackToSavepoint(named: Self.unsavedWritesSavepoint)
        }
        try restoreSavedObjects()
        writeCounts = lastSave.writeCounts
        touchedEntities = lastSave.touchedEntities
        deferredReferences = lastSave.deferredReferences
    }

    /// What a transaction that may run again goes back to (see ``restore(_:)``).
    package struct TransactionMark {
        fileprivate let bookkeeping: SavedBookkeeping
        fileprivate let unchangedRecordsSkipped: Int
    }

    /// The counts and deferred references as they are now, between two transactions (an import's batches committed
    /// one by one), for a transaction that may have to run again.
    package func transactionMark() -> TransactionMark {
        TransactionMark(
            bookkeeping: SavedBookkeeping(writeCounts: writeCounts, touchedEntities: touchedEntities, deferredReferences: deferredReferences),
            unchangedRecordsSkipped: unchangedRecordsSkipped)
    }

    /// After the transaction begun at `mark` was rolled back: lets go of every object, as ``reset()`` does, and goes
    /// back to the mark's counts and deferred references, so that the transaction can run again from its start.
    package func restore(_ mark: TransactionMark) {
        reset()
        unsavedWritesMark = nil
        writeCounts = mark.bookkeeping.writeCounts
        touchedEntities = mark.bookkeeping.touchedEntities
        deferredReferences = mark.bookkeeping.deferredReferences
        unchangedRecordsSkipped = mark.unchangedRecordsSkipped
        lastSave = mark.bookkeeping
        // What another writer committed meanwhile is read again.
        stampedEntityIndexes = nil
    }

    /// Opens the savepoint of the writes since the last save, before a flush that is not a save writes.
    func markUnsavedWrites() throws {
        guard unsavedWritesMark == nil else { return }
        try connection.beginSavepoint(named: Self.unsavedWritesSavepoint)
        unsavedWritesMark = savepointDepth
    }

    /// Moves the point a rollback goes back to here: what flushes wrote since the last save is saved.
    func didSave() throws {
        if let mark = unsavedWritesMark, mark == savepointDepth {
            unsavedWritesMark = nil
            try connection.releaseSavepoint(named: Self.unsavedWritesSavepoint)
        }
        // An import's writer thread cannot be rolled back to (see `rollback()`): no bookkeeping to keep for it.
        guard deferredWriter == nil else { return }
        lastSave = SavedBookkeeping(writeCounts: writeCounts, touchedEntities: touchedEntities, deferredReferences: deferredReferences)
    }

    /// After the store went back to the last save: every object held, or deleted since, takes its row's values
    /// again (a registered object first, should a deleted one have had the same row id); one whose row is gone
    /// (inserted since) leaves the context. Every pending change and what the context derived from its objects
    /// (identity indexes, row ids to come) is forgotten.
    private func restoreSavedObjects() throws {
        var candidates: [[any EntityObject]] = Array(repeating: [], count: model.mappings.count)
        for (entity, registry) in registries.enumerated() { candidates[entity].append(contentsOf: registry.values) }
        for object in detachedObjects {
            let state = object.entityState
            if state.status == .deleted, state.context === self { candidates[state.entityIndex].append(object) }
        }
        registries = Array(repeating: [:], count: model.mappings.count)
        identityIndexes = Array(repeating: nil, count: model.mappings.count)
        forgetRowIDs()
        storedKeys = Array(repeating: nil, count: model.mappings.count)
        insertedObjects = []
        updatedObjects = []
        deletedObjects = []
        discardedInsertions = []
        detachedObjects = []
        linkChanges = []
        readyReferences = []
        unchangedLinkOwners = []
        updatedStamps = []
        unchangedRows = [:]
        unchangedRowsEntity = -1
        deferredError = nil
        hasUnwrittenIdentityChanges = false
        for entity in candidates.indices where !candidates[entity].isEmpty {
            let mapping = model.mappings[entity]
            let rows = try storedRows(of: candidates[entity], mapping)
            for object in candidates[entity] {
                let state = object.entityState
                if state.status != .transient, let values = rows[state.rowID], registries[entity][state.rowID] == nil {
                    try restore(object, state, mapping, from: values)
                } else {
                    detach(object, state, mapping)
                    state.status = .transient
                    state.rowID = 0
                    forgetChanges(state)
                }
            }
        }
    }

    /// The stored rows of `objects`, by row id: values by field index (attributes, and to-one foreign keys).
    private func storedRows(of objects: [any EntityObject], _ mapping: EntitySchema) throws -> [Int64: [DatabaseValue]] {
        var seen = Set<Int64>()
        let rowIDs = objects.compactMap { object -> Int64? in
            let rowID = object.entityState.rowID
            return rowID != 0 && seen.insert(rowID).inserted ? rowID : nil
        }
        var rows: [Int64: [DatabaseValue]] = [:]
        let fields = mapping.description.fields.count
        try forEachStoredRow(of: mapping, rowIDs: rowIDs) { statement in
            var values = Array(repeating: DatabaseValue.null, count: fields)
            for field in 0..<fields where mapping.columnOfField[field] > 0 {
                values[field] = statement.value(at: mapping.columnOfField[field])
            }
            rows[statement.int64(at: 0)] = values
        }
        return rows
    }

    /// Gives `object` the values of its stored row, as if just read: persistent, unchanged, its relationships
    /// unloaded (a to-one keeps its stored foreign key).
    private func restore(_ object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, from values: [DatabaseValue]) throws {
        state.context = self
        state.entityIndex = mapping.index
        state.status = .persistent
        forgetChanges(state)
        for attribute in mapping.description.attributes where mapping.columnOfField[attribute.index] > 0 {
            do {
                try attribute.writeValue(object, values[attribute.index])
            } catch {
                throw StoreError(
                    .invalidObject, "\(mapping.name).\(attribute.name): the stored value \(values[attribute.index]) does not fit: \(error)",
                    entity: mapping.name, field: attribute.name)
            }
        }
        state.unloadedRelationships = FieldSet()
        state.foreignKeys = ForeignKeys()
        mapping.forEachRelationship { relationship in
            let field = relationship.description.index
            relationship.description.setMany(object, [])
            if case .foreignKey = relationship.storage {
                // NULL: loaded, and nil.
                guard case .integer(let key) = values[field] else { return }
                state.foreignKeys[field] = key
            }
            state.unloadedRelationships.insert(field)
        }
        registries[mapping.index][state.rowID] = object
    }

    private func forgetChanges(_ state: EntityState) {
        state.changedFields.removeAll()
        state.storedValues = nil
        state.storedMembers = nil
        state.isScheduledForUpdate = false
        state.identityMayHaveChanged = false
        state.pendingStamp = nil
        state.storedStampIsKnown = false
    }
}
