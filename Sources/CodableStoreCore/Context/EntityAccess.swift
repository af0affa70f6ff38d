/// The tracking accessors that ``Entity()`` routes every field through. Not for direct use, except in
/// hand-written ``EntityObject`` conformances.
///
/// The overloads are chosen by the field's type: attributes compare and mark the field changed; to-one and
/// to-many relationships also load on first access and keep inverses consistent. `store` writes the raw
/// storage.
public enum _$EntityAccess {
    // MARK: Attributes

    @inlinable @inline(__always)
    public static func get<Root: EntityObject, Value: AttributeValue>(
        _ owner: Root, _ field: Int, _ value: Value, _ store: (Root, Value) -> Void
    ) -> Value {
        value
    }

    /// Assigns an attribute; an equal value changes nothing and does not mark the field.
    @inlinable
    public static func set<Root: EntityObject, Value: AttributeValue>(
        _ owner: Root, _ field: Int, _ old: Value, _ new: Value, _ store: (Root, Value) -> Void
    ) {
        if old == new { return }
        store(owner, new)
        owner.entityState.didChange(owner, field, from: old.databaseValue)
    }

    // MARK: To-one

    public static func get<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ value: Destination?, _ store: (Root, Destination?) -> Void
    ) -> Destination? {
        let state = owner.entityState
        guard state.unloadedRelationships.contains(field), let context = state.context else { return value }
        return context.resolveToOne(owner, context.relationship(owner, field)).map { unsafeDowncast($0, to: Destination.self) }
    }

    public static func set<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ old: Destination?, _ new: Destination?, _ store: (Root, Destination?) -> Void
    ) {
        let state = owner.entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            store(owner, new)
            return
        }
        context.setToOne(owner, state, context.relationship(owner, field), new, new?.entityState)
    }

    // MARK: Ordered to-many

    public static func get<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ value: [Destination], _ store: (Root, [Destination]) -> Void
    ) -> [Destination] {
        let state = owner.entityState
        guard state.unloadedRelationships.contains(field), let context = state.context else { return value }
        return context.loadToMany(owner, context.relationship(owner, field)).map {
            unsafeDowncast($0, to: Destination.self)
        }
    }

    /// Assigns an ordered to-many relationship; duplicates are dropped (a to-many relationship holds each
    /// object once), and the same members in the same order change nothing.
    public static func set<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ old: [Destination], _ new: [Destination], _ store: (Root, [Destination]) -> Void
    ) {
        let state = owner.entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            store(owner, new)
            return
        }
        context.setToMany(owner, state, context.relationship(owner, field), new)
    }

    // MARK: Unordered to-many

    public static func get<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ value: Set<Destination>, _ store: (Root, Set<Destination>) -> Void
    ) -> Set<Destination> {
        let state = owner.entityState
        guard state.unloadedRelationships.contains(field), let context = state.context else { return value }
        return Set(context.loadToMany(owner, context.relationship(owner, field)).map {
            unsafeDowncast($0, to: Destination.self)
        })
    }

    public static func set<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ old: Set<Destination>, _ new: Set<Destination>,
        _ store: (Root, Set<Destination>) -> Void
    ) {
        let state = owner.entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            store(owner, new)
            return
        }
        context.setToMany(owner, state, context.relationship(owner, field), Array(new))
    }

    // MARK: Optional to-many (nil reads as no members)

    public static func get<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ value: [Destination]?, _ store: (Root, [Destination]?) -> Void
    ) -> [Destination]? {
        let state = owner.entityState
        guard state.unloadedRelationships.contains(field), let context = state.context else { return value }
        return context.loadToMany(owner, context.relationship(owner, field)).map { unsafeDowncast($0, to: Destination.self) }
    }

    /// Assigns an optional ordered to-many relationship: `nil` removes every member, as `[]` does.
    public static func set<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ old: [Destination]?, _ new: [Destination]?, _ store: (Root, [Destination]?) -> Void
    ) {
        let state = owner.entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            store(owner, new)
            return
        }
        context.setToMany(owner, state, context.relationship(owner, field), new ?? [])
    }

    public static func get<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ value: Set<Destination>?, _ store: (Root, Set<Destination>?) -> Void
    ) -> Set<Destination>? {
        let state = owner.entityState
        guard state.unloadedRelationships.contains(field), let context = state.context else { return value }
        return Set(context.loadToMany(owner, context.relationship(owner, field)).map { unsafeDowncast($0, to: Destination.self) })
    }

    /// Assigns an optional unordered to-many relationship: `nil` removes every member, as `[]` does.
    public static func set<Root: EntityObject, Destination: EntityObject>(
        _ owner: Root, _ field: Int, _ old: Set<Destination>?, _ new: Set<Destination>?,
        _ store: (Root, Set<Destination>?) -> Void
    ) {
        let state = owner.entityState
        guard let context = state.context, state.status == .inserted || state.status == .persistent else {
            store(owner, new)
            return
        }
        context.setToMany(owner, state, context.relationship(owner, field), Array(new ?? []))
    }
}
