import Foundation

/// Decoding entities: identity lookup, upsert, relationships, batches.
extension StoreDecoderImpl {
    var context: Context { session.context }

    func decodeEntity(_ type: any EntityObject.Type, _ node: Node, _ path: CodingPathNode) throws -> any EntityObject {
        try decodeEntity(try context.model.mapping(for: type), node, path).object
    }

    /// Upserts one entity from a JSON object. Returns the object with its state, which the caller would otherwise
    /// read again (see `TrackedObject`).
    func decodeEntity(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode, prepared: Bool = false) throws
        -> TrackedObject
    {
        switch tape.kind(of: node) {
        case .object: break
        case .null: throw valueNotFound(mapping.description.type, path)
        default:
            guard let tracked = try bareReference(mapping, node, path) else {
                throw DecodingError.valueNotFound(
                    mapping.description.type,
                    DecodingError.Context(
                        codingPath: path.path,
                        debugDescription: "No stored \(mapping.name) has the identity \(String(decoding: materialize(node).jsonBytes(), as: UTF8.self)), and the unknown-reference policy is .ignore."))
            }
            return tracked
        }
        if !prepared, let preparing = mapping.coding.jsonPreparing {
            var json = materialize(node)
            do {
                try preparing.prepareForDecoding(&json)
            } catch {
                throw Self.locating(error, at: path, in: "\(mapping.name).prepareForDecoding")
            }
            let tape = try JSONTape.parse(json.jsonBytes())
            let prepared = StoreDecoderImpl(tape: tape, node: tape.root, path: path, session: session)
            return try prepared.decodeEntity(mapping, tape.root, path, prepared: true)
        }
        var key: Context.IdentityKey?
        if !mapping.description.identity.isEmpty {
            let identity = try identityKey(mapping, node, path)
            if let existing = try context.trackedObject(entity: mapping.index, identity: identity) {
                try existing.withState { try decodeFields(of: existing.object, $0, mapping, node, path, isNew: false) }
                return existing
            }
            key = identity
        }
        let created = try createEntity(
            mapping, node, path, stubIdentity: nil, identity: key, leavingFieldsToHook: mapping.coding.hasCustomDecoding)
        try created.withState { try decodeFields(of: created.object, $0, mapping, node, path, isNew: true) }
        return created
    }

    /// Decodes the fields of the object `decodeEntity` found (or created: `isNew`) for a JSON object.
    private func decodeFields(
        of object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode,
        isNew: Bool
    ) throws {
        if session.isCounting { session.countDecoded(state, entity: mapping.index) }
        session.saw(state, entity: mapping.index)
        if mapping.coding.hasCustomDecoding, let custom = object as? any EntityCustomDecoding {
            try with(node: node, path: path) { try custom.initialize(from: self) }
        } else {
            // The identity attributes hold the key the object was found by: equal values, nothing to compare.
            if !isNew {
                try applyAttributes(to: object, state, mapping, node, path, skipping: mapping.description.identitySet)
            }
            if mapping.hasRelationships { try applyRelationships(to: object, state, mapping, node, path) }
        }
    }

    /// An error thrown by a hook, with the coding path of the object it was given: a `DecodingError` gets the
    /// object's path in front of its own, a ``StoreError`` its path; any other error becomes
    /// `DecodingError.dataCorrupted` at the object, with the error as its underlying error.
    static func locating(_ error: any Error, at path: CodingPathNode, in hook: String) -> any Error {
        switch error {
        case let error as DecodingError:
            func moved(_ context: DecodingError.Context) -> DecodingError.Context {
                DecodingError.Context(
                    codingPath: path.path + context.codingPath, debugDescription: context.debugDescription,
                    underlyingError: context.underlyingError)
            }
            switch error {
            case .typeMismatch(let type, let context): return DecodingError.typeMismatch(type, moved(context))
            case .valueNotFound(let type, let context): return DecodingError.valueNotFound(type, moved(context))
            case .keyNotFound(let key, let context): return DecodingError.keyNotFound(key, moved(context))
            case .dataCorrupted(let context): return DecodingError.dataCorrupted(moved(context))
            @unknown default: return error
            }
        case var error as StoreError:
            if error.codingPath.isEmpty { error.codingPath = path.path }
            return error
        default:
            return DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: path.path, debugDescription: "\(hook) failed: \(error)", underlyingError: error))
        }
    }

    /// The JSON value at `node` as a tree.
    func materialize(_ node: Node) -> JSONValue { JSONValue(tape: tape, at: node) }

    // MARK: - Fields

    /// The value of a field in a JSON object, following a key path (`["origin", "country"]`); nil when a
    /// key on the way is missing (the field is then left as it is). A `null` on the way is the field's value:
    /// `"license": null` clears `license.key` and `license.name` as `{"key": null, "name": null}` would.
    func fieldNode(_ object: Node, _ keyPath: [String], _ path: CodingPathNode) throws -> (Node, CodingPathNode)? {
        var current = object
        var currentPath = path
        for (position, component) in keyPath.enumerated() {
            if position > 0 {
                switch tape.kind(of: current) {
                case .object: break
                case .null: return (current, currentPath)
                default: throw typeMismatch([String: Any].self, current, currentPath)
                }
            }
            guard let next = member(current, key: component) else { return nil }
            current = next
            currentPath = currentPath.appending(component)
        }
        return (current, currentPath)
    }

    /// A field's value in a JSON object, with the path to it built only when an error needs it.
    ///
    /// It holds no reference (a single key's path is made from the object's path and the mapping's key), so
    /// making and dropping one per field costs no reference counting.
    struct FieldValue {
        let node: Node
        /// The field's index, whose single JSON key follows the object's path.
        let index: Int
        /// The whole path, when it is not the object's path and the field's single key (a key path, a
        /// reference's element).
        let fullPath: CodingPathNode?

        init(node: Node, index: Int) {
            self.node = node
            self.index = index
            self.fullPath = nil
        }

        init(node: Node, path: CodingPathNode) {
            self.node = node
            self.index = -1
            self.fullPath = path
        }

        /// The path to the value, from the path of the object holding it.
        func path(in object: CodingPathNode, _ mapping: EntitySchema) -> CodingPathNode {
            if let fullPath { return fullPath }
            return object.appending(mapping.coding.singleJSONKeys[index]!.string)
        }
    }

    /// The value of field `index` in a JSON object, or nil when its key (or a key on its key path) is missing.
    /// Single keys are looked up with precomputed hashes, continuing from the previous lookup (`hint`).
    func field(
        _ object: Node, _ mapping: EntitySchema, _ index: Int, _ path: CodingPathNode, _ hint: inout JSONTape.LookupHint
    ) throws -> FieldValue? {
        if session.usesDefaultKeys, let found = mapping.coding.singleKeyValue(of: index, in: object, tape, hint: &hint) {
            return found.map { FieldValue(node: $0, index: index) }
        }
        guard mapping.coding.jsonKeys[index] != nil else { return nil }
        guard let keyPath = mapping.description.codingKeyPaths[index],
            let (node, fullPath) = try fieldNode(object, keyPath, path)
        else { return nil }
        return FieldValue(node: node, path: fullPath)
    }

    /// The node of field `index` when the JSON object has it, ignoring malformed key paths (for the prefetch
    /// pass: decoding reports those).
    package func presentField(_ object: Node, _ mapping: EntitySchema, _ index: Int) -> Node? {
        var hint = JSONTape.LookupHint()
        return presentField(object, mapping, index, hint: &hint)
    }

    /// ``presentField(_:_:_:)`` for one of several fields of the same object asked for in turn: `hint` carries
    /// where the last lookup stopped (see `JSONTape.value(forKey:in:hint:)`).
    func presentField(_ object: Node, _ mapping: EntitySchema, _ index: Int, hint: inout JSONTape.LookupHint) -> Node? {
        ((try? field(object, mapping, index, .root, &hint)) ?? nil)?.node
    }

    /// Decodes an attribute's JSON value as stored. Common types are read straight from the tape; others go
    /// through their `Decodable` conformance.
    func decodeAttributeValue(
        _ attribute: AttributeDescription, _ value: FieldValue, in objectPath: CodingPathNode, _ mapping: EntitySchema
    ) throws -> DatabaseValue {
        let node = value.node
        let fastKind = attribute.fastKind
        if fastKind.isOtherOrFixedFormatDate {
            if fastKind == .other {
                return try with(node: node, path: value.path(in: objectPath, mapping)) { try attribute.decodeDatabaseValue(self) }
            }
            return try decodeFixedFormatDate(attribute, value, in: objectPath, mapping)
        }
        let kind = tape.kind(of: node)
        // The common case first, without forming the path (an autoclosure capturing it costs two reference
        // counting operations per attribute): the checked calls below report the errors.
        switch (fastKind, kind) {
        case (.int, .number): if let integer = int64(node) { return .integer(integer) }
        case (.double, .number): if let real = double(node) { return .real(real) }
        case (.string, .string): return .text(string(node))
        case (.bool, .bool): return .integer(bool(node) ? 1 : 0)
        case (.date, .string): if session.datesAreISO8601, let seconds = iso8601Seconds(node) { return .real(seconds) }
        default: break
        }
        if kind == .null {
            if attribute.isOptional { return .null }
            throw valueNotFound(attribute.valueType, value.path(in: objectPath, mapping))
        }
        switch fastKind {
        case .int: return .integer(Int64(try unwrapInteger(node, value.path(in: objectPath, mapping)) as Int))
        case .double: return .real(try unwrapFloatingPoint(node, value.path(in: objectPath, mapping)) as Double)
        case .string where kind == .number && attribute.readsNumbersAsText: return .text(numberText(node))
        case .string: return .text(try unwrapString(node, value.path(in: objectPath, mapping)))
        case .bool: return .integer(try unwrapBool(node, value.path(in: objectPath, mapping)) ? 1 : 0)
        case .date: return .real(try unwrapDate(node, value.path(in: objectPath, mapping)).timeIntervalSince1970)
        case .other, .iso8601Date, .secondsDate, .millisecondsDate: preconditionFailure("decoded above")
        }
    }

    /// ``decodeAttributeValue(_:_:in:_:)`` of a date attribute in one format whatever the decoder's strategy
    /// (described at run time). Apart from the common kinds, so that their switch stays as it was for compiled
    /// entities (callgrind: 6 M instructions at 100k records when these cases shared it).
    @inline(never)
    private func decodeFixedFormatDate(
        _ attribute: AttributeDescription, _ value: FieldValue, in objectPath: CodingPathNode, _ mapping: EntitySchema
    ) throws -> DatabaseValue {
        let node = value.node
        let kind = tape.kind(of: node)
        switch (attribute.fastKind, kind) {
        case (.iso8601Date, .string): if let seconds = iso8601Seconds(node) { return .real(seconds) }
        case (.secondsDate, .number): if let real = double(node) { return .real(real) }
        case (.millisecondsDate, .number): if let real = double(node) { return .real(real / 1000) }
        default: break
        }
        if kind == .null {
            if attribute.isOptional { return .null }
            throw valueNotFound(attribute.valueType, value.path(in: objectPath, mapping))
        }
        if attribute.fastKind == .iso8601Date {
            try check(node, .string, String.self, value.path(in: objectPath, mapping))
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: value.path(in: objectPath, mapping).path, debugDescription: "Expected date string to be ISO8601-formatted."))
        }
        let number = try unwrapFloatingPoint(node, value.path(in: objectPath, mapping)) as Double
        return .real(attribute.fastKind == .millisecondsDate ? number / 1000 : number)
    }

    /// The identity of the record at `root` (an object), read ahead or read now; nil when it has none that decodes.
    package func ownIdentity(_ mapping: EntitySchema, _ root: Node) -> Context.IdentityKey? {
        if let key = known?.peekKey(for: root, entity: mapping.index) { return key }
        return try? identityKey(mapping, root, .root)
    }

    /// The identity values of the JSON object, converted to the identity attributes' types.
    func identityKey(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode) throws -> Context.IdentityKey {
        if let key = known?.key(for: node, entity: mapping.index) { return key }
        if let key = fastIdentityKey(mapping, node) { return key }
        let description = mapping.description
        var hint = JSONTape.LookupHint()
        if description.identity.count == 1, case .attribute(let attribute) = description.fields[description.identity[0]] {
            guard let value = try field(node, mapping, attribute.index, path, &hint), tape.kind(of: value.node) != .null else {
                throw missingIdentity(mapping, node, path)
            }
            return Context.IdentityKey(single: try decodeAttributeValue(attribute, value, in: path, mapping))
        }
        var values: [DatabaseValue] = []
        values.reserveCapacity(description.identity.count)
        for index in description.identity {
            guard case .attribute(let attribute) = description.fields[index] else { continue }
            guard let value = try field(node, mapping, index, path, &hint), tape.kind(of: value.node) != .null else {
                throw missingIdentity(mapping, node, path)
            }
            values.append(try decodeAttributeValue(attribute, value, in: path, mapping))
        }
        return Context.IdentityKey(values)
    }

    /// The identity of a JSON object whose entity is identified by one `Int` or `String` attribute, read straight
    /// from the tape: what the general path below returns in its common case, without its lookups of the description
    /// and its generic decoding (the importer's reader thread reads a few identities per record). nil whenever the
    /// general path has to decide (a missing key, `null`, a value of another kind or out of range, a key path that
    /// does not lead to a value): it then reports the error or converts the value.
    @inline(__always)
    func fastIdentityKey(_ mapping: EntitySchema, _ node: Node) -> Context.IdentityKey? {
        guard let identity = mapping.coding.singleIdentity else { return nil }
        var hint = JSONTape.LookupHint()
        guard let value = (try? field(node, mapping, identity.field, .root, &hint)) ?? nil else { return nil }
        return Context.IdentityKey(scalar: identity.kind, at: value.node, in: tape)
    }

    /// The error for an object without its identity. An identity key that is present but `null` is named as such
    /// (`'id' is null`), with its key in the coding path; otherwise the message lists the keys received.
    func missingIdentity(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode) -> StoreError {
        let wantedPaths = mapping.description.identity.map { field in
            mapping.description.codingKeyPaths[field] ?? [mapping.description.fields[field].name]
        }
        let wanted = wantedPaths.map { $0.joined(separator: ".") }
        let received = members(node).map(\.key)
        // A present key whose value is null (for a key path: null anywhere on its way).
        let nullPath = wantedPaths.lazy.compactMap { self.nullPrefix(node, $0) }.first
        var error: StoreError
        if let nullPath {
            error = StoreError(
                .missingIdentity,
                "\(mapping.name) at \(path.rendered) has a null identity: '\(nullPath.joined(separator: "."))' is null",
                entity: mapping.name)
            error.codingPath = path.path + nullPath.map { CodingKeys(stringValue: $0) }
        } else {
            error = StoreError(
                .missingIdentity,
                "\(mapping.name) at \(path.rendered) has no identity: expected key\(wanted.count == 1 ? "" : "s") "
                    + wanted.map { "'\($0)'" }.joined(separator: ", ") + " but received "
                    + (received.isEmpty ? "no keys" : "keys " + received.map { "'\($0)'" }.joined(separator: ", ")),
                entity: mapping.name)
            error.codingPath = path.path
        }
        error.identityKeys = wanted
        error.receivedKeys = received
        if let nullPath { error.nullKeys = [nullPath.joined(separator: ".")] }
        return error
    }

    /// The part of the key path that leads to a `null` in the object (the whole path, or an object on its way).
    private func nullPrefix(_ node: Node, _ keyPath: [String]) -> [String]? {
        var current = node
        for (depth, component) in keyPath.enumerated() {
            guard tape.kind(of: current) == .object, let next = member(current, key: component) else { return nil }
            if tape.kind(of: next) == .null { return Array(keyPath[...depth]) }
            current = next
        }
        return nil
    }

    /// Creates and inserts a new object from the JSON object (or, for a stub, from identity values only).
    ///
    /// With `leavingFieldsToHook` (an ``EntityCustomDecoding`` entity), the object starts as an update would
    /// find it: its identity, default values and nil, so that `initialize(from:)` decides which fields the
    /// JSON sets (`defaultInitialization(skipping:)` and `with:` hold on insert too) and can convert values the
    /// default decoding would refuse. Only a non-optional attribute without a default value is read from the
    /// JSON here, since the object cannot exist without it.
    func createEntity(
        _ mapping: EntitySchema, _ node: Node?, _ path: CodingPathNode, stubIdentity: Context.IdentityKey?,
        identity: Context.IdentityKey? = nil, leavingFieldsToHook: Bool = false
    ) throws -> TrackedObject {
        let description = mapping.description
        // An object described at run time keeps the array it is made from: one of its own size, not the session's.
        var values =
            description.isRuntime
            ? Array(repeating: DatabaseValue.null, count: description.fields.count)
            : session.takeFieldValues(count: description.fields.count)
        var hint = JSONTape.LookupHint()
        try description.forEachAttribute { attribute in
            // A stub's identity, or the key decoded from this JSON object: its values, not decoded again.
            if description.identitySet.contains(attribute.index), let known = stubIdentity ?? identity,
                let position = description.identity.firstIndex(of: attribute.index)
            {
                values[attribute.index] = known.value(at: position)
                return
            }
            if leavingFieldsToHook, attribute.defaultValue != nil || attribute.isOptional {
                values[attribute.index] = attribute.defaultValue ?? .null
                return
            }
            if let node, let value = try field(node, mapping, attribute.index, path, &hint) {
                values[attribute.index] = try decodeAttributeValue(attribute, value, in: path, mapping)
            } else if let defaultValue = attribute.defaultValue {
                values[attribute.index] = defaultValue
            } else if !attribute.isOptional {
                if stubIdentity != nil {
                    throw StoreError(
                        .invalidObject,
                        "cannot create a stub \(mapping.name) for a reference at \(path.rendered): its attribute '\(attribute.name)' has no default value; give it one, make it optional, or set unknownReferencePolicy to .ignore",
                        entity: mapping.name, field: attribute.name)
                }
                let keys = description.codingKeyPaths[attribute.index] ?? [attribute.name]
                var containerPath = path
                for component in keys.dropLast() { containerPath = containerPath.appending(component) }
                let key = CodingKeys(stringValue: keys.last ?? attribute.name)
                throw DecodingError.keyNotFound(
                    key,
                    DecodingError.Context(
                        codingPath: containerPath.path,
                        debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
            }
        }
        let tracked = try context.makeObject(entity: mapping.index, values: values, identity: identity ?? stubIdentity)
        if !description.isRuntime { session.giveBack(values) }
        // To-many relationships the JSON does not set start unloaded rather than empty: they are read from the
        // store (after a flush) if anyone asks, and meanwhile the inverse updates of a large import (a user
        // gaining thousands of issues) do not have to maintain them in memory.
        if mapping.hasRelationships {
            tracked.withState { state in
                description.forEachRelationship { relationship in
                    guard relationship.isToMany else { return }
                    if let node, presentField(node, mapping, relationship.index, hint: &hint) != nil { return }
                    state.unloadedRelationships.insert(relationship.index)
                }
            }
        }
        return tracked
    }

    /// Applies the attributes present in the JSON object to an existing object; equal values change nothing. The
    /// `skipped` fields are left as they are (the identity of an object found by the identity of this JSON object).
    func applyAttributes(
        to object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode,
        _ include: ((String) -> Bool)? = nil, skipping skipped: FieldSet = FieldSet()
    ) throws {
        var hint = JSONTape.LookupHint()
        try mapping.description.forEachAttribute { attribute in
            if skipped.contains(attribute.index) { return }
            if let include, !include(attribute.name) { return }
            guard let value = try field(node, mapping, attribute.index, path, &hint) else { return }
            if attribute.fastKind == .other {
                try with(node: value.node, path: value.path(in: path, mapping)) { try attribute.decodeAndAssign(object, self) }
                return
            }
            let current = attribute.value(of: object)
            // An unchanged string is compared in the tape's bytes: no String is made (and validated) for it.
            if attribute.fastKind == .string, case .text(let text) = current, tape.kind(of: value.node) == .string,
                tape.isString(at: value.node, equalTo: text)
            {
                return
            }
            let new = try decodeAttributeValue(attribute, value, in: path, mapping)
            if current != new {
                try attribute.writeValue(object, new)
                state.didChange(object, attribute.index, from: current)
            }
        }
    }

    // MARK: - Relationships

    func applyRelationships(
        to object: any EntityObject, _ state: EntityState, _ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode,
        _ include: ((String) -> Bool)? = nil
    ) throws {
        let description = mapping.description
        let context = self.context  // once: each read of the session's context is a retain and a release
        var hint = JSONTape.LookupHint()
        try description.forEachRelationship { relationshipDescription in
            if let include, !include(relationshipDescription.name) { return }
            guard let value = try field(node, mapping, relationshipDescription.index, path, &hint) else { return }
            try mapping.withRelationship(relationshipDescription.index) { relationship in
                try context.model.withMapping(relationship.destination) { destination in
                    try apply(relationship, to: object, state, value.node, value.path(in: path, mapping), destination, context)
                }
            }
        }
    }

    /// Sets one relationship of `object` from its JSON value (`node` at `path`), whose objects are `destination`'s.
    @inline(__always)
    private func apply(
        _ relationship: ResolvedRelationship, to object: any EntityObject, _ state: EntityState, _ node: Node,
        _ path: CodingPathNode, _ destination: EntitySchema, _ context: Context
    ) throws {
        let field = relationship.description.index
        let kind = tape.kind(of: node)
        if relationship.description.kind == .toOne {
            if kind == .null {
                context.setToOne(object, state, relationship, nil, nil)
            } else if let target = try reference(destination, node, path, from: (object, field)) {
                target.withState { context.setToOne(object, state, relationship, target.object, $0) }
            }
            return
        }
        switch kind {
        case .null:
            context.setToMany(object, state, relationship, [])
        case .array:
            var members: [any EntityObject] = []
            members.reserveCapacity(tape.count(of: node))
            for (offset, element) in tape.elements(of: node).enumerated() {
                if tape.kind(of: element) == .null { continue }
                if let member = try reference(destination, element, path.appending(index: offset), from: (object, field)) {
                    members.append(member.object)
                }
            }
            if session.appendsToMany {
                members = context.loadToMany(object, relationship) + members
            }
            context.setToMany(object, state, relationship, members)
        default:
            throw typeMismatch([Any].self, node, path)
        }
    }

    /// Whether a JSON object holds nothing but the destination's identity: a reference written as an object.
    private func isReferenceObject(_ mapping: EntitySchema, _ node: Node) -> Bool {
        let identity = mapping.description.identity
        // Most nested objects carry more than their identity: decide without reading the keys.
        guard !identity.isEmpty, tape.count(of: node) == identity.count else { return false }
        let members = members(node)
        guard members.count == identity.count else { return false }
        let keys = Set(identity.compactMap { mapping.description.codingKeyPaths[$0]?.first })
        return members.allSatisfy { keys.contains(session.convert($0.key, path: .root)) }
    }

    /// The object a relationship value refers to: a nested object is decoded (upserted); a bare identity
    /// (a value, an array of composite values, or an object of only identity keys) is looked up, and when it
    /// is not stored follows the relationship's policy (`from`: the owner and the relationship's field).
    func reference(
        _ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode, from owner: (object: any EntityObject, field: Int)? = nil
    ) throws -> TrackedObject? {
        let kind = tape.kind(of: node)
        if kind == .object, !isReferenceObject(mapping, node) {
            return try decodeEntity(mapping, node, path)
        }
        return try bareReference(mapping, node, path, from: owner)
    }

    /// The object a bare identity (a value, an array of composite values, or an object of only identity keys)
    /// refers to, wherever an entity is decoded: the stored object, untouched; when none is stored, a stub or
    /// nil (ignored, or deferred until it arrives), as the unknown-reference policy of the relationship (of
    /// the decoder, where no relationship holds it) says. A value of the wrong type is a `typeMismatch` at
    /// its own path.
    func bareReference(
        _ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode, from owner: (object: any EntityObject, field: Int)? = nil
    ) throws -> TrackedObject? {
        guard !mapping.description.identity.isEmpty else {
            throw typeMismatch([String: Any].self, node, path)
        }
        let key = try referenceKey(mapping, node, path)
        if let tracked = try context.trackedObject(entity: mapping.index, identity: key) {
            tracked.withState { session.saw($0, entity: mapping.index) }
            return tracked
        }
        var policy = session.options.unknownReferencePolicy
        if let owner, let declared = context.model.mappings[owner.object.entityState.entityIndex].coding.referencePolicies[owner.field] {
            policy = declared
        }
        switch policy {
        case .ignore:
            session.unresolvedReferences += 1
            return nil
        case .stub: return try createEntity(mapping, nil, path, stubIdentity: key)
        case .deferred:
            session.unresolvedReferences += 1
            if let owner { context.deferReference(from: owner.object, field: owner.field, to: mapping.index, key) }
            return nil
        }
    }

    /// An element of an array of entities: an object (upserted) or a bare identity; nil for an unknown bare
    /// identity that the unknown-reference policy ignores (left out of the result).
    func decodeElement(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode) throws -> (any EntityObject)? {
        switch tape.kind(of: node) {
        case .object:
            if let stamp = recordStamp, node == tape.root { return try decodeRecord(mapping, node, path, stamp: stamp) }
            return try decodeEntity(mapping, node, path).object
        case .null: return try decodeEntity(mapping, node, path).object
        default: return try bareReference(mapping, node, path)?.object
        }
    }

    /// An import's record that has a stamp (see ``RowStamps``): skipped when the batch's lookahead found its row
    /// stored as it would write it (nil: no object is made), else decoded and given the stamp, unless it left a
    /// reference unresolved.
    private func decodeRecord(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode, stamp: Int64) throws
        -> (any EntityObject)?
    {
        let key = try identityKey(mapping, node, path)
        if let rowID = context.takeUnchangedRow(entity: mapping.index, key: key) {
            try decodeNestedObjects(mapping, node, path)
            if session.isCounting { session.countUnchanged(entity: mapping.index) }
            context.unchangedRecordsSkipped += 1
            session.saw(rowID: rowID, entity: mapping.index)
            return nil
        }
        let unresolved = session.unresolvedReferences
        let tracked = try decodeEntity(mapping, node, path)
        if session.unresolvedReferences == unresolved {
            tracked.withState { context.applyStamp(tracked.object, $0, stamp) }
        }
        return tracked.object
    }

    /// What decoding an unchanged record still does: upsert the objects nested in it (a later record may have changed
    /// them since, and the order of this input decides), and, for a sync, note the synced entity's references.
    private func decodeNestedObjects(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode) throws {
        var hint = JSONTape.LookupHint()
        for relationship in mapping.description.relationships {
            guard let value = try field(node, mapping, relationship.index, path, &hint),
                let resolved = mapping.relationships[relationship.index]
            else { continue }
            let destination = context.model.mappings[resolved.destination]
            func decodeNested(_ element: Node, _ elementPath: @autoclosure () -> CodingPathNode) throws {
                switch tape.kind(of: element) {
                case .object:
                    _ = try decodeEntity(destination, element, elementPath())
                case .null:
                    break
                default:
                    if destination.index == session.syncEntity { _ = try bareReference(destination, element, elementPath()) }
                }
            }
            if !relationship.isToMany {
                try decodeNested(value.node, value.path(in: path, mapping))
            } else if tape.kind(of: value.node) == .array {
                let valuePath = value.path(in: path, mapping)
                for (position, element) in elements(value.node).enumerated() {
                    try decodeNested(element, valuePath.appending(index: position))
                }
            }
        }
    }

    /// The identity in a bare reference.
    func referenceKey(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode) throws -> Context.IdentityKey {
        if let key = known?.key(for: node, entity: mapping.index) { return key }
        if let identity = mapping.coding.singleIdentity, let key = Context.IdentityKey(scalar: identity.kind, at: node, in: tape) {
            return key
        }
        let description = mapping.description
        let attributes: [AttributeDescription] = description.identity.compactMap {
            if case .attribute(let attribute) = description.fields[$0] { attribute } else { nil }
        }
        switch tape.kind(of: node) {
        case .object:
            return try identityKey(mapping, node, path)
        case .array where attributes.count > 1:
            let elements = elements(node)
            guard elements.count == attributes.count else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: path.path,
                        debugDescription: "A reference to \(mapping.name) needs \(attributes.count) identity values (\(attributes.map(\.name).joined(separator: ", "))) but has \(elements.count)."))
            }
            var values: [DatabaseValue] = []
            for (offset, (attribute, element)) in zip(attributes, elements).enumerated() {
                values.append(try decodeAttributeValue(attribute, FieldValue(node: element, path: path.appending(index: offset)), in: path, mapping))
            }
            return Context.IdentityKey(values)
        case .array:
            // A single identity is a value, not an array: report it as JSONDecoder reports a non-object.
            throw typeMismatch([String: Any].self, node, path)
        default:
            guard attributes.count == 1 else {
                throw DecodingError.typeMismatch(
                    [Any].self,
                    DecodingError.Context(
                        codingPath: path.path,
                        debugDescription: "Expected a reference to \(mapping.name) as an object or an array of its \(attributes.count) identity values but found \(tape.kind(of: node).foundationDescription) instead."))
            }
            return Context.IdentityKey(single: try decodeAttributeValue(attributes[0], FieldValue(node: node, path: path), in: path, mapping))
        }
    }

    // MARK: - Batches

    /// Decodes an array of entities, resolving every identity in it (nested objects and bare references
    /// included) with one query per entity before decoding the elements.
    func decodeEntityArray(_ mapping: EntitySchema, _ node: Node, _ path: CodingPathNode) throws -> [any EntityObject] {
        guard tape.kind(of: node) == .array else {
            if tape.kind(of: node) == .null { throw valueNotFound([Any].self, path) }
            throw typeMismatch([Any].self, node, path)
        }
        let elements = elements(node)
        try prefetchIdentities(mapping, elements)
        var result: [any EntityObject] = []
        result.reserveCapacity(elements.count)
        for (offset, element) in elements.enumerated() {
            if let object = try decodeElement(mapping, element, path.appending(index: offset)) { result.append(object) }
        }
        return result
    }

    /// A decoder for one record of a `JSONRecordStream` (its coding paths start with the record's index), and
    /// the record's root value: what the importer and ``ParallelArrayDecoding`` decode batches of.
    /// Without `locating` (the reader's identity collection, which drops errors), the paths start at the root: one
    /// allocation less per record.
    package static func item(for record: JSONRecord, _ session: DecodingSession, locating: Bool = true) -> (StoreDecoderImpl, Node) {
        let impl = StoreDecoderImpl(
            tape: record.tape, node: record.tape.root,
            path: locating ? CodingPathNode.root.appending(index: record.index) : .root, session: session)
        return (impl, record.tape.root)
    }

    /// Looks up, with one query per entity, every identity that decoding these elements will need.
    func prefetchIdentities(_ mapping: EntitySchema, _ elements: [Node]) throws {
        try Self.prefetch(mapping, elements.map { (self, $0) }, context: context)
    }

    /// Looks up every identity that decoding these values (possibly from different tapes, as the records of
    /// an import batch are) will need, with one query per entity and chunk; then loads, in one query per
    /// relationship, the current to-many memberships of the stored objects whose memberships will be replaced.
    /// `keys`: the identities of `items`, when the caller collected them already (the importer, for the
    /// lookups it asked of its writer thread ahead of time).
    static func prefetch(
        _ mapping: EntitySchema, _ items: [(StoreDecoderImpl, Node)], context: Context, keys collected: [[Context.IdentityKey]]? = nil
    ) throws {
        // Nothing to look up when every entity's identity index already knows all its stored objects (an
        // empty store, a first sync): skip reading the identities twice. Memberships may still need loading.
        // Only indexes that exist are asked: making one probes its table, and the entities the values do not
        // mention (or the order they were registered in) must not cost queries.
        let allComplete = context.model.mappings.allSatisfy { entity in
            entity.identityColumns.isEmpty || context.identityIndexes[entity.index]?.isComplete == true
        }
        if !allComplete {
            let keys = collected ?? collectKeys(mapping, items, model: context.model).all
            func lookUpAll() throws {
                for (entity, entityKeys) in keys.enumerated() where !entityKeys.isEmpty {
                    try context.prefetch(entity: entity, keys: entityKeys)
                }
            }
            if collected != nil {
                // The importer had them looked up ahead: what is left is in memory (each query holds the
                // connection on its own).
                try lookUpAll()
            } else {
                // One hold of the connection for all the entities' lookups, when an import's writer thread
                // shares it. Saved and indexed first: a save, or making an identity index (which reads the
                // table), waits for the writer, which must not wait for this hold.
                if context.deferredWriter != nil {
                    try context.flush()
                    for (entity, entityKeys) in keys.enumerated() where !entityKeys.isEmpty { _ = try context.identityIndex(entity) }
                }
                try context.withSharedConnection { _ in try lookUpAll() }
            }
        }
        guard mapping.hasRelationships, !mapping.description.identity.isEmpty,
            context.materializedCounts[mapping.index] > 0
        else { return }
        for relationshipDescription in mapping.description.relationships where relationshipDescription.isToMany {
            guard let relationship = mapping.relationships[relationshipDescription.index] else { continue }
            var owners: [any EntityObject] = []
            for (impl, element) in items where impl.tape.kind(of: element) == .object {
                guard impl.presentField(element, mapping, relationshipDescription.index) != nil,
                    let key = try? impl.identityKey(mapping, element, .root),
                    let owner = context.cachedObject(entity: mapping.index, key: key).object,
                    owner.state.unloadedRelationships.contains(relationshipDescription.index)
                else { continue }
                owners.append(owner.object)
            }
            try context.loadToManyBatch(owners, relationship)
        }
    }

    /// The identities decoding `items` will look up, per entity (with repeats); with `keepingNodes`, each also with
    /// the node it was read from (for ``KnownIdentities``).
    /// Uses no context: the importer's reader thread runs it with a session of its own (``DecodingSession/init(model:options:)``).
    package static func collectKeys(
        _ mapping: EntitySchema, _ items: [(StoreDecoderImpl, Node)], model: Schema, keepingNodes: Bool = false
    ) -> CollectedKeys {
        var keys = CollectedKeys(entities: model.mappings.count, keepingNodes: keepingNodes)
        for (impl, node) in items {
            impl.collectKeys(mapping, node, depth: 0, into: &keys)
            if keepingNodes { keys.ends.append(keys.known.count) }
        }
        return keys
    }

    /// What ``collectKeys(_:_:depth:into:)`` collects into.
    package struct CollectedKeys {
        /// Per entity index, every identity, with repeats, in record order.
        var all: [[Context.IdentityKey]]
        let keepsNodes: Bool
        /// With `keepsNodes`: every identity with its node and entity, in record order, those of the `i`th item ending
        /// at `ends[i]`.
        var known: [KnownIdentity] = []
        var ends: [Int] = []

        init(entities: Int, keepingNodes: Bool) {
            all = Array(repeating: [], count: entities)
            keepsNodes = keepingNodes
        }

        @inline(__always)
        mutating func add(_ key: Context.IdentityKey, entity: Int, node: Node) {
            all[entity].append(key)
            if keepsNodes { known.append(KnownIdentity(node: node, entity: entity, key: key)) }
        }

        /// Removes what was added after the first `count` entries of ``known`` (with `keepsNodes`): a record the
        /// collection takes again from the start.
        mutating func removeKnown(after count: Int) {
            precondition(keepsNodes, "only collections that keep nodes can be rolled back")
            while known.count > count { all[known.removeLast().entity].removeLast() }
        }
    }
}

// MARK: - Collecting identities

/// How the collection of the identities decoding will look up (``collectKeys(_:_:depth:into:)``) reads a record:
/// through the decoder, which decides every case and leaves out what it cannot read, or through a plain reader of
/// the tape (``TapeIdentityReader``) that gives up (throws) wherever the decoder would have to decide.
protocol IdentityReading {
    associatedtype Undecided: Error
    var tape: JSONTape { get }
    var model: Schema { get }
    /// The identity of the JSON object `node` as `mapping`; nil when it has none to read.
    func identityToCollect(_ mapping: EntitySchema, _ node: JSONTape.Index) throws(Undecided) -> Context.IdentityKey?
    /// The identity a bare reference (a value, or an array of composite values) holds; nil when it holds none.
    func referenceToCollect(_ mapping: EntitySchema, _ node: JSONTape.Index) throws(Undecided) -> Context.IdentityKey?
    /// The value of field `index` in the JSON object, if there is one.
    func fieldToCollect(_ object: JSONTape.Index, _ mapping: EntitySchema, _ index: Int, hint: inout JSONTape.LookupHint)
        throws(Undecided) -> JSONTape.Index?
}

extension IdentityReading {
    /// Adds the identities decoding the value at `node` as `mapping` will look up: the object's own, then those
    /// its relationships hold, depth first, in the order decoding meets them.
    func collectKeys(
        _ mapping: EntitySchema, _ node: JSONTape.Index, depth: Int, into keys: inout StoreDecoderImpl.CollectedKeys
    ) throws(Undecided) {
        guard depth < 16 else { return }
        switch tape.kind(of: node) {
        case .object: break
        case .null: return
        default:
            // A bare identity as an element of the array itself (`[1, {"id": 2}, 3]`).
            if depth == 0, mapping.hasIdentity, let key = try referenceToCollect(mapping, node) {
                keys.add(key, entity: mapping.index, node: node)
            }
            return
        }
        // Plain values of the mapping only (not its description): see EntitySchema.relationshipFields.
        if mapping.hasIdentity, let key = try identityToCollect(mapping, node) {
            keys.add(key, entity: mapping.index, node: node)
        }
        guard mapping.hasRelationships else { return }
        var hint = JSONTape.LookupHint()
        for relationship in mapping.relationshipFields {
            guard let valueNode = try fieldToCollect(node, mapping, relationship.index, hint: &hint) else { continue }
            let destination = model.mappings[relationship.destination]
            if !relationship.isToMany {
                try collectDestination(destination, valueNode, depth: depth, into: &keys)
            } else if tape.kind(of: valueNode) == .array {
                for value in tape.elements(of: valueNode) {
                    try collectDestination(destination, value, depth: depth, into: &keys)
                }
            }
        }
    }

    /// A relationship's value (or one of its elements): a nested object, a bare reference or `null`.
    private func collectDestination(
        _ destination: EntitySchema, _ value: JSONTape.Index, depth: Int, into keys: inout StoreDecoderImpl.CollectedKeys
    ) throws(Undecided) {
        switch tape.kind(of: value) {
        case .null:
            return
        case .object:
            try collectKeys(destination, value, depth: depth + 1, into: &keys)
        default:
            if destination.hasIdentity, let key = try referenceToCollect(destination, value) {
                keys.add(key, entity: destination.index, node: value)
            }
        }
    }
}

extension StoreDecoderImpl: IdentityReading {
    typealias Undecided = Never
    var model: Schema { session.model }

    func identityToCollect(_ mapping: EntitySchema, _ node: Node) -> Context.IdentityKey? {
        try? identityKey(mapping, node, .root)
    }

    func referenceToCollect(_ mapping: EntitySchema, _ node: Node) -> Context.IdentityKey? {
        try? referenceKey(mapping, node, .root)
    }

    func fieldToCollect(_ object: Node, _ mapping: EntitySchema, _ index: Int, hint: inout JSONTape.LookupHint) -> Node? {
        presentField(object, mapping, index, hint: &hint)
    }
}

/// The identity collection of the common case, read straight from a record's tape without a decoder (the importer's
/// reader thread collects a few identities per record, and a decoder per record cost an allocation and a free):
/// objects identified by one `Int` or `String` attribute, fields under single JSON keys, the default key strategy
/// (its caller, `BatchLookup.Collector`, checks it). Anything else throws ``Undecided``, and the caller collects the record with a decoder,
/// so that both give the same keys.
struct TapeIdentityReader: IdentityReading {
    struct Undecided: Error {}
    let tape: JSONTape
    let model: Schema

    func identityToCollect(_ mapping: EntitySchema, _ node: JSONTape.Index) throws(Undecided) -> Context.IdentityKey? {
        guard let identity = mapping.coding.singleIdentity else { throw Undecided() }
        var hint = JSONTape.LookupHint()
        // A missing identity is the decoder's to report; its value is read as a bare reference's.
        guard let value = try fieldToCollect(node, mapping, identity.field, hint: &hint) else { throw Undecided() }
        return try referenceToCollect(mapping, value)
    }

    func referenceToCollect(_ mapping: EntitySchema, _ node: JSONTape.Index) throws(Undecided) -> Context.IdentityKey? {
        guard let identity = mapping.coding.singleIdentity, let key = Context.IdentityKey(scalar: identity.kind, at: node, in: tape)
        else { throw Undecided() }
        return key
    }

    func fieldToCollect(_ object: JSONTape.Index, _ mapping: EntitySchema, _ index: Int, hint: inout JSONTape.LookupHint)
        throws(Undecided) -> JSONTape.Index?
    {
        guard let found = mapping.coding.singleKeyValue(of: index, in: object, tape, hint: &hint) else { throw Undecided() }
        return found
    }
}

// MARK: - Entity collections

/// What decodes a JSON array of entities in batches: a decoder positioned on the array, or a whole document
/// read on a parser thread (``ParallelArrayDecoding``).
protocol EntityArrayDecoding {
    func decodeEntityArray<Element: EntityObject>(_ type: Element.Type) throws -> [Element]
}

extension StoreDecoderImpl {
    /// The entity the decoder is on (an object or a bare identity), upserted.
    func decodeOneEntity<Element: EntityObject>(_ type: Element.Type) throws -> Element {
        unsafeDowncast(try decodeEntity(try context.model.mapping(for: Element.self), node, path).object, to: Element.self)
    }
}

/// A handle on a decoder positioned on JSON entities (the store decoder's, or one made for a foreign decoder).
protocol EntityDecodingHandle: EntityArrayDecoding {
    func applyFields(to object: any EntityObject, _ include: (String) -> Bool) throws
    func decodeOneEntity<Element: EntityObject>(_ type: Element.Type) throws -> Element
}

extension StoreDecoderImpl: EntityDecodingHandle {
    /// The default decoding of the fields `include` accepts, from the JSON object the decoder is on.
    func applyFields(to object: any EntityObject, _ include: (String) -> Bool) throws {
        let mapping = try context.model.mapping(of: object)
        guard tape.kind(of: node) == .object else { throw typeMismatch([String: Any].self, node, path) }
        try withoutActuallyEscaping(include) { include in
            let state = object.entityState
            try applyAttributes(to: object, state, mapping, node, path, include)
            if mapping.hasRelationships { try applyRelationships(to: object, state, mapping, node, path, include) }
        }
    }

    func decodeEntityArray<Element: EntityObject>(_ type: Element.Type) throws -> [Element] {
        try decodeEntityArray(try context.model.mapping(for: Element.self), node, path).map {
            unsafeDowncast($0, to: Element.self)
        }
    }
}

/// Collections of entities the decoder fills in batches: `[T]`, `Set<T>` and ``Many``.
protocol EntityCollectionDecodable {
    static func decodeEntities(from handle: any EntityArrayDecoding) throws -> Self
}

extension Array: EntityCollectionDecodable where Element: EntityObject {
    static func decodeEntities(from handle: any EntityArrayDecoding) throws -> [Element] {
        try handle.decodeEntityArray(Element.self)
    }
}

extension Set: EntityCollectionDecodable where Element: EntityObject {
    static func decodeEntities(from handle: any EntityArrayDecoding) throws -> Set<Element> {
        Set(try handle.decodeEntityArray(Element.self))
    }
}
