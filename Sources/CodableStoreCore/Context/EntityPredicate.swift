/// A condition on an entity's fields, written with key paths and compiled to SQL with bound values.
///
/// ```swift
/// let open = \Issue.state == "open" && \Issue.comments >= 10
/// let unnamed: EntityPredicate<Person> = \.name == nil
/// let raw = EntityPredicate<Person>.sql("length(\"name\") > ?", [.integer(3)])
/// try context.fetch(Issue.self, where: open)
/// ```
///
/// Comparisons follow Swift: `== nil` is `IS NULL`, and `!=` keeps rows whose value is `NULL`.
/// Values are always bound, never spliced into the SQL.
public struct EntityPredicate<Root: EntityObject>: Sendable {
    indirect enum Node: Sendable {
        case comparison(KeyPathBox, ComparisonOperator, DatabaseValue)
        case membership(KeyPathBox, [DatabaseValue])
        case text(KeyPathBox, TextMatch, String, caseInsensitive: Bool)
        /// A condition on the destination of a to-one relationship: `relationship IN (SELECT …)`.
        case through(KeyPathBox, destination: any EntityObject.Type, SubqueryBox)
        /// A condition on the members of a to-many relationship: some member matches (`any`) or none does.
        case members(KeyPathBox, destination: any EntityObject.Type, SubqueryBox?, any: Bool)
        /// The number of members of a to-many relationship (that match the condition), compared with a number.
        case memberCount(KeyPathBox, destination: any EntityObject.Type, SubqueryBox?, ComparisonOperator, Int)
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)
        case sql(String, [DatabaseValue])
    }

    enum ComparisonOperator: String, Sendable {
        case equal = "="
        case notEqual = "<>"
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    enum TextMatch: Sendable {
        case contains, prefix, suffix
    }

    let node: Node

    init(_ node: Node) { self.node = node }

    /// Rows whose text attribute contains `text`. `caseInsensitive` compares Unicode-lowercased text.
    public static func contains(_ keyPath: KeyPath<Root, String>, _ text: String, caseInsensitive: Bool = false) -> EntityPredicate {
        EntityPredicate(.text(KeyPathBox(keyPath), .contains, text, caseInsensitive: caseInsensitive))
    }

    public static func contains(_ keyPath: KeyPath<Root, String?>, _ text: String, caseInsensitive: Bool = false) -> EntityPredicate {
        EntityPredicate(.text(KeyPathBox(keyPath), .contains, text, caseInsensitive: caseInsensitive))
    }

    /// Rows whose text attribute begins with `text`.
    public static func begins(_ keyPath: KeyPath<Root, String>, with text: String, caseInsensitive: Bool = false) -> EntityPredicate {
        EntityPredicate(.text(KeyPathBox(keyPath), .prefix, text, caseInsensitive: caseInsensitive))
    }

    public static func begins(_ keyPath: KeyPath<Root, String?>, with text: String, caseInsensitive: Bool = false) -> EntityPredicate {
        EntityPredicate(.text(KeyPathBox(keyPath), .prefix, text, caseInsensitive: caseInsensitive))
    }

    /// Rows whose text attribute ends with `text`.
    public static func ends(_ keyPath: KeyPath<Root, String>, with text: String, caseInsensitive: Bool = false) -> EntityPredicate {
        EntityPredicate(.text(KeyPathBox(keyPath), .suffix, text, caseInsensitive: caseInsensitive))
    }

    public static func ends(_ keyPath: KeyPath<Root, String?>, with text: String, caseInsensitive: Bool = false) -> EntityPredicate {
        EntityPredicate(.text(KeyPathBox(keyPath), .suffix, text, caseInsensitive: caseInsensitive))
    }

    /// Rows whose to-one relationship leads to an object matching `condition` (a join, written as a
    /// subquery): `.through(\Issue.user, \User.login == "ada")`.
    public static func through<Destination: EntityObject>(
        _ relationship: KeyPath<Root, Destination?>, _ condition: EntityPredicate<Destination>
    ) -> EntityPredicate {
        EntityPredicate(.through(KeyPathBox(relationship), destination: Destination.self, SubqueryBox(condition)))
    }

    /// Rows with at least one member of the to-many relationship matching `condition` (any member, without
    /// one): issues with the label "bug" are `.any(\Issue.labels, \Label.name == "bug")`.
    public static func any<Destination: EntityObject>(
        _ relationship: KeyPath<Root, Set<Destination>>, _ condition: EntityPredicate<Destination>? = nil
    ) -> EntityPredicate {
        EntityPredicate(.members(KeyPathBox(relationship), destination: Destination.self, condition.map(SubqueryBox.init), any: true))
    }

    public static func any<Destination: EntityObject>(
        _ relationship: KeyPath<Root, [Destination]>, _ condition: EntityPredicate<Destination>? = nil
    ) -> EntityPredicate {
        EntityPredicate(.members(KeyPathBox(relationship), destination: Destination.self, condition.map(SubqueryBox.init), any: true))
    }

    /// Rows with no member of the to-many relationship matching `condition` (no member at all, without one).
    public static func none<Destination: EntityObject>(
        _ relationship: KeyPath<Root, Set<Destination>>, _ condition: EntityPredicate<Destination>? = nil
    ) -> EntityPredicate {
        EntityPredicate(.members(KeyPathBox(relationship), destination: Destination.self, condition.map(SubqueryBox.init), any: false))
    }

    public static func none<Destination: EntityObject>(
        _ relationship: KeyPath<Root, [Destination]>, _ condition: EntityPredicate<Destination>? = nil
    ) -> EntityPredicate {
        EntityPredicate(.members(KeyPathBox(relationship), destination: Destination.self, condition.map(SubqueryBox.init), any: false))
    }

    /// A comparison of a number of members with a number: `.count(\Issue.labels, .atLeast(2))`.
    public enum CountComparison: Sendable {
        case equal(Int), notEqual(Int), lessThan(Int), atMost(Int), greaterThan(Int), atLeast(Int)

        var parts: (ComparisonOperator, Int) {
            switch self {
            case .equal(let n): (.equal, n)
            case .notEqual(let n): (.notEqual, n)
            case .lessThan(let n): (.less, n)
            case .atMost(let n): (.lessOrEqual, n)
            case .greaterThan(let n): (.greater, n)
            case .atLeast(let n): (.greaterOrEqual, n)
            }
        }
    }

    /// Rows whose number of members of the to-many relationship (those matching `condition`, if given)
    /// compares as `comparison` says: `.count(\Issue.labels, where: \Label.name == "bug", .equal(0))`.
    public static func count<Destination: EntityObject>(
        _ relationship: KeyPath<Root, Set<Destination>>, where condition: EntityPredicate<Destination>? = nil,
        _ comparison: CountComparison
    ) -> EntityPredicate {
        let (op, number) = comparison.parts
        return EntityPredicate(
            .memberCount(KeyPathBox(relationship), destination: Destination.self, condition.map(SubqueryBox.init), op, number))
    }

    public static func count<Destination: EntityObject>(
        _ relationship: KeyPath<Root, [Destination]>, where condition: EntityPredicate<Destination>? = nil,
        _ comparison: CountComparison
    ) -> EntityPredicate {
        let (op, number) = comparison.parts
        return EntityPredicate(
            .memberCount(KeyPathBox(relationship), destination: Destination.self, condition.map(SubqueryBox.init), op, number))
    }

    /// A raw SQL condition with bound arguments, for what key paths cannot say. Column names are the field
    /// names (quote them); the table is the entity name.
    public static func sql(_ sql: String, _ arguments: [DatabaseValue] = []) -> EntityPredicate {
        EntityPredicate(.sql(sql, arguments))
    }

    /// Rows whose field is one of `values`.
    public static func isIn<V: AttributeValue>(_ keyPath: KeyPath<Root, V>, _ values: some Sequence<V>) -> EntityPredicate {
        EntityPredicate(.membership(KeyPathBox(keyPath), values.map(\.databaseValue)))
    }

    /// The entities the condition reads besides the root one (destinations of ``through(_:_:)``), by index in `model`.
    func joinedEntities(of mapping: EntitySchema) -> [Int] {
        func collect(_ node: Node) -> [Int] {
            switch node {
            case .through(let field, _, _), .members(let field, _, _, _), .memberCount(let field, _, _, _, _):
                field.field(in: mapping.description).flatMap { mapping.relationships[$0]?.destination }.map { [$0] } ?? []
            case .and(let lhs, let rhs), .or(let lhs, let rhs): collect(lhs) + collect(rhs)
            case .not(let inner): collect(inner)
            default: []
            }
        }
        return collect(node)
    }

}

/// A destination's predicate, type-erased, for ``EntityPredicate/through(_:_:)``.
struct SubqueryBox: Sendable {
    let render: @Sendable (EntitySchema, Schema, any SQLDialect) throws -> (String, [DatabaseValue])
    init<Destination: EntityObject>(_ predicate: EntityPredicate<Destination>) {
        render = { mapping, model, dialect in try predicate.sql(for: mapping, model: model, dialect: dialect) }
    }
}

/// A field a predicate or a sort names: by key path (a compiled entity), or by name (an entity described at run
/// time, see ``RuntimeField``).
// Key paths are immutable once formed; `AnyKeyPath` just does not declare Sendable.
struct KeyPathBox: @unchecked Sendable, CustomStringConvertible {
    /// A compiled entity's key path, or nil for a field named at run time (``name``).
    let keyPath: AnyKeyPath?
    /// The field's name, for an entity described at run time (`.field("title")`), or nil for a key path.
    let name: String?
    init(_ keyPath: AnyKeyPath) {
        self.keyPath = keyPath
        self.name = nil
    }
    init(name: String) {
        self.keyPath = nil
        self.name = name
    }

    /// The field it names in `description`.
    func field(in description: EntityDescription) -> Int? {
        if let keyPath { return description.fieldIndex(for: keyPath) }
        return description.fields.firstIndex { $0.name == name }
    }

    var description: String { name ?? keyPath.map { "\($0)" } ?? "?" }
}

public func == <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> EntityPredicate<Root> {
    EntityPredicate(.comparison(KeyPathBox(lhs), .equal, rhs.databaseValue))
}

public func != <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> EntityPredicate<Root> {
    EntityPredicate(.comparison(KeyPathBox(lhs), .notEqual, rhs.databaseValue))
}

public func < <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> EntityPredicate<Root> {
    EntityPredicate(.comparison(KeyPathBox(lhs), .less, rhs.databaseValue))
}

public func <= <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> EntityPredicate<Root> {
    EntityPredicate(.comparison(KeyPathBox(lhs), .lessOrEqual, rhs.databaseValue))
}

public func > <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> EntityPredicate<Root> {
    EntityPredicate(.comparison(KeyPathBox(lhs), .greater, rhs.databaseValue))
}

public func >= <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> EntityPredicate<Root> {
    EntityPredicate(.comparison(KeyPathBox(lhs), .greaterOrEqual, rhs.databaseValue))
}

/// Objects whose to-one relationship is `object` (`nil`: is not set). `object` must be inserted or stored.
public func == <Root, D: EntityObject>(lhs: KeyPath<Root, D?>, rhs: D?) -> EntityPredicate<Root> {
    let value: DatabaseValue = rhs.map { .integer($0.entityState.rowID) } ?? .null
    return EntityPredicate(.comparison(KeyPathBox(lhs), .equal, value))
}

/// Objects whose to-one relationship is not `object` (including those where it is not set, as Swift's `!=`
/// says); `!= nil`: is set.
public func != <Root, D: EntityObject>(lhs: KeyPath<Root, D?>, rhs: D?) -> EntityPredicate<Root> {
    let value: DatabaseValue = rhs.map { .integer($0.entityState.rowID) } ?? .null
    return EntityPredicate(.comparison(KeyPathBox(lhs), .notEqual, value))
}

public func && <Root>(lhs: EntityPredicate<Root>, rhs: EntityPredicate<Root>) -> EntityPredicate<Root> {
    EntityPredicate(.and(lhs.node, rhs.node))
}

public func || <Root>(lhs: EntityPredicate<Root>, rhs: EntityPredicate<Root>) -> EntityPredicate<Root> {
    EntityPredicate(.or(lhs.node, rhs.node))
}

public prefix func ! <Root>(predicate: EntityPredicate<Root>) -> EntityPredicate<Root> {
    EntityPredicate(.not(predicate.node))
}

/// A sort key: a field and a direction.
///
/// ```swift
/// try context.fetch(Person.self, orderBy: [.descending(\.age), .ascending(\.name)])
/// ```
public struct Sort<Root: EntityObject>: Sendable {
    let keyPath: KeyPathBox
    let ascending: Bool
    /// For a sort by a field of a to-one relationship's destination: that field (``keyPath`` is the relationship).
    let destinationKeyPath: (KeyPathBox, destination: any EntityObject.Type)?

    init(keyPath: KeyPathBox, ascending: Bool, destinationKeyPath: (KeyPathBox, destination: any EntityObject.Type)? = nil) {
        self.keyPath = keyPath
        self.ascending = ascending
        self.destinationKeyPath = destinationKeyPath
    }

    /// Sorts by a field of the destination of a to-one relationship: `.ascending(\Issue.user, \User.login)`.
    public static func ascending<Destination: EntityObject, V: AttributeValue>(
        _ relationship: KeyPath<Root, Destination?>, _ keyPath: KeyPath<Destination, V>
    ) -> Sort {
        Sort(keyPath: KeyPathBox(relationship), ascending: true, destinationKeyPath: (KeyPathBox(keyPath), Destination.self))
    }

    public static func descending<Destination: EntityObject, V: AttributeValue>(
        _ relationship: KeyPath<Root, Destination?>, _ keyPath: KeyPath<Destination, V>
    ) -> Sort {
        Sort(keyPath: KeyPathBox(relationship), ascending: false, destinationKeyPath: (KeyPathBox(keyPath), Destination.self))
    }

    public static func ascending<V: AttributeValue>(_ keyPath: KeyPath<Root, V>) -> Sort {
        Sort(keyPath: KeyPathBox(keyPath), ascending: true)
    }

    public static func descending<V: AttributeValue>(_ keyPath: KeyPath<Root, V>) -> Sort {
        Sort(keyPath: KeyPathBox(keyPath), ascending: false)
    }
}
