/// Upsert for objects made in Swift: what the decoder does for JSON, for an object built in code.
extension Context {
    /// Inserts `object`, or, when the store or this context already holds an object with its identity, updates that
    /// object with `object`'s values and returns it: use the object this returns.
    ///
    /// ```swift
    /// let ada = try context.upsert(Person(id: 1, name: "Ada Lovelace"))   // inserted, or person 1 renamed
    /// ```
    /// Updating is change tracking as usual: only attributes whose value differs are written, and an upsert that
    /// changes nothing writes nothing. Every attribute of `object` is copied; of its relationships, those it has
    /// (a destination, or members) replace the existing object's, and those it has not (`nil`, empty) leave the
    /// existing object's as they are. `object` itself stays unsaved and detached when it was not inserted.
    ///
    /// Related objects made in Swift are upserted too, before it, as the decoder upserts nested objects: a
    /// destination whose identity is stored becomes the stored object (updated with the destination's values).
    /// Build the graph from one side (set `issue.labels`, not also `label.issues`): a destination whose own
    /// relationships lead back to an object of the graph not upserted yet would insert that object as new.
    ///
    /// An entity without identity has nothing to match: its objects are always inserted.
    /// - Throws: ``StoreError`` if the context is read-only, the class is not an entity of the store, or `object`
    ///   belongs to another context.
    @discardableResult
    public func upsert<T: EntityObject>(_ object: T) throws -> T {
        var visiting = ObjectSet()
        return try upsert(object, visiting: &visiting)
    }

    /// Upserts `object` and, first, the detached objects its relationships hold (but those in `visiting`: the
    /// objects whose upsert is under way, which hold their graph alive).
    private func upsert<T: EntityObject>(_ object: T, visiting: inout ObjectSet) throws -> T {
        if isReadOnly { throw StoreError.readOnly("upsert") }
        let state = object.entityState
        if state.context === self, state.status != .deleted { return object }
        let mapping = try model.mapping(for: T.self)
        guard state.context == nil else {
            try insert(object)  // another context's: insert says so
            return object
        }
        visiting.insert(object)
        try upsertDestinations(of: object, mapping, visiting: &visiting)
        // Looked up as the decoder looks up identities: answered from memory when this context holds the object
        // (or knows it is not stored), without writing pending changes first.
        guard !mapping.identityColumns.isEmpty,
            let existing = try self.object(entity: mapping.index, identity: identityKey(of: object, mapping))
        else {
            try insert(object)
            return object
        }
        try copyValues(of: object, to: existing, mapping)
        return unsafeDowncast(existing, to: T.self)
    }

    /// Replaces the detached destinations of `object`'s relationships with what upserting them returns.
    private func upsertDestinations(of object: any EntityObject, _ mapping: EntitySchema, visiting: inout ObjectSet) throws {
        func upserted(_ destination: any EntityObject) throws -> any EntityObject {
            guard destination.entityState.context == nil, !visiting.contains(destination) else { return destination }
            return try upsert(destination, visiting: &visiting)
        }
        for case let relationship? in mapping.relationships {
            let description = relationship.description
            if description.isToMany {
                let members = description.getMany(object)
                guard !members.isEmpty else { continue }
                let resolved = try members.map(upserted)
                if zip(members, resolved).contains(where: { $0 !== $1 }) { description.setMany(object, resolved) }
            } else if let destination = description.getOne(object) {
                let resolved = try upserted(destination)
                if resolved !== destination { description.setOne(object, resolved) }
            }
        }
    }

    /// The object with this identity, or the one `make` creates, inserted (find-or-create).
    ///
    /// ```swift
    /// let label = try context.findOrCreate(Label.self, identity: 7) { Label(id: 7, name: "bug") }
    /// ```
    /// `make` runs only when no object has the identity.
    /// - Throws: ``StoreError`` (`invalidObject`) when the object `make` returns has another identity, or what
    ///   `make` or the insert throws.
    public func findOrCreate<T: EntityObject, V: AttributeValue>(_ type: T.Type, identity value: V, _ make: () throws -> T) throws -> T {
        try findOrCreate(type, identity: [value], make)
    }

    /// The object with this composite identity (values in the order of the entity's ``Identity``), or the one
    /// `make` creates, inserted.
    ///
    /// ```swift
    /// let issue = try context.findOrCreate(Issue.self, identity: ["apple/swift", 42]) { Issue(repository: "apple/swift", number: 42) }
    /// ```
    /// - Throws: ``StoreError`` (`invalidObject`) when the number of values is not the identity's, or the object
    ///   `make` returns has another identity, or what `make` or the insert throws.
    public func findOrCreate<T: EntityObject>(_ type: T.Type, identity values: [any AttributeValue], _ make: () throws -> T) throws -> T {
        if let found = try object(type, identity: values) { return found }
        let made = try make()
        let mapping = try model.mapping(for: T.self)
        let identity = identityValues(of: made, mapping)
        let asked = values.map(\.databaseValue)
        guard identity == asked else {
            throw StoreError(
                .invalidObject,
                "findOrCreate was asked for \(mapping.name) \(asked.map(\.description).joined(separator: ", ")) but made one whose identity is \(identity.map(\.description).joined(separator: ", "))",
                entity: mapping.name)
        }
        try insert(made)
        return made
    }

    /// Copies the attributes of a detached object, and the relationships it has, onto a held one, with change
    /// tracking.
    private func copyValues(of source: any EntityObject, to target: any EntityObject, _ mapping: EntitySchema) throws {
        let state = target.entityState
        for case .attribute(let attribute) in mapping.description.fields {
            let new = attribute.value(of: source)
            let current = attribute.value(of: target)
            guard new != current else { continue }
            do {
                try attribute.writeValue(target, new)
            } catch {
                throw StoreError(.invalidObject, "\(mapping.name).\(attribute.name): \(error)", entity: mapping.name, field: attribute.name)
            }
            state.didChange(target, attribute.index, from: current)
        }
        for case let relationship? in mapping.relationships {
            let description = relationship.description
            if description.isToMany {
                let members = description.getMany(source)
                guard !members.isEmpty else { continue }
                description.setMany(source, [])
                setToMany(target, relationship, members)
            } else if let destination = description.getOne(source) {
                description.setOne(source, nil)
                setToOne(target, relationship, destination)
            }
        }
        try throwDeferredError()
    }
}
