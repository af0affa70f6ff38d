/// References that wait for their destination: the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy.
///
/// A deferred reference is kept by its owner's row id (an import forgets the objects of earlier batches) and
/// the destination's identity. When an object with that identity is inserted, the reference is ready; the next
/// save links it before it writes, so that the link is part of that save (an import's batch, a write's end).
extension Context {
    struct PendingReference {
        let owner: Int
        let ownerRowID: Int64
        let field: Int
    }

    /// The deferred references not resolved yet, to go back to when a batch or a decode is rolled back (the
    /// references it deferred name rows that are gone).
    struct DeferredReferences {
        let pending: [Int: [IdentityKey: [PendingReference]]]
        let count: Int
    }

    var deferredReferences: DeferredReferences {
        get { DeferredReferences(pending: pendingReferences, count: pendingReferenceCount) }
        set {
            pendingReferences = newValue.pending
            pendingReferenceCount = newValue.count
            readyReferences = []
        }
    }

    /// Keeps a reference from `owner`'s relationship `field` to the object of `destination` with identity `key`,
    /// which is not stored yet.
    func deferReference(from owner: any EntityObject, field: Int, to destination: Int, _ key: IdentityKey) {
        let state = owner.entityState
        let pending = PendingReference(owner: state.entityIndex, ownerRowID: state.rowID, field: field)
        pendingReferences[destination, default: [:]][key, default: []].append(pending)
        pendingReferenceCount += 1
    }

    /// Called for each inserted object while references wait for its entity.
    func objectArrived(_ object: any EntityObject, _ mapping: EntitySchema, identity: IdentityKey?) {
        guard let waiting = pendingReferences[mapping.index], !waiting.isEmpty else { return }
        let key = identity ?? identityKey(of: object, mapping)
        guard let references = pendingReferences[mapping.index]?.removeValue(forKey: key) else { return }
        pendingReferenceCount -= references.count
        readyReferences.append((object, references))
    }

    /// Links the references whose destination arrived (before a save plans its writes).
    func linkReadyReferences() throws {
        while !readyReferences.isEmpty {
            let ready = readyReferences
            readyReferences = []
            for (destination, references) in ready {
                guard destination.entityState.status == .inserted || destination.entityState.status == .persistent else { continue }
                for reference in references {
                    guard let owner = try object(entity: reference.owner, rowID: reference.ownerRowID),
                        let relationship = model.mappings[reference.owner].relationships[reference.field]
                    else { continue }
                    if relationship.description.isToMany {
                        let members = loadToMany(owner, relationship)
                        if !members.contains(where: { $0 === destination }) { setToMany(owner, relationship, members + [destination]) }
                    } else {
                        setToOne(owner, relationship, destination)
                    }
                }
            }
        }
    }

    /// The references kept by the deferred policy whose destination has not arrived (yet): per destination
    /// entity, how many. Check it before a write returns if they must all resolve.
    public var unresolvedReferences: [String: Int] {
        var counts: [String: Int] = [:]
        for (entity, byKey) in pendingReferences {
            let count = byKey.values.reduce(0) { $0 + $1.count }
            if count > 0 { counts[model.mappings[entity].name] = count }
        }
        return counts
    }

    /// Some of the unresolved references, for messages: `Issue 7 (from Comment.issue)`.
    func unresolvedReferenceExamples(limit: Int) -> [String] {
        var examples: [String] = []
        for (entity, byKey) in pendingReferences.sorted(by: { $0.key < $1.key }) {
            for (key, references) in byKey {
                guard let reference = references.first else { continue }
                let owner = model.mappings[reference.owner]
                let values = key.values.map { value -> String in
                    if case .text(let text) = value { return "\"\(text)\"" }
                    return "\(value)"
                }
                examples.append(
                    "\(model.mappings[entity].name) \(values.joined(separator: ", ")) (from \(owner.name).\(owner.description.fields[reference.field].name))")
                if examples.count == limit { return examples }
            }
        }
        return examples
    }
}
