/// Rows written for one entity by a save of decoded objects: what ``StoreDecoder/decodeAndSave(_:from:into:)`` and an
/// import report per entity name.
public struct EntityCounts: Sendable, Codable, Equatable {
    /// Rows inserted (new objects, stubs included).
    public var inserted = 0
    /// Rows updated because a decoded value differed (counted once per batch that changed the object).
    public var updated = 0
    /// Objects decoded whose values were all already stored: nothing written (counted once per batch).
    public var unchanged = 0
    /// Objects deleted by a sync (see ``SyncScope``), those its delete rules cascaded to included.
    public var deleted = 0

    public init(inserted: Int = 0, updated: Int = 0, unchanged: Int = 0, deleted: Int = 0) {
        self.inserted = inserted
        self.updated = updated
        self.unchanged = unchanged
        self.deleted = deleted
    }

    private enum CodingKeys: String, CodingKey { case inserted, updated, unchanged, deleted }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        inserted = try container.decode(Int.self, forKey: .inserted)
        updated = try container.decode(Int.self, forKey: .updated)
        unchanged = try container.decode(Int.self, forKey: .unchanged)
        // Reports written before syncs existed have no deletions.
        deleted = try container.decodeIfPresent(Int.self, forKey: .deleted) ?? 0
    }
}

extension Context {
    /// Per entity name, what the saves since `before` (the context's ``writeCounts`` then) wrote: rows inserted and
    /// updated, objects decoded (`decoded`, per entity index) with nothing to write, and rows `deleted` (per entity
    /// index); entities with nothing of the four are left out. Stubs, inserted without being decoded, make `unchanged`
    /// a lower bound. What ``StoreDecoder/decodeAndSave(_:from:into:)`` returns, and what an import adds per batch.
    package func entityCounts(
        since before: [Int: (inserted: Int, updated: Int)], decoded: [Int], deleted: [Int: Int] = [:]
    ) -> [String: EntityCounts] {
        var counts: [String: EntityCounts] = [:]
        for mapping in model.mappings {
            let now = writeCounts[mapping.index] ?? (0, 0)
            let then = before[mapping.index] ?? (0, 0)
            let inserted = now.inserted - then.inserted
            let updated = now.updated - then.updated
            let unchanged = max(0, (mapping.index < decoded.count ? decoded[mapping.index] : 0) - inserted - updated)
            let removed = deleted[mapping.index] ?? 0
            if inserted + updated + unchanged + removed > 0 {
                counts[mapping.name] = EntityCounts(inserted: inserted, updated: updated, unchanged: unchanged, deleted: removed)
            }
        }
        return counts
    }
}
