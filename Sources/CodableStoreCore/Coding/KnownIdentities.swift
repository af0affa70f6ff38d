import CodableStoreJSON

/// An identity read from a record's tape ahead of decoding, and where it was read: the import's reader thread
/// reads every identity of a batch to look them up early (``BatchLookup/Collector``), and decoding takes them from
/// there instead of reading them a second time.
package struct KnownIdentity: Sendable {
    /// The object (or bare reference) the identity was read from.
    let node: JSONTape.Index
    /// The entity it was read as.
    let entity: Int
    let key: Context.IdentityKey
}

/// The identities read ahead from one decoder's tape, in the order they were read: the order decoding meets
/// them in, so that a lookup usually matches the entry after the last match.
///
/// An entry is used only for the node and entity it was read for, so a decoding that takes another route through
/// the record (a hook, an object it skips) reads only what is not there: a key read ahead is the key decoding
/// would read, since both read the same bytes with the same options.
package struct KnownIdentities {
    private let entries: ArraySlice<KnownIdentity>
    /// Where the next lookup starts.
    private var next: Int

    package init(_ entries: ArraySlice<KnownIdentity>) {
        self.entries = entries
        next = entries.startIndex
    }

    /// The key read ahead for `node` as `entity`, if any: searched from the entry after the last match, then from
    /// the first.
    mutating func key(for node: JSONTape.Index, entity: Int) -> Context.IdentityKey? {
        var index = next
        for _ in 0..<entries.count {
            if index == entries.endIndex { index = entries.startIndex }
            let entry = entries[index]
            index += 1
            if entry.node == node, entry.entity == entity {
                next = index
                return entry.key
            }
        }
        return nil
    }

    /// The key read ahead for `node` as `entity`, if any, without moving where the next lookup starts.
    func peekKey(for node: JSONTape.Index, entity: Int) -> Context.IdentityKey? {
        entries.first { $0.node == node && $0.entity == entity }?.key
    }
}
