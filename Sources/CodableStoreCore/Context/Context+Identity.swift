/// The identity map: how upserts find objects by identity. An ``IdentityKey`` per object; per entity an
/// ``IdentityIndex`` of the context's objects by key (with the keys the store is known not to have), filled in
/// batches with one query per entity and chunk, so decoding an array never queries once per element; and, when
/// something knows them (an import into an empty table), the ``StoredKeys`` of an entity.
///
/// Three things say "not stored", each where the others cannot: the index's `isComplete` (its table was empty when it
/// was made, and it still holds every object: a key not in it is not stored), its `missing` marks (keys asked of the
/// store and not found there, in a table that was not empty), and the entity's ``StoredKeys`` (an import's set of the
/// keys it inserted into an empty table, which survives the evictions that make the index incomplete).
extension Context {
    /// Keys of one entity that may be stored: every stored key of the entity is one it may contain, so a key it rules
    /// out is not stored. The context asks it for keys its identity index cannot answer, and tells it of every key it
    /// inserts. An import into an empty table gives one (its filter of the keys it inserted) through
    /// ``storedKeys``; the context drops it when an identity changes in memory.
    package protocol StoredKeys: AnyObject {
        /// Whether `key` may be stored (false: it is not).
        func mayContain(_ key: IdentityKey) -> Bool
        /// The context inserted an object with this key.
        func insert(_ key: IdentityKey)
    }

    /// The identity values of one object: one value for a single identity, several for a composite one.
    package struct IdentityKey: Hashable, Sendable {
        // A single identity value is stored inline: no array to allocate, hash or compare per lookup.
        // Usable from inlinable code: the import's identity filter reads `singleInteger` for every key it is asked about.
        @usableFromInline let first: DatabaseValue
        @usableFromInline let rest: [DatabaseValue]?

        package init(_ values: [DatabaseValue]) {
            self.first = values.first ?? .null
            self.rest = values.count > 1 ? Array(values.dropFirst()) : nil
        }

        @inlinable
        package init(single value: DatabaseValue) {
            self.first = value
            self.rest = nil
        }

        /// An identity value of `kind` (`.int` or `.string`) at `node`, as the decoder's general path reads it
        /// first (see `StoreDecoderImpl.decodeAttributeValue`); nil for anything else (another kind of value, a
        /// number out of range, `null`), which only that path decides.
        @inline(__always)
        init?(scalar kind: AttributeDescription.FastKind, at node: JSONTape.Index, in tape: JSONTape) {
            switch (kind, tape.kind(of: node)) {
            case (.int, .number):
                guard let integer = (try? tape.int64(at: node)) ?? nil else { return nil }
                self.init(single: .integer(integer))
            case (.string, .string):
                self.init(single: .text(tape.string(at: node) ?? ""))
            default:
                return nil
            }
        }

        var count: Int { 1 + (rest?.count ?? 0) }

        /// The value of a single integer identity.
        @inlinable
        package var singleInteger: Int64? {
            if rest == nil, case .integer(let value) = first { return value }
            return nil
        }

        var values: [DatabaseValue] { [first] + (rest ?? []) }

        /// The value at `position` of ``values``, without making the array.
        func value(at position: Int) -> DatabaseValue { position == 0 ? first : rest.unsafelyUnwrapped[position - 1] }

        // The hashing entry point of `Set` and `Dictionary` (see IntegerKey): a single integer, the common
        // identity, is hashed as IntegerKey hashes it, not through SipHash; equal keys take the same branch.
        package func _rawHashValue(seed: Int) -> Int {
            if rest == nil, case .integer(let value) = first { return IntegerKey(value)._rawHashValue(seed: seed) }
            var hasher = Hasher()
            hasher.combine(seed)
            hash(into: &hasher)
            return hasher.finalize()
        }

        /// Calls `body` with each value, in identity order, without building an array.
        func forEach(_ body: (DatabaseValue) throws -> Void) rethrows {
            try body(first)
            if let rest { for value in rest { try body(value) } }
        }
    }

    /// Identity lookup state of one entity: per identity, the object, or the fact that the store does not
    /// have it (until an object with that identity is inserted). One table, so that a lookup, a prefetch
    /// and an insert each cost one hash of the key.
    final class IdentityIndex {
        enum Entry {
            case object(TrackedObject)
            case missing
        }
        @exclusivity(unchecked) var entries = Table()  // see Context.registries
        /// Whether every stored object of the entity is in `entries`: its table was empty when the index was
        /// made and every insert since went through the index. A key not in `entries` is then missing, and
        /// nothing needs to be asked of the store (decoding into an empty store, a first sync).
        @exclusivity(unchecked) var isComplete = false
        /// In an import's context, which lets go of objects between batches, the keys marked missing since the
        /// last ``forgetMissingKeys()`` (nil elsewhere): a mark is forgotten with the batch that made it, as the
        /// objects are, so that marks do not pile up over a long import.
        @exclusivity(unchecked) var markedMissing: [IdentityKey]?

        /// Marks `key` missing in `entry` (an entry of `entries`), remembering it when marks are forgotten.
        @inline(__always)
        func markMissing(_ entry: inout Entry?, _ key: IdentityKey) {
            entry = .missing
            markedMissing?.append(key)
        }

        /// Removes the missing marks made since the last call (see ``markedMissing``).
        func forgetMissingKeys() {
            guard let keys = markedMissing, !keys.isEmpty else { return }
            for key in keys {
                entries.update(key) { entry in
                    if case .missing? = entry { entry = nil }
                }
            }
            markedMissing = []
        }

        /// Entries by key. Single integer identities, the most common kind, have a table of their own keyed by
        /// the integer: hashing one word instead of a key struct, and entries a third the size.
        struct Table {
            private var integers: [IntegerKey: Entry] = [:]
            private var others: [IdentityKey: Entry] = [:]

            init() {}

            /// An empty table with room for `count` entries of the kind `like` holds, so that refilling it batch
            /// after batch does not grow (and rehash) it again each time.
            init(roomFor count: Int, like other: Table) {
                if other.others.isEmpty {
                    integers.reserveCapacity(count)
                } else {
                    others.reserveCapacity(count)
                }
            }

            var count: Int { integers.count + others.count }

            subscript(key: IdentityKey) -> Entry? {
                get {
                    if let integer = key.singleInteger { return integers[integer] }
                    return others[key]
                }
                set {
                    if let integer = key.singleInteger {
                        integers[integer] = newValue
                    } else {
                        others[key] = newValue
                    }
                }
            }

            mutating func updateValue(_ value: Entry, forKey key: IdentityKey) -> Entry? {
                if let integer = key.singleInteger { return integers.updateValue(value, forKey: integer) }
                return others.updateValue(value, forKey: key)
            }

            /// Reads and changes the entry of `key` in place: one hash of the key, where a read then a write
            /// costs two.
            @inline(__always)
            mutating func update<Result>(_ key: IdentityKey, _ body: (inout Entry?) -> Result) -> Result {
                if let integer = key.singleInteger { return body(&integers[integer]) }
                return body(&others[key])
            }
        }
    }

    /// The identity index of an entity, made on first use.
    ///
    /// - Throws: the error of reading whether the table is empty. It is never swallowed: after an I/O error or
    ///   a full disk SQLite has rolled the transaction back, and the save would go on outside it.
    func identityIndex(_ entity: Int) throws -> IdentityIndex {
        if let index = identityIndexes[entity] { return index }
        // A write context holds the write lock: rows appear only through its own inserts, which this index
        // sees from now on. So an empty table, with no object of the entity held yet, makes it complete.
        let isComplete = try !isReadOnly && registries[entity].isEmpty && isTableEmpty(entity)
        let index = IdentityIndex()
        index.isComplete = isComplete
        if deferredWriter != nil { index.markedMissing = [] }
        identityIndexes[entity] = index
        // Objects held before the index existed answer for their identities: those inserted and not written yet,
        // since lookups do not write them first (see `lookUp`), and stored ones, since a held object is newer than
        // its row (see `adoptLookup`).
        let mapping = model.mappings[entity]
        if !mapping.identityColumns.isEmpty {
            for object in registries[entity].values {
                index.entries[identityKey(of: object, mapping)] = .object(TrackedObject(object))
            }
        }
        return index
    }

    /// Whether the entity's table has no row.
    package func isTableEmpty(_ entity: Int) throws -> Bool {
        let statement = try connection.cached(storage.anyRow(model.mappings[entity]))
        defer { statement.reset() }
        return try !statement.step()
    }

    /// The identity of an object, from its current attribute values.
    func identityKey(of object: any EntityObject, _ mapping: EntitySchema) -> IdentityKey {
        let identity = mapping.description.identity
        if identity.count == 1, case .attribute(let attribute) = mapping.description.fields[identity[0]] {
            return IdentityKey(single: attribute.value(of: object))
        }
        return IdentityKey(identity.map { field in
            guard case .attribute(let attribute) = mapping.description.fields[field] else { return .null }
            return attribute.value(of: object)
        })
    }

    /// Whether an indexed object still answers to `key`: inserted or stored, and not re-identified since.
    private func isCurrent(_ object: any EntityObject, _ state: EntityState, _ key: IdentityKey, _ entity: Int) -> Bool {
        return (state.status == .inserted || state.status == .persistent)
            && (!state.identityMayHaveChanged || identityKey(of: object, model.mappings[entity]) == key)
    }

    /// The object with this identity if it is known without a query: in the index (and still carrying that
    /// identity), or known to be missing from the store. `nil` result with `isKnown == false` means the
    /// store must be asked.
    func cachedObject(entity: Int, key: IdentityKey) -> (object: TrackedObject?, isKnown: Bool) {
        guard let index = identityIndexes[entity] else { return (nil, false) }
        switch index.entries[key] {
        case .object(let tracked):
            let current = tracked.withState { state in
                guard isCurrent(tracked.object, state, key, entity) else { return false }
                noteUse(tracked.object, state)
                return true
            }
            if current { return (tracked, true) }
            // Its identity changed, or it was deleted: the store decides.
            index.entries[key] = nil
            return (nil, false)
        case .missing:
            return (nil, true)
        case nil:
            return (nil, index.isComplete || storedKeys[entity]?.mayContain(key) == false)
        }
    }

    /// Whether an object in memory answers for this identity (without noting its use, unlike ``cachedObject(entity:key:)``).
    package func holdsObject(entity: Int, key: IdentityKey) -> Bool {
        guard case .object(let tracked)? = identityIndexes[entity]?.entries[key] else { return false }
        return tracked.withState { isCurrent(tracked.object, $0, key, entity) }
    }

    /// Looks up many identities of one entity with as few queries as possible (one per chunk of keys),
    /// registering the objects found and remembering the keys that are not stored.
    func prefetch(entity: Int, keys: some Sequence<IdentityKey>) throws {
        let mapping = model.mappings[entity]
        let arity = mapping.identityColumns.count
        guard arity > 0 else { return }
        let index = try identityIndex(entity)
        if index.isComplete { return }  // what is not in the index is not stored
        // Unknown keys are marked missing as they are collected (one hash per key, duplicates included);
        // the query below replaces the marks of the keys the store has.
        var pending: [IdentityKey] = []
        let filter = storedKeys[entity]
        let skipsUnchanged = entity == unchangedRowsEntity && !unchangedRows.isEmpty
        for key in keys where key.count == arity {
            // A record skipped as unchanged needs no object (see takeUnchangedRow).
            if skipsUnchanged, unchangedRows[key] != nil { continue }
            let ask = index.entries.update(key) { entry -> Bool in
                switch entry {
                case nil:
                    index.markMissing(&entry, key)
                    return filter?.mayContain(key) != false
                case .missing:
                    return false
                case .object(let tracked):
                    if tracked.withState({ isCurrent(tracked.object, $0, key, entity) }) { return false }
                    index.markMissing(&entry, key)
                    return true
                }
            }
            if ask { pending.append(key) }
        }
        if pending.isEmpty { return }
        do {
            try lookUp(pending, mapping, index)
        } catch {
            for key in pending { index.entries[key] = nil }  // not known after all
            throw error
        }
    }

    /// Reads the objects of these keys from the store, replacing their provisional `missing` marks.
    private func lookUp(_ pending: [IdentityKey], _ mapping: EntitySchema, _ index: IdentityIndex) throws {
        // Unwritten changes alter the answer only when they delete rows or change identities: new objects are in
        // the index already, and a row whose object is in memory is answered by that object. Not writing the
        // others here keeps a large decode from writing every batch, and values a later batch changes again.
        if !deletedObjects.isEmpty || hasUnwrittenIdentityChanges { try flush() }
        // Keys no object in memory answers: rows a writer thread may still be writing are all of objects in
        // memory (see ``DeferredWriter``), so this query need not wait for it.
        try withSharedConnection { connection in
            try storage.lookUp(pending, entity: mapping.index, maximumVariableCount: maximumVariableCount) { sql in
                try connection.cached(sql)
            } row: { statement in
                let object = try object(for: mapping, statement: statement)
                index.entries[identityKey(of: object, mapping)] = .object(TrackedObject(object))
            }
        }
    }

    /// Takes the rows of lookups a writer thread ran ahead of time (a ``Lookahead``), waiting
    /// for them. A row becomes an object unless the context holds that row's object already: a held object is
    /// newer than the row (the writer may not have written its changes yet). A requested key with neither a
    /// row nor an object is missing.
    ///
    /// Memberships loaded with the first entity's rows are set on the objects made here (a held object's may
    /// be newer), as if loaded with ``loadToManyBatch(_:_:)``.
    package func adoptLookup(_ lookup: Lookahead) throws {
        try deferredWriter?.waitForLookup(lookup)
        var made: [IntegerKey: any EntityObject] = [:]
        unchangedRows.removeAll(keepingCapacity: true)
        unchangedRowsEntity = -1
        for (position, (entry, rows)) in zip(lookup.keys, lookup.rows).enumerated() {
            let mapping = model.mappings[entry.entity]
            let index = try identityIndex(entry.entity)
            if position == 0 {
                for (key, rowID) in zip(lookup.unchangedKeys, lookup.unchangedRowIDs) {
                    if let held = registries[entry.entity][rowID] {
                        index.entries[identityKey(of: held, mapping)] = .object(TrackedObject(held))
                    } else {
                        // Stored as the batch's record would write it: the record is skipped, and no object made
                        // (see RowStamps). Not marked missing below, nor looked up by the prefetch.
                        unchangedRows[key] = rowID
                        unchangedRowsEntity = entry.entity
                    }
                }
            }
            let stamps = position == 0 && !lookup.stamps.isEmpty ? lookup.rowStamps : nil
            for row in 0..<rows.count {
                let values = rows[row]
                guard case .integer(let rowID) = values.first else { continue }
                if let held = registries[entry.entity][rowID] {
                    // Newer than its row, the held object answers for its identity (one a membership load made, or
                    // one held before the index was made, may not be indexed yet).
                    index.entries[identityKey(of: held, mapping)] = .object(TrackedObject(held))
                    continue
                }
                let object = try makeStoredObject(for: mapping, rowID: rowID, row: values)
                let state = object.entityState
                index.entries[identityKey(of: object, mapping)] = .object(TrackedObject(object, state))
                if let stamps {
                    state.storedStamp = stamps[row]
                    state.storedStampIsKnown = true
                }
                if position == 0 { made[rowID] = object }
            }
            let skipsUnchanged = position == 0 && !unchangedRows.isEmpty
            for key in entry.keys where !skipsUnchanged || unchangedRows[key] == nil {
                index.entries.update(key) { if $0 == nil { index.markMissing(&$0, key) } }
            }
        }
        guard let first = lookup.keys.first, !made.isEmpty else { return }
        let mapping = model.mappings[first.entity]
        for (field, rows) in zip(lookup.memberships, lookup.membershipRows) {
            guard let relationship = mapping.relationships[field] else { continue }
            let destination = model.mappings[relationship.destination]
            var members: [IntegerKey: [any EntityObject]] = [:]
            for row in 0..<rows.count {
                let row = rows[row]
                guard case .integer(let owner) = row.first, made[owner] != nil else { continue }
                members[owner, default: []].append(try object(for: destination, row: row.dropFirst()))
            }
            for (rowID, owner) in made where owner.entityState.unloadedRelationships.contains(field) {
                owner.entityState.unloadedRelationships.remove(field)
                relationship.description.setMany(owner, members[rowID] ?? [])
            }
        }
    }

    /// The row id of a record the batch's lookahead found stored as the record would write it (see ``RowStamps``),
    /// taken once; nil when there is none, or an object of that row or identity is in memory since (it may have
    /// changed: the record is then decoded).
    func takeUnchangedRow(entity: Int, key: IdentityKey) -> Int64? {
        guard entity == unchangedRowsEntity, let rowID = unchangedRows.removeValue(forKey: key) else { return nil }
        if registries[entity][rowID] != nil { return nil }
        if case .object? = identityIndexes[entity]?.entries[key] { return nil }
        return rowID
    }

    /// Gives `object`, just decoded from a record of stamp `stamp` (the import's, see ``RowStamps``), that
    /// stamp: written with its row unless something changes it before.
    func applyStamp(_ object: any EntityObject, _ state: EntityState, _ stamp: Int64) {
        state.pendingStamp = stamp
        state.stampChangeCount = state.changeCount
        guard state.status == .persistent, !state.isScheduledForUpdate else { return }
        if state.storedStampIsKnown && state.storedStamp == stamp { return }
        // Nothing else changed: the row still needs the stamp.
        state.isScheduledForUpdate = true
        updatedObjects.append(TrackedObject(object, state))
    }

    /// The object with this identity: from memory when known, else with one query.
    func object(entity: Int, identity key: IdentityKey) throws -> (any EntityObject)? {
        try trackedObject(entity: entity, identity: key)?.object
    }

    /// ``object(entity:identity:)`` with the object's state.
    func trackedObject(entity: Int, identity key: IdentityKey) throws -> TrackedObject? {
        let cached = cachedObject(entity: entity, key: key)
        if cached.isKnown { return cached.object }
        try prefetch(entity: entity, keys: [key])
        return cachedObject(entity: entity, key: key).object
    }

    /// Creates and inserts a new object from values by field index (relationship slots are ignored).
    func makeObject(entity: Int, values: [DatabaseValue], identity: IdentityKey?) throws -> TrackedObject {
        let mapping = model.mappings[entity]
        let object = try mapping.description.makeObject(EntityRow(values: values, mapping: mapping, decoded: true))
        return try insertCreated(object, mapping, identity: identity)
    }
}
