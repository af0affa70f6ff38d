/// A condition on an entity's fields, written with key paths and compiled to SQL with bound values.
///
/// ```swift
/// let open = \Issue.state == "open" && \Issue.comments >= 10
/// let unnamed: Predicate<Person> = \.name == nil
/// let raw = Predicate<Person>.sql("length(\"name\") > ?", [.integer(3)])
/// try context.fetch(Issue.self, where: open)
/// ```
///
/// Comparisons follow Swift: `== nil` is `IS NULL`, and `!=` keeps rows whose value is `NULL`.
/// Values are always bound, never spliced into the SQL.
public struct Predicate<Root: EntityObject>: Sendable {
    indirect enum Node: Sendable {
        case comparison(KeyPathBox, ComparisonOperator, SQLiteValue)
        case membership(KeyPathBox, [SQLiteValue])
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)
        case sql(String, [SQLiteValue])
    }

    enum ComparisonOperator: String, Sendable {
        case equal = "="
        case notEqual = "<>"
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    let node: Node

    init(_ node: Node) { self.node = node }

    /// A raw SQL condition with bound arguments, for what key paths cannot say. Column names are the field
    /// names (quote them); the table is the entity name.
    public static func sql(_ sql: String, _ arguments: [SQLiteValue] = []) -> Predicate {
        Predicate(.sql(sql, arguments))
    }

    /// Rows whose field is one of `values`.
    public static func isIn<V: AttributeValue>(_ keyPath: KeyPath<Root, V>, _ values: some Sequence<V>) -> Predicate {
        Predicate(.membership(KeyPathBox(keyPath), values.map(\.sqliteValue)))
    }

    /// The SQL and arguments of the condition.
    func sql(for mapping: EntityMapping) throws -> (String, [SQLiteValue]) {
        var arguments: [SQLiteValue] = []
        let text = try Self.render(node, mapping, &arguments)
        return (text, arguments)
    }

    private static func column(_ keyPath: KeyPathBox, _ mapping: EntityMapping) throws -> String {
        guard let field = mapping.description.fieldIndex(for: keyPath.keyPath),
            let column = mapping.columnNameOfField[field]
        else {
            throw StoreError(
                .invalidQuery,
                "\(keyPath.keyPath) is not a stored attribute or to-one relationship of \(mapping.name)",
                entity: mapping.name)
        }
        return quoteIdentifier(column)
    }

    private static func render(_ node: Node, _ mapping: EntityMapping, _ arguments: inout [SQLiteValue]) throws -> String {
        switch node {
        case .comparison(let keyPath, let op, let value):
            let column = try column(keyPath, mapping)
            if value.isNull {
                switch op {
                case .equal: return "\(column) IS NULL"
                case .notEqual: return "\(column) IS NOT NULL"
                default: return "0"  // like SQL: an ordering comparison with NULL is never true
                }
            }
            arguments.append(value)
            if op == .notEqual { return "\(column) IS NOT ?" }
            return "\(column) \(op.rawValue) ?"
        case .membership(let keyPath, let values):
            let column = try column(keyPath, mapping)
            if values.isEmpty { return "0" }
            arguments.append(contentsOf: values)
            return "\(column) IN (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")"
        case .and(let lhs, let rhs):
            return "(\(try render(lhs, mapping, &arguments)) AND \(try render(rhs, mapping, &arguments)))"
        case .or(let lhs, let rhs):
            return "(\(try render(lhs, mapping, &arguments)) OR \(try render(rhs, mapping, &arguments)))"
        case .not(let inner):
            return "NOT (\(try render(inner, mapping, &arguments)))"
        case .sql(let sql, let values):
            arguments.append(contentsOf: values)
            return "(\(sql))"
        }
    }
}

// Key paths are immutable once formed; `AnyKeyPath` just does not declare Sendable.
struct KeyPathBox: @unchecked Sendable {
    let keyPath: AnyKeyPath
    init(_ keyPath: AnyKeyPath) { self.keyPath = keyPath }
}

public func == <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> Predicate<Root> {
    Predicate(.comparison(KeyPathBox(lhs), .equal, rhs.sqliteValue))
}

public func != <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> Predicate<Root> {
    Predicate(.comparison(KeyPathBox(lhs), .notEqual, rhs.sqliteValue))
}

public func < <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> Predicate<Root> {
    Predicate(.comparison(KeyPathBox(lhs), .less, rhs.sqliteValue))
}

public func <= <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> Predicate<Root> {
    Predicate(.comparison(KeyPathBox(lhs), .lessOrEqual, rhs.sqliteValue))
}

public func > <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> Predicate<Root> {
    Predicate(.comparison(KeyPathBox(lhs), .greater, rhs.sqliteValue))
}

public func >= <Root, V: AttributeValue>(lhs: KeyPath<Root, V>, rhs: V) -> Predicate<Root> {
    Predicate(.comparison(KeyPathBox(lhs), .greaterOrEqual, rhs.sqliteValue))
}

/// Objects whose to-one relationship is `object` (`nil`: is not set). `object` must be inserted or stored.
public func == <Root, D: EntityObject>(lhs: KeyPath<Root, D?>, rhs: D?) -> Predicate<Root> {
    let value: SQLiteValue = rhs.map { .integer($0.entityState.rowID) } ?? .null
    return Predicate(.comparison(KeyPathBox(lhs), .equal, value))
}

public func && <Root>(lhs: Predicate<Root>, rhs: Predicate<Root>) -> Predicate<Root> {
    Predicate(.and(lhs.node, rhs.node))
}

public func || <Root>(lhs: Predicate<Root>, rhs: Predicate<Root>) -> Predicate<Root> {
    Predicate(.or(lhs.node, rhs.node))
}

public prefix func ! <Root>(predicate: Predicate<Root>) -> Predicate<Root> {
    Predicate(.not(predicate.node))
}

/// A sort key: a field and a direction.
///
/// ```swift
/// try context.fetch(Person.self, orderBy: [.descending(\.age), .ascending(\.name)])
/// ```
public struct Sort<Root: EntityObject>: Sendable {
    let keyPath: KeyPathBox
    let ascending: Bool

    public static func ascending<V: AttributeValue>(_ keyPath: KeyPath<Root, V>) -> Sort {
        Sort(keyPath: KeyPathBox(keyPath), ascending: true)
    }

    public static func descending<V: AttributeValue>(_ keyPath: KeyPath<Root, V>) -> Sort {
        Sort(keyPath: KeyPathBox(keyPath), ascending: false)
    }
}
