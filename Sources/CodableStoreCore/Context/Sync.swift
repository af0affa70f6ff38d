/// The objects a payload is the whole truth for: a sync import or decode deletes the objects of the scope that
/// were stored before it and whose identity the payload does not have.
///
/// ```swift
/// // The dump holds every issue of the repository: issues of it that the dump no longer has are deleted.
/// let report = try store.importJSON(Issue.self, from: .file("issues.json"), syncing: .matching(\.repository == "apple/swift"))
/// report.sync?.deleted   // 12
/// ```
///
/// An identity is present when the payload has it anywhere: as a record, as a nested object, or as a reference
/// (`"parent": 7`), decoded by the decoder (an object your own hook looks up in the context is not seen). The scope
/// is evaluated once the payload is written, over the rows stored before it, and before anything is deleted: an
/// object the payload moved out of the scope is present anyway, and one the payload changed without having it (a
/// parent's replaced `children` clearing the child's `parent`) is judged by its new values. Deletions apply the entity's ``DeleteRule``s and happen in the transaction
/// that writes the payload, after it; a cascade never deletes an object the payload has (its relationship to the
/// deleted one is cleared instead), and a deny that would stop a deletion fails the whole sync. A payload that
/// fails, or an import that skipped a record, deletes nothing (see `ImportReport/Sync/withheldReason`). Objects
/// the payload itself created are never deleted. The entity needs an identity.
///
/// The identities seen are kept as a bitmap over the entity's row ids: about one bit per row id up to the
/// largest (125 KB for a million rows), and at most 8 KiB for each range of 65,536 row ids that holds a present
/// object, whatever the size of the payload; the missing ones take a second bitmap of the same kind. Deleting reads
/// the scope's row ids a page at a time.
public struct SyncScope<Root: EntityObject>: Sendable {
    let predicate: EntityPredicate<Root>?

    /// Every stored object of the entity.
    public static var all: SyncScope { SyncScope(predicate: nil) }

    /// Every stored object of the entity (where the type cannot be inferred: `.all(Issue.self)`).
    public static func all(_ type: Root.Type) -> SyncScope { SyncScope(predicate: nil) }

    /// The stored objects that match `predicate`, such as the issues of one repository.
    public static func matching(_ predicate: EntityPredicate<Root>) -> SyncScope { SyncScope(predicate: predicate) }
}

/// A set of row ids as a two-level bitmap: chunks of 65,536 bits (8 KiB), made when a row id in their range is
/// added. Row ids are dense (the store gives each new row the next one), so a million rows take 16 chunks.
package struct RowIDSet {
    private static let chunkShift = 16
    private static let wordsPerChunk = (1 << chunkShift) / 64
    private var chunks: [Int64: [UInt64]] = [:]
    /// The number of row ids in the set.
    package private(set) var count = 0

    /// Adds `rowID`; returns whether it was not in the set yet.
    @discardableResult
    mutating func insert(_ rowID: Int64) -> Bool {
        let (chunk, word, bit) = Self.position(of: rowID)
        let mask: UInt64 = 1 << bit
        let wasAbsent = chunks[chunk, default: Array(repeating: 0, count: Self.wordsPerChunk)].withUnsafeMutableBufferPointer {
            words in
            let absent = words[word] & mask == 0
            words[word] |= mask
            return absent
        }
        if wasAbsent { count += 1 }
        return wasAbsent
    }

    func contains(_ rowID: Int64) -> Bool {
        let (chunk, word, bit) = Self.position(of: rowID)
        guard let words = chunks[chunk] else { return false }
        return words[word] & (1 << bit) != 0
    }

    /// Calls `body` with every row id in the set, in ascending order.
    func forEach(_ body: (Int64) throws -> Void) rethrows {
        for chunk in chunks.keys.sorted() {
            let words = chunks[chunk]!
            for (index, word) in words.enumerated() where word != 0 {
                var bits = word
                while bits != 0 {
                    let bit = Int64(bits.trailingZeroBitCount)
                    try body(chunk << Int64(Self.chunkShift) | Int64(index) << 6 | bit)
                    bits &= bits &- 1
                }
            }
        }
    }

    /// Bytes held by the bitmap (the chunks' words).
    var byteCount: Int { chunks.count * Self.wordsPerChunk * 8 }

    @inline(__always)
    private static func position(of rowID: Int64) -> (chunk: Int64, word: Int, bit: UInt64) {
        let chunk = rowID >> Int64(chunkShift)
        let offset = Int(rowID & Int64((1 << chunkShift) - 1))
        return (chunk, offset >> 6, UInt64(offset & 63))
    }
}

/// One sync's state while its payload is decoded: the synced entity, the row ids that were stored before, and
/// the row ids the payload has (see ``SyncScope``).
package final class SyncTracker {
    let mapping: EntitySchema
    /// Rows up to this row id were stored before the payload; the rows after it, the payload made.
    let existingUpTo: Int64
    package var seen = RowIDSet()

    init(mapping: EntitySchema, existingUpTo: Int64) {
        self.mapping = mapping
        self.existingUpTo = existingUpTo
    }

    /// Notes an object of the synced entity that the payload has.
    @inline(__always)
    func saw(_ state: EntityState) {
        if state.rowID <= existingUpTo { seen.insert(state.rowID) }
    }
}

extension Context {
    /// Starts tracking a sync of `mapping`'s entity: from now on, the row ids present in the stored table are the
    /// ones a sync may delete.
    package func startSync(of mapping: EntitySchema) throws -> SyncTracker {
        // Checked before the payload is decoded, not once it is written.
        guard !mapping.identityColumns.isEmpty else {
            throw StoreError(
                .invalidObject,
                "cannot sync \(mapping.name): it has no identity, so no stored object can be recognized in a payload",
                entity: mapping.name)
        }
        try flush()
        let statement = try connection.cached(storage.largestRowID(mapping))
        defer { statement.reset() }
        _ = try statement.step()
        return SyncTracker(mapping: mapping, existingUpTo: statement.int64(at: 0))
    }

    /// Deletes the objects of `scope` that were stored before the sync began and that it did not see, applying
    /// delete rules; returns the number of objects deleted per entity index (cascades included) and how many of the
    /// synced entity were missing.
    ///
    /// First the scope's row ids are read (a page at a time) into a bitmap of the missing ones, so that the scope is
    /// what it was before any deletion (a deletion can clear a foreign key that the scope's predicate reads). Then
    /// they are deleted a page at a time: objects in this context as ``delete(_:)`` deletes them; the others, when
    /// the entity has no rules beyond nullify, by row id in one statement per page (the store's foreign keys clear
    /// what points to them). Rules never reach an object of the entity that the payload has (a cascade stops there,
    /// a deny holds), and a deny counts the missing objects of later pages as deleted. Every change is flushed;
    /// `releasingObjects` forgets the objects between pages (an import, whose context holds nothing the caller kept).
    /// Without `releasingObjects` (a decode into the caller's context), the deletions run in a savepoint: a denial
    /// leaves nothing deleted.
    package func deleteUnseen<T: EntityObject>(
        _ tracker: SyncTracker, scope: SyncScope<T>, releasingObjects: Bool, pageSize: Int = 4096
    ) throws -> (deleted: [Int: Int], missing: Int) {
        if isReadOnly { throw StoreError.readOnly("delete") }
        try flush()
        let mapping = tracker.mapping
        let missing = try unseenRowIDs(tracker, scope: scope, pageSize: pageSize)
        guard missing.count > 0 else { return ([:], 0) }
        let hasRules = mapping.description.deleteRules.values.contains { $0 != .nullify }
        // The payload's objects stay whatever the rules say; missing ones of later pages go anyway.
        let isPresent = { (state: EntityState) in
            state.entityIndex == mapping.index && (state.rowID > tracker.existingUpTo || tracker.seen.contains(state.rowID))
        }
        let isMissing = { (state: EntityState) in state.entityIndex == mapping.index && missing.contains(state.rowID) }
        func deleteAll() throws -> [Int: Int] {
            var deleted: [Int: Int] = [:]
            var page: [Int64] = []
            page.reserveCapacity(pageSize)
            func deletePage() throws {
                let counts = try deleteRows(page, of: mapping, applyingRules: hasRules, keeping: isPresent, alsoDeleted: isMissing)
                for (entity, count) in counts { deleted[entity, default: 0] += count }
                if releasingObjects { reset() }
                page.removeAll(keepingCapacity: true)
            }
            try missing.forEach { rowID in
                page.append(rowID)
                if page.count == pageSize { try deletePage() }
            }
            if !page.isEmpty { try deletePage() }
            return deleted
        }
        let deleted = releasingObjects ? try deleteAll() : try inSavepoint(savingAtEnd: true) { try deleteAll() }
        return (deleted, missing.count)
    }

    /// The row ids of `scope` stored before the sync began that it did not see.
    private func unseenRowIDs<T: EntityObject>(_ tracker: SyncTracker, scope: SyncScope<T>, pageSize: Int) throws -> RowIDSet {
        let page = try storage.rowIDPage(tracker.mapping, where: scope.predicate)
        var missing = RowIDSet()
        var after: Int64 = 0
        while after < tracker.existingUpTo {
            let select = try connection.cached(page.sql)
            defer { select.reset() }
            try select.bind([.integer(after), .integer(tracker.existingUpTo)] + page.arguments + [.integer(Int64(pageSize))])
            var rows = 0
            while try select.step() {
                let rowID = select.int64(at: 0)
                rows += 1
                after = rowID
                if !tracker.seen.contains(rowID) { missing.insert(rowID) }
            }
            if rows < pageSize { break }
        }
        return missing
    }

    /// Deletes the rows of `rowIDs` (stored, of `mapping`'s entity) and flushes.
    private func deleteRows(
        _ rowIDs: [Int64], of mapping: EntitySchema, applyingRules: Bool, keeping isKept: (EntityState) -> Bool,
        alsoDeleted: (EntityState) -> Bool
    ) throws -> [Int: Int] {
        if applyingRules {
            let objects = try objects(of: mapping, rowIDs: rowIDs)
            let counts = try deleteApplyingRules(objects, keeping: isKept, alsoDeleted: alsoDeleted)
            try flush()
            return counts
        }
        var unregistered: [Int64] = []
        unregistered.reserveCapacity(rowIDs.count)
        for rowID in rowIDs {
            if let object = registries[mapping.index][rowID] { try deleteObject(object) } else { unregistered.append(rowID) }
        }
        try flush()
        if !unregistered.isEmpty {
            try clearStampsReferring(to: mapping.index, rowIDs: unregistered)
            if !enforcesForeignKeys {
                try storage.clearReferences(to: mapping.index, rowIDs: unregistered) { try connection.cached($0) }
            }
            let statement = try connection.cached(storage.deleteByRowIDs(mapping, count: Self.membershipChunk))
            try statement.run(rowIDs: unregistered, slots: Self.membershipChunk) { _ in }
            noteRowsDeletedBySQL(mapping)
        }
        return [mapping.index: rowIDs.count]
    }

    /// The objects of `rowIDs` (stored rows of `mapping`'s entity), registered in this context.
    private func objects(of mapping: EntitySchema, rowIDs: [Int64]) throws -> [any EntityObject] {
        let unregistered = rowIDs.filter { registries[mapping.index][$0] == nil }
        if !unregistered.isEmpty {
            // Made into objects, which registers them.
            try forEachStoredRow(of: mapping, rowIDs: unregistered) { statement in _ = try object(for: mapping, statement: statement) }
        }
        return rowIDs.compactMap { registries[mapping.index][$0] }
    }
}
