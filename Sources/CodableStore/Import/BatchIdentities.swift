/// The identities a batch of records mentions (the records' own, their nested objects' and their bare
/// references), per entity: what the importer asks its writer thread to look up before the batch is decoded.
struct BatchIdentities: Sendable {
    /// Per entity index, every identity, with repeats, in record order (what decoding's prefetch marks).
    let all: [[Context.IdentityKey]]
    /// Per entity index, each identity once, in first-seen order.
    let distinct: [[Context.IdentityKey]]

    init(_ all: [[Context.IdentityKey]]) {
        self.all = all
        distinct = all.map { keys in
            var seen = Set<Context.IdentityKey>(minimumCapacity: keys.count)
            return keys.filter { seen.insert($0).inserted }
        }
    }
}

/// Collects each batch's identities on the import's reader thread, which has time to spare, instead of on the
/// decoding thread, which has none: a tenth of the decoding thread's instructions in a re-import.
///
/// It reads the records with a decoding session of its own that has no context (the context belongs to the
/// decoding thread), so it only runs when collecting cannot call code that may not be thread-safe: every
/// identity attribute of the model is an integer, floating-point, string or Boolean value, or a date read without
/// a `DateFormatter` (``StoreDecoder/DateDecodingStrategy/formatted(_:)``).
final class IdentityCollector: @unchecked Sendable {
    // @unchecked: made by the importer, then used by the reader thread alone.
    private let mapping: EntityMapping
    private let session: DecodingSession

    init?(_ mapping: EntityMapping, model: StoreModel, options: StoreDecoder.Options) {
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
        self.mapping = mapping
        session = DecodingSession(model: model, options: options)
    }

    func identities(of records: [JSONRecord]) -> BatchIdentities {
        let items = records.map { StoreDecoderImpl.item(for: $0, session) }
        return BatchIdentities(StoreDecoderImpl.collectKeys(mapping, items, model: session.model))
    }
}
