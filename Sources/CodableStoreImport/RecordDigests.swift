import CodableStoreCore
import CodableStoreJSON

/// How an import skips the records that would change nothing: a re-import of yesterday's dump, where most records
/// are as stored.
///
/// **The digest.** The import stamps each row it writes (`RowStamps`, in the core, which keeps a row's stamp only
/// while nothing else changes the row) with a keyed 64-bit hash of the JSON record that wrote it: its value, not its
/// whitespace (see `JSONTape.contentDigest`). The key is the store's stamp key (random per store, forgotten by a
/// migration or ``Store/forgetImportDigests()``), and the hash also covers the model (entities, fields, types, coding
/// keys) and the decoder's options, so a change of either makes every digest miss.
///
/// **The rule.** A record whose digest equals its row's stamp is skipped: its own attributes and relationships are
/// already what decoding it would set. Its nested objects are still decoded (a later record of yesterday's dump may
/// have changed the same user, and the order of today's decides). The batch's lookahead compares the digests with
/// the stored stamps on the writer thread (`WriteBehind`), and the decoder skips what it found equal.
///
/// Only entities whose rows can keep stamps (`RowStamps.canStamp(_:)`) and whose decoding is plain take part: no
/// custom decoding or `prepareForDecoding`. A record with a reference the decoder left unresolved (the `.ignore` or
/// `.deferred` policy) gets no stamp: the same record may link more once its destination exists. Options with
/// closures or formatters (custom key, date or data strategies, `.formatted` dates) turn skipping off, and so do
/// triggers of the user's (one could change a row after its stamp was written).
package enum RecordDigests {
    /// Whether records of `mapping` can be skipped by digest.
    package static func qualifies(_ mapping: EntitySchema) -> Bool {
        RowStamps.canStamp(mapping) && mapping.decodesPlainly
    }

    /// What the decoding of a record depends on besides its JSON, as text; nil when the options hold closures.
    package static func fingerprint(_ model: Schema, options: StoreDecoder.Options) -> String? {
        var text = "codablestore-digest-1\n"
        switch options.keyDecodingStrategy {
        case .useDefaultKeys: text += "keys: default\n"
        case .convertFromSnakeCase: text += "keys: snake\n"
        case .custom: return nil
        }
        switch options.dateDecodingStrategy {
        case .deferredToDate: text += "dates: deferred\n"
        case .iso8601: text += "dates: iso8601\n"
        case .secondsSince1970: text += "dates: seconds\n"
        case .millisecondsSince1970: text += "dates: milliseconds\n"
        case .formatted, .custom: return nil  // a formatter can change after it was handed over
        }
        switch options.dataDecodingStrategy {
        case .base64: text += "data: base64\n"
        case .deferredToData: text += "data: deferred\n"
        case .custom: return nil
        }
        switch options.nonConformingFloatDecodingStrategy {
        case .throw: text += "floats: throw\n"
        case .convertFromString(let infinity, let negative, let nan): text += "floats: \(infinity.debugDescription) \(negative.debugDescription) \(nan.debugDescription)\n"
        }
        text += "references: \(options.unknownReferencePolicy), to-many: \(options.toManyPolicy)\n"
        for mapping in model.mappings {
            let description = mapping.description
            text += "entity \(mapping.name) \(String(reflecting: description.type)) identity \(description.identity)\n"
            for (index, field) in description.fields.enumerated() {
                let keyPath = description.codingKeyPaths[index]?.joined(separator: "\u{1}") ?? "-"
                switch field {
                case .attribute(let attribute):
                    text += "  \(attribute.name) \(attribute.type.name) \(attribute.isOptional) \(keyPath)"
                    let variant = attribute.decodingVariant
                    text += variant.isEmpty ? "\n" : " \(variant)\n"
                case .relationship(let relationship):
                    text += "  \(relationship.name) -> \(model.mappings[mapping.relationships[index]?.destination ?? 0].name) "
                        + "\(relationship.kind) \(keyPath)\n"
                }
            }
            let policies = mapping.referencePolicies
            if !policies.isEmpty { text += "  policies \(policies.sorted { $0.key < $1.key })\n" }
        }
        return text
    }

    /// The hasher each record's digest starts from: keyed with the store's key, the fingerprint combined.
    static func hasher(key: (UInt64, UInt64), fingerprint: String) -> SipHasher13 {
        var context = SipHasher13(key0: key.0, key1: key.1)
        Array(fingerprint.utf8).withUnsafeBytes { context.combine(bytes: $0) }
        var hasher = SipHasher13(key0: key.0, key1: key.1)
        hasher.combine(context.finalize())
        return hasher
    }

    /// What stamps each record of a batch with its digest (nil for one whose tape cannot be hashed), as stored.
    package static func stamper(key: (UInt64, UInt64), fingerprint: String) -> BatchIdentityCollector.Stamper {
        let hasher = hasher(key: key, fingerprint: fingerprint)
        return { records in records.map { $0.tape.contentDigest(hasher).map { Int64(bitPattern: $0) } } }
    }
}
