import CodableStoreJSON

/// How an import skips the records that would change nothing: a re-import of yesterday's dump, where most records
/// are as stored.
///
/// **The digest.** Each row of a SQLite store has a `_digest` column (``SQLDialect/storesDigests``): a keyed 64-bit
/// hash of the JSON record that last wrote the row (its value, not its whitespace: see `JSONTape.contentDigest`), or
/// NULL. The key is random per store (kept in its metadata table), and the hash also covers the model (entities,
/// fields, types, coding keys) and the decoder's options, so a change of either makes every digest miss.
///
/// **The rule.** A record whose digest equals its row's is skipped: its own attributes and relationships are
/// already what decoding it would set. Its nested objects are still decoded (a later record of yesterday's dump may
/// have changed the same user, and the order of today's decides). That holds as long as every other change of the row
/// clears its digest:
/// - the context writes a row's digest only when the object was decoded from that record and nothing changed it
///   since (``EntityState/digestToWrite``); every other insert or update writes NULL;
/// - a link changed without the row's own record (from the other side, by a later record, by application code)
///   clears the row's digest (``WritePlan/Step/clearDigest(entity:rowID:)``), as does the deletion of a row it
///   refers to (``WritePlan/Step/clearDigestsReferring(entity:destination:rowID:)``), for the entities imports wrote
///   digests for (kept in the metadata table);
/// - a migration forgets the key (``forgetAll(on:)``);
/// - SQL of other programs fires the store's ``DigestGuards`` (installed by the import that marks an entity digested),
///   which clear the same; the store's own writer fires none (``DigestGuards/quiet(on:)``).
///
/// Only entities whose decoding is plain take part: an identity, no custom decoding or `prepareForDecoding`, and no
/// relationship stored in another table's rows (a to-many by foreign key changes without the owner's row). A record
/// with a reference the decoder left unresolved (the `.ignore` or `.deferred` policy) gets no digest: the same record
/// may link more once its destination exists. Options with closures or formatters (custom key, date or data
/// strategies, `.formatted` dates) turn skipping off, and so do triggers of the user's (one could change a row after
/// its digest was written).
package enum RecordDigests {
    static let keyEntry = "digest-key"
    static let entitiesEntry = "digested-entities"

    /// Whether records of `mapping` can be skipped by digest.
    package static func qualifies(_ mapping: EntitySchema) -> Bool {
        guard !mapping.description.identity.isEmpty, !mapping.coding.hasCustomDecoding, mapping.coding.jsonPreparing == nil
        else { return false }
        for case let relationship? in mapping.relationships {
            if case .inverseForeignKey = relationship.storage { return false }
        }
        return true
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
                    text += "  \(attribute.name) \(attribute.type.name) \(attribute.isOptional) \(keyPath)\n"
                case .relationship(let relationship):
                    text += "  \(relationship.name) -> \(model.mappings[mapping.relationships[index]?.destination ?? 0].name) "
                        + "\(relationship.kind) \(keyPath)\n"
                }
            }
            let policies = mapping.coding.referencePolicies
            if !policies.isEmpty { text += "  policies \(policies.sorted { $0.key < $1.key })\n" }
        }
        return text
    }

    /// The hasher each record's digest starts from: keyed with the store's key, the fingerprint combined.
    package static func hasher(key: (UInt64, UInt64), fingerprint: String) -> SipHasher13 {
        var context = SipHasher13(key0: key.0, key1: key.1)
        Array(fingerprint.utf8).withUnsafeBytes { context.combine(bytes: $0) }
        var hasher = SipHasher13(key0: key.0, key1: key.1)
        hasher.combine(context.finalize())
        return hasher
    }

    /// The digest of each record (nil for one whose tape cannot be hashed), as stored; nil without a hasher (the
    /// import does not skip unchanged records).
    package static func digests(of records: [JSONRecord], _ hasher: SipHasher13?) -> [Int64?]? {
        hasher.map { hasher in records.map { $0.tape.contentDigest(hasher).map { Int64(bitPattern: $0) } } }
    }

    // MARK: - Metadata

    /// The store's key, made (and kept) if it has none.
    package static func key(on connection: any DatabaseConnection) throws -> (UInt64, UInt64) {
        if let text = try entry(keyEntry, on: connection), case let parts = text.split(separator: " "), parts.count == 2,
            let first = UInt64(parts[0], radix: 16), let second = UInt64(parts[1], radix: 16)
        {
            return (first, second)
        }
        var generator = SystemRandomNumberGenerator()
        let key = (generator.next() as UInt64, generator.next() as UInt64)
        try setEntry(keyEntry, String(key.0, radix: 16) + " " + String(key.1, radix: 16), on: connection)
        return key
    }

    /// The entities whose rows imports gave digests (whose digests other changes must clear).
    package static func digestedEntities(_ model: Schema, on connection: any DatabaseConnection) throws -> Set<Int> {
        guard let text = try entry(entitiesEntry, on: connection) else { return [] }
        let names = Set(text.split(separator: "\n").map(String.init))
        return Set(model.mappings.filter { names.contains($0.name) }.map(\.index))
    }

    /// Records that imports write digests for the rows of `entity`; returns every entity that has them.
    package static func markDigested(_ entity: Int, _ model: Schema, on connection: any DatabaseConnection) throws -> Set<Int> {
        var entities = try digestedEntities(model, on: connection)
        guard entities.insert(entity).inserted else { return entities }
        try setEntry(entitiesEntry, entities.map { model.mappings[$0].name }.sorted().joined(separator: "\n"), on: connection)
        return entities
    }

    /// Forgets the key, so that no stored digest matches any more.
    package static func forgetAll(on connection: any DatabaseConnection) throws {
        try StoreMetadata.remove([keyEntry, entitiesEntry], on: connection)
    }

    private static func entry(_ key: String, on connection: any DatabaseConnection) throws -> String? {
        try StoreMetadata.value(of: key, on: connection)
    }

    private static func setEntry(_ key: String, _ value: String, on connection: any DatabaseConnection) throws {
        try StoreMetadata.set(key, value, on: connection)
    }
}
