/// The identities a batch of records mentions (the records' own, their nested objects' and their bare
/// references), per entity.
package struct BatchIdentities: Sendable {
    /// Per entity index, every identity, with repeats, in record order (what decoding's prefetch marks).
    package let all: [[Context.IdentityKey]]
    /// Per entity index, each identity once, in first-seen order.
    package let distinct: [[Context.IdentityKey]]
    /// Every identity with the node it was read from, in record order, the entries of the `i`th record ending
    /// at `ends[i]` (for ``KnownIdentities``), when collected with them.
    package let known: (entries: [KnownIdentity], ends: [Int])?
    /// Per record, its stamp (see ``RowStamps``), when the reader was given a ``BatchIdentityCollector/Stamper``.
    package let stamps: [Int64?]?

    package init(_ collected: StoreDecoderImpl.CollectedKeys, stamps: [Int64?]? = nil) {
        all = collected.all
        known = collected.keepsNodes ? (collected.known, collected.ends) : nil
        distinct = collected.all.map(Self.distinct)
        self.stamps = stamps
    }

    /// A random seed per process, so that identities taken from input cannot be chosen to collide.
    private static let seed = Int.random(in: .min ... .max)

    /// Each key once, in first-seen order. Single integers (the common identity) go through an open-addressing
    /// table of their values: a `Set` of keys cost about 275 instructions a key (callgrind, the reader thread).
    package static func distinct(_ keys: [Context.IdentityKey]) -> [Context.IdentityKey] {
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
package final class BatchIdentityCollector: @unchecked Sendable {
    // @unchecked: made by the importer, then used by the reader thread alone.
    private let mapping: EntitySchema
    private let session: DecodingSession
    private let stamper: Stamper?

    /// What stamps each record of a batch (see ``RowStamps``), on the reader thread too: an import's record digests.
    package typealias Stamper = @Sendable ([JSONRecord]) -> [Int64?]

    package init?(_ mapping: EntitySchema, model: Schema, options: StoreDecoder.Options, stamper: Stamper? = nil) {
        var usesFormatter = false
        if case .formatted = options.dateDecodingStrategy { usesFormatter = true }
        for entity in model.mappings {
            for field in entity.description.identity {
                guard case .attribute(let attribute) = entity.description.fields[field] else { continue }
                switch attribute.fastKind {
                case .int, .double, .string, .bool, .iso8601Date, .secondsDate, .millisecondsDate: continue
                case .date where !usesFormatter: continue
                case .date, .other: return nil
                }
            }
        }
        // A schema of its own, equal to the context's: the reader thread collects a few identities per record
        // while the decoding thread decodes, and an object both threads retain and release (an entity's schema,
        // its relationships) would move its cache line from core to core at every count.
        let own = (try? model.copy())
            .flatMap { $0.mappings.map(\.name) == model.mappings.map(\.name) ? $0 : nil }
        self.mapping = own?.mappings[mapping.index] ?? mapping
        self.stamper = stamper
        session = DecodingSession(model: own ?? model, options: options)
    }

    /// The schema the collection reads: its own copy of the importer's.
    var model: Schema { session.model }

    func identities(of records: [JSONRecord]) -> BatchIdentities {
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
        return BatchIdentities(keys, stamps: stamper?(records))
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
