/// A stored row being turned into an object: what `init(row:)` reads its fields from.
///
/// Attributes are read and converted; a value that does not fit its Swift type (text in an `Int` column,
/// `NULL` for a non-optional) throws a ``StoreError`` naming the entity and the field. Relationships are not
/// read here: they start empty and load on first access.
public struct EntityRow {
    private enum Source {
        /// The current row of a statement.
        case statement(Statement)
        /// Values by field index (the decoder creating a new object).
        case values([SQLiteValue])
    }

    private let source: Source
    let mapping: EntityMapping
    /// Where the entity's columns start in the statement's result (after extra leading columns).
    private let columnOffset: Int32

    init(statement: Statement, mapping: EntityMapping, columnOffset: Int32 = 0) {
        self.source = .statement(statement)
        self.mapping = mapping
        self.columnOffset = columnOffset
    }

    init(values: [SQLiteValue], mapping: EntityMapping) {
        self.source = .values(values)
        self.mapping = mapping
        self.columnOffset = 0
    }

    /// Reads an attribute.
    public func value<V: AttributeValue>(_ field: Int, as type: V.Type) throws -> V {
        do {
            switch source {
            case .statement(let statement):
                return try V.read(from: statement, at: mapping.columnOfField[field] + columnOffset)
            case .values(let values):
                return try V(sqliteValue: values[field])
            }
        } catch {
            throw StoreError.valueMismatch(entity: mapping.name, field: mapping.description.fields[field].name, error)
        }
    }

    /// A to-one relationship starts unloaded.
    public func value<D: EntityObject>(_ field: Int, as type: D?.Type) throws -> D? { nil }
    /// An ordered to-many relationship starts unloaded.
    public func value<D: EntityObject>(_ field: Int, as type: [D].Type) throws -> [D] { [] }
    /// An unordered to-many relationship starts unloaded.
    public func value<D: EntityObject>(_ field: Int, as type: Set<D>.Type) throws -> Set<D> { [] }
}
