import CodableStoreCore
import CodableStoreJSON

/// How the importer resolves a batch's identities with a few queries before decoding it, while the batch before it is
/// decoded (under the stop policy in one transaction, with a writer thread):
///
/// 1. the reader thread collects the identities the batch mentions (`BatchIdentityCollector`, into `BatchIdentities`) while it parses;
/// 2. when the batch arrives, the importer makes its decoders and hands a ``Lookahead`` of those keys to the writer
///    thread, which runs it after the plans of the batches before the one being decoded (what
///    `Context.adoptLookup(_:)` needs to stay right);
/// 3. when the batch's turn comes, the context adopts the rows found (``lookahead``) and decoding prefetches the
///    rest from memory with ``keys``.
struct BatchLookup {
    let session: DecodingSession
    let items: [(StoreDecoderImpl, JSONTape.Index)]
    /// Per entity index, every identity the batch mentions, with repeats, in record order.
    let keys: [[Context.IdentityKey]]
    let lookahead: Lookahead

    /// Prepares a batch and hands its lookahead to the writer.
    init(
        _ records: [JSONRecord], mapping: EntitySchema, context: Context, options: StoreDecoder.Options,
        collected: BatchIdentities?, writer: WriteBehind, stamper: BatchIdentityCollector.Stamper? = nil
    ) throws {
        let model = context.model
        let session = DecodingSession(context: context, options: options)
        let items = records.map { StoreDecoderImpl.item(for: $0, session) }
        let identities =
            collected
            ?? BatchIdentities(StoreDecoderImpl.collectKeys(mapping, items, model: model), stamps: stamper?(records))
        if let known = identities.known, known.ends.count == items.count {
            // Decoding takes the identities the reader read instead of reading them again.
            var start = 0
            for (index, end) in known.ends.enumerated() {
                items[index].0.useKnownIdentities(KnownIdentities(known.entries[start..<end]))
                start = end
            }
        }
        let keys = identities.all
        // The batch's own entity first: the writer also loads the join-table memberships of its stored rows,
        // which decoding replaces (memberships stored as foreign keys wait for the writer: see
        // Context.withMembershipConnection).
        var requested: [(entity: Int, keys: [Context.IdentityKey])] = []
        // Keys the filter of inserted identities rules out are not stored, nor held by a waiting plan. Keys of objects
        // the context retains are answered from memory (one it lets go before decoding this batch is looked up then).
        // The filter as the importer made it (see Importer.prepareIdentityFilter): its calls are direct, not through
        // the protocol, for every key of the batch.
        func isLookedUp(_ key: Context.IdentityKey, entity: Int, _ filter: IdentityFilter?, retains: Bool) -> Bool {
            filter?.mayContain(key) != false && !(retains && context.holdsObject(entity: entity, key: key))
        }
        for entity in [mapping.index] + keys.indices.filter({ $0 != mapping.index }) where !keys[entity].isEmpty {
            let filter = context.storedKeys[entity] as? IdentityFilter
            let retains = writer.retention.mayRetain(entity)
            var distinct = identities.distinct[entity]
            if filter != nil || retains {
                distinct.removeAll { key in !isLookedUp(key, entity: entity, filter, retains: retains) }
            }
            if !distinct.isEmpty { requested.append((entity, distinct)) }
        }
        var memberships: [Int] = []
        if requested.first?.entity == mapping.index {
            for case let relationship? in mapping.relationships where relationship.description.isToMany {
                // Only memberships decoding replaces (the field is in a record), as the prefetch loads them.
                let field = relationship.description.index
                guard case .joinTable = relationship.storage,
                    items.contains(where: { impl, root in
                        impl.tape.kind(of: root) == .object && impl.presentField(root, mapping, field) != nil
                    })
                else { continue }
                memberships.append(field)
            }
        }
        var digests: [Context.IdentityKey: Int64] = [:]
        if let recordDigests = identities.stamps, recordDigests.count == items.count {
            let filter = context.storedKeys[mapping.index] as? IdentityFilter
            let retains = writer.retention.mayRetain(mapping.index)
            digests = Self.skippableDigests(
                items, recordDigests, mapping: mapping, keys: keys[mapping.index],
                lookingUp: requested.first?.entity == mapping.index,
                isLookedUp: filter == nil && !retains ? nil : { isLookedUp($0, entity: mapping.index, filter, retains: retains) })
        }
        let lookahead = Lookahead(keys: requested, memberships: memberships, stamps: digests)
        try writer.requestLookup(lookahead)
        self.session = session
        self.items = items
        self.keys = keys
        self.lookahead = lookahead
    }

    /// Gives each record its digest, and returns the digests by identity of the records the batch may skip (when the
    /// batch looks up stored rows of its entity at all): those whose identity occurs nowhere else in the batch (not in
    /// another record, nor nested, nor referred to), so that no other decoding of the batch changes the row first
    /// (see `RecordDigests`), and that the writer looks up (`isLookedUp`, nil for all): only a stored row's digest can
    /// match. Into an empty table, that leaves out nearly every record, and their counting and hashing (callgrind,
    /// first import of 100k records: the decoding thread 3.905 G -> 3.881 G instructions).
    private static func skippableDigests(
        _ items: [(StoreDecoderImpl, JSONTape.Index)], _ recordDigests: [Int64?], mapping: EntitySchema,
        keys: [Context.IdentityKey], lookingUp: Bool, isLookedUp: ((Context.IdentityKey) -> Bool)?
    ) -> [Context.IdentityKey: Int64] {
        guard lookingUp else {
            for ((impl, root), digest) in zip(items, recordDigests) where impl.tape.kind(of: root) == .object {
                impl.useRecordStamp(digest)
            }
            return [:]
        }
        // Every occurrence of a key that is looked up is among the candidates: their counts are exact.
        let candidates = isLookedUp.map { keys.filter($0) } ?? keys
        var occurrences: [Context.IdentityKey: Int]?
        if BatchIdentities.distinct(candidates).count != candidates.count {
            var counts: [Context.IdentityKey: Int] = [:]
            for key in candidates { counts[key, default: 0] += 1 }
            occurrences = counts
        }
        var digests: [Context.IdentityKey: Int64] = [:]
        digests.reserveCapacity(candidates.count)
        for ((impl, root), digest) in zip(items, recordDigests) {
            guard let digest, impl.tape.kind(of: root) == .object else { continue }
            impl.useRecordStamp(digest)
            if candidates.isEmpty { continue }
            guard let key = impl.ownIdentity(mapping, root), isLookedUp?(key) != false else { continue }
            if let occurrences, occurrences[key] != 1 { continue }
            digests[key] = digest
        }
        return digests
    }
}
