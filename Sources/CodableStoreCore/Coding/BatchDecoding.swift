/// The import pipeline's decode stage: decodes one batch of records, each an element of one entity, into the
/// session's context, after resolving every identity the batch mentions with one query per entity (or from the
/// rows the writer thread looked up ahead, see ``BatchLookup``). The importer and the two-thread array decode
/// (``ParallelArrayDecoding``) decode their batches with it; what they do with the objects differs (the importer
/// saves them and counts them, the array decode returns them).
package struct BatchDecoding {
    /// A record's decoder and the record's root value.
    package typealias Item = (StoreDecoderImpl, JSONTape.Index)

    let mapping: EntitySchema
    let session: DecodingSession

    package init(mapping: EntitySchema, session: DecodingSession) {
        self.mapping = mapping
        self.session = session
    }

    /// Decoders for `records`, but for those at the positions in `excluded`, with the position of each in `records`.
    package func items(for records: [JSONRecord], excluding excluded: Set<Int> = []) -> (items: [Item], positions: [Int]) {
        var items: [Item] = []
        var positions: [Int] = []
        items.reserveCapacity(records.count)
        positions.reserveCapacity(records.count)
        for (position, record) in records.enumerated() where !excluded.contains(position) {
            items.append(StoreDecoderImpl.item(for: record, session))
            positions.append(position)
        }
        return (items, positions)
    }

    /// Looks up the identities of `items` (or takes `keys`, when they were collected already) and decodes them in
    /// order, handing each decoded object to `decoded` (a `null` element has none). The error of the element at
    /// `index` in `items` is thrown as `failure(index, error)` returns it.
    package func decode(
        _ items: [Item], keys: [[Context.IdentityKey]]? = nil,
        failure: (_ index: Int, _ error: any Error) -> any Error = { $1 },
        _ decoded: (any EntityObject) -> Void
    ) throws {
        try StoreDecoderImpl.prefetch(mapping, items, context: session.context, keys: keys)
        for (index, (decoder, root)) in items.enumerated() {
            let object: (any EntityObject)?
            do {
                object = try decoder.decodeElement(mapping, root, decoder.path)
            } catch {
                throw failure(index, error)
            }
            if let object { decoded(object) }
        }
    }
}
