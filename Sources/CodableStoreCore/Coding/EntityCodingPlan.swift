/// How the decoder and the encoder read and write one entity's JSON, worked out once per store: the fields' JSON
/// keys (with precomputed hashes), the encoder's tree of keys, the entity's decoding hooks and its unknown-reference
/// policies. The schema makes one per entity (``EntitySchema/coding``) and carries it; only Coding reads it.
struct EntityCodingPlan: Sendable {
    /// The fields' JSON key paths with precomputed hashes, for the decoder's lookups.
    let jsonKeys: [[JSONKey]?]
    /// Per field, its JSON key when it is a single key (not a key path): the decoder's common case, read without
    /// touching the nested arrays of ``jsonKeys``.
    let singleJSONKeys: [JSONKey?]
    /// ``singleJSONKeys``' probes: the hinted lookup's common case reads them without reference counting.
    let singleKeyProbes: [JSONKey.Probe?]
    /// For an entity identified by one `Int` or `String` attribute: that attribute's field and kind, for the identity
    /// lookups' fast path (``StoreDecoderImpl/fastIdentityKey(_:_:)``), which reads the value straight from the tape.
    let singleIdentity: (field: Int, kind: AttributeDescription.FastKind)?
    /// The fields' JSON keys as a tree, for the encoder.
    let encodingPlan: [EncodingPlanNode]
    /// Unknown-reference policies declared per relationship field (``EntityReferencePolicies``).
    let referencePolicies: [Int: StoreDecoder.UnknownReferencePolicy]
    /// The entity's decoding hooks, looked up once (a dynamic cast per decoded object costs more than decoding a
    /// few of its attributes).
    let jsonPreparing: (any EntityJSONPreparing.Type)?
    let hasCustomDecoding: Bool

    /// The plan of an entity; what is wrong with its declared reference policies goes into `problems` (the store
    /// reports them when it opens).
    init(_ description: EntityDescription, problems: inout [String]) {
        jsonKeys = description.codingKeyPaths.map { path in path?.map { JSONKey($0) } }
        singleJSONKeys = description.codingKeyPaths.map { path in path?.count == 1 ? JSONKey(path![0]) : nil }
        singleKeyProbes = singleJSONKeys.map { $0?.probe }
        if description.identity.count == 1, case .attribute(let attribute) = description.fields[description.identity[0]],
            attribute.fastKind == .int || attribute.fastKind == .string
        {
            singleIdentity = (attribute.index, attribute.fastKind)
        } else {
            singleIdentity = nil
        }
        encodingPlan = EncodingPlanNode.plan(for: description)
        var referencePolicies: [Int: StoreDecoder.UnknownReferencePolicy] = [:]
        if let runtime = description.runtime {
            referencePolicies = runtime.referencePolicies
        } else if let declaring = description.type as? any EntityReferencePolicies.Type {
            let resolved = declaring.resolvedReferencePolicies()
            referencePolicies = resolved.policies
            problems += resolved.problems
        }
        self.referencePolicies = referencePolicies
        jsonPreparing = description.type as? any EntityJSONPreparing.Type
        hasCustomDecoding = description.type is any EntityCustomDecoding.Type
    }
}

extension EntityCodingPlan {
    /// The value of field `index` in `object` when the field has a single JSON key, with the default key strategy:
    /// the member at the hint first (three lookups in four, without copying the key and its string), then a search;
    /// `.some(nil)` when the object lacks it. nil when the field has no single key (a key path, or no key).
    @inline(__always)
    func singleKeyValue(
        of index: Int, in object: JSONTape.Index, _ tape: JSONTape, hint: inout JSONTape.LookupHint
    ) -> JSONTape.Index?? {
        guard let probe = singleKeyProbes[index] else { return nil }
        if let node = tape.value(forProbe: probe, in: object, hint: &hint) { return node }
        // The search by probe, without copying the key (a retain and a release of its string): most misses.
        if let scanned = tape.scanValue(forProbe: probe, in: object, hint: &hint) { return scanned }
        return .some(tape.searchValue(forKey: singleJSONKeys[index]!, in: object, hint: &hint))
    }
}
