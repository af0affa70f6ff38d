/// How the importer resolves a batch's identities with a few queries before decoding it, while the batch before it is
/// decoded (under the stop policy in one transaction, with a writer thread):
///
/// 1. the reader thread collects the identities the batch mentions (``Collector``, into ``Keys``) while it parses;
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
        collected: Keys?, writer: WriteBehind, digester: SipHasher13? = nil
    ) throws {
        let model = context.model
        let session = DecodingSession(context: context, options: options)
        let items = records.map { StoreDecoderImpl.item(for: $0, session) }
        let identities =
            collected
            ?? Keys(StoreDecoderImpl.collectKeys(mapping, items, model: model), digests: RecordDigests.digests(of: records, digester))
        if let known = identities.known, known.ends.count == items.count {
            // Decoding takes the identities the reader read instead of reading them again.
            var start = 0
            for (index, end) in known.ends.enumerated() {
                items[index].0.known = KnownIdentities(known.entries[start..<end])
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
        func isLookedUp(_ key: Context.IdentityKey, entity: Int, _ filter: Context.IdentityFilter?, retains: Bool) -> Bool {
            filter?.mayContain(key) != false && !(retains && context.holdsObject(entity: entity, key: key))
        }
        for entity in [mapping.index] + keys.indices.filter({ $0 != mapping.index }) where !keys[entity].isEmpty {
            let filter = context.insertedIdentities[entity]
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
        if let recordDigests = identities.digests, recordDigests.count == items.count {
            let filter = context.insertedIdentities[mapping.index]
            let retains = writer.retention.mayRetain(mapping.index)
            digests = Self.skippableDigests(
                items, recordDigests, mapping: mapping, keys: keys[mapping.index],
                lookingUp: requested.first?.entity == mapping.index,
                isLookedUp: filter == nil && !retains ? nil : { isLookedUp($0, entity: mapping.index, filter, retains: retains) })
        }
        let lookahead = Lookahead(keys: requested, memberships: memberships, digests: digests)
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
                impl.recordDigest = digest
            }
            return [:]
        }
        // Every occurrence of a key that is looked up is among the candidates: their counts are exact.
        let candidates = isLookedUp.map { keys.filter($0) } ?? keys
        var occurrences: [Context.IdentityKey: Int]?
        if Keys.distinct(candidates).count != candidates.count {
            var counts: [Context.IdentityKey: Int] = [:]
            for key in candidates { counts[key, default: 0] += 1 }
            occurrences = counts
        }
        var digests: [Context.IdentityKey: Int64] = [:]
        digests.reserveCapacity(candidates.count)
        for ((impl, root), digest) in zip(items, recordDigests) {
            guard let digest, impl.tape.kind(of: root) == .object else { continue }
            impl.recordDigest = digest
            if candidates.isEmpty { continue }
            guard let key = impl.ownIdentity(mapping, root), isLookedUp?(key) != false else { continue }
            if let occurrences, occurrences[key] != 1 { continue }
            digests[key] = digest
        }
        return digests
    }

    /// The identities a batch of records mentions (the records' own, their nested objects' and their bare
    /// references), per entity.
    struct Keys: Sendable {
        /// Per entity index, every identity, with repeats, in record order (what decoding's prefetch marks).
        let all: [[Context.IdentityKey]]
        /// Per entity index, each identity once, in first-seen order.
        let distinct: [[Context.IdentityKey]]
        /// Every identity with the node it was read from, in record order, the entries of the `i`th record ending
        /// at `ends[i]` (for ``KnownIdentities``), when collected with them.
        let known: (entries: [KnownIdentity], ends: [Int])?
        /// Per record, its digest, when the import may skip unchanged records (see `RecordDigests`).
        let digests: [Int64?]?

        init(_ collected: StoreDecoderImpl.CollectedKeys, digests: [Int64?]? = nil) {
            all = collected.all
            known = collected.keepsNodes ? (collected.known, collected.ends) : nil
            distinct = collected.all.map(Self.distinct)
            self.digests = digests
        }

        /// A random seed per process, so that identities taken from input cannot be chosen to collide.
        private static let seed = Int.random(in: .min ... .max)

        /// Each key once, in first-seen order. Single integers (the common identity) go through an open-addressing
        /// table of their values: a `Set` of keys cost about 275 instructions a key (callgrind, the reader thread).
        static func distinct(_ keys: [Context.IdentityKey]) -> [Context.IdentityKey] {
            if keys.count < 2 { return keys }
            var capacity = 16
            while capacity < keys.count * 2 { capacity <<= 1 }
            let mask = capacity - 1
            var result: [Context.IdentityKey] = []
            result.reserveCapacity(keys.count)
            var values = [Int64](repeating: 0, count: capacity)
            var used = [Bool](repeating: false, count: capacity)
            let allIntegers = values.withUnsafeMutableBufferPointer { values in
                used.withUnsafeMutableBufferPointer { used in
                    for key in keys {
                        guard let value = key.singleInteger else { return false }
                        var slot = IntegerKey(value)._rawHashValue(seed: Self.seed) & mask
                        var seen = false
                        while used[slot] {
                            if values[slot] == value {
                                seen = true
                                break
                            }
                            slot = (slot &+ 1) & mask
                        }
                        if seen { continue }
                        used[slot] = true
                        values[slot] = value
                        result.append(key)
                    }
                    return true
                }
            }
            if allIntegers { return result }
            var seen = Set<Context.IdentityKey>(minimumCapacity: keys.count)
            return keys.filter { seen.insert($0).inserted }
        }
    }

    /// Collects each batch's identities on the import's reader thread, which has time to spare, instead of on the
    /// decoding thread, which has none: a tenth of the decoding thread's instructions in a re-import.
    ///
    /// It reads the records with a decoding session of its own that has no context (the context belongs to the
    /// decoding thread), so it only runs when collecting cannot call code that may not be thread-safe: every
    /// identity attribute of the model is an integer, floating-point, string or Boolean value, or a date read without
    /// a `DateFormatter` (``StoreDecoder/DateDecodingStrategy/formatted(_:)``).
    final class Collector: @unchecked Sendable {
        // @unchecked: made by the importer, then used by the reader thread alone.
        private let mapping: EntitySchema
        private let session: DecodingSession
        private let digester: SipHasher13?

        init?(_ mapping: EntitySchema, model: Schema, options: StoreDecoder.Options, digester: SipHasher13? = nil) {
            var usesFormatter = false
            if case .formatted = options.dateDecodingStrategy { usesFormatter = true }
            for entity in model.mappings {
                for field in entity.description.identity {
                    guard case .attribute(let attribute) = entity.description.fields[field] else { continue }
                    switch attribute.fastKind {
                    case .int, .double, .string, .bool: continue
                    case .date where !usesFormatter: continue
                    case .date, .other: return nil
                    }
                }
            }
            // A schema of its own, equal to the context's: the reader thread collects a few identities per record
            // while the decoding thread decodes, and an object both threads retain and release (an entity's schema,
            // its relationships) would move its cache line from core to core at every count.
            let own = (try? Schema(entities: model.mappings.map { $0.description.type }))
                .flatMap { $0.mappings.map(\.name) == model.mappings.map(\.name) ? $0 : nil }
            self.mapping = own?.mappings[mapping.index] ?? mapping
            self.digester = digester
            session = DecodingSession(model: own ?? model, options: options)
        }

        /// The schema the collection reads: its own copy of the importer's.
        var model: Schema { session.model }

        func identities(of records: [JSONRecord]) -> Keys {
            var keys = StoreDecoderImpl.CollectedKeys(entities: session.model.mappings.count, keepingNodes: true)
            for record in records {
                let start = keys.known.count
                if !collectPlainly(record, into: &keys) {
                    // What the tape alone does not decide, a decoder does, from the record's start.
                    keys.removeKnown(after: start)
                    StoreDecoderImpl.item(for: record, session, locating: false).0
                        .collectKeys(mapping, record.tape.root, depth: 0, into: &keys)
                }
                keys.ends.append(keys.known.count)
            }
            return Keys(keys, digests: RecordDigests.digests(of: records, digester))
        }

        /// Collects a record's identities from its tape alone (``TapeIdentityReader``, which reads keys as they are:
        /// the default key strategy only); false when it cannot.
        private func collectPlainly(_ record: JSONRecord, into keys: inout StoreDecoderImpl.CollectedKeys) -> Bool {
            guard session.usesDefaultKeys else { return false }
            do {
                try TapeIdentityReader(tape: record.tape, model: session.model)
                    .collectKeys(mapping, record.tape.root, depth: 0, into: &keys)
                return true
            } catch {
                return false
            }
        }
    }
}
