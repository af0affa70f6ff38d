/// A stored row being turned into an object: what `init(row:)` reads its fields from.
///
/// Attributes are read and converted; a value that does not fit its Swift type (text in an `Int` column,
/// `NULL` for a non-optional) throws a ``StoreError`` naming the entity and the field. Relationships are not
/// read here: they start empty and load on first access.
public struct EntityRow {
    /// The current row of a statement; or (when nil) a stored row read ahead, its values in column order (the row id
    /// first); or (when both are nil) values by field index: the decoder creating an object.
    @usableFromInline let statement: Statement?
    @usableFromInline let row: ArraySlice<DatabaseValue>?
    @usableFromInline let values: [DatabaseValue]
    let mapping: EntitySchema
    /// Where the entity's columns start in the statement's result (after extra leading columns).
    private let columnOffset: Int32

    init(statement: Statement, mapping: EntitySchema, columnOffset: Int32 = 0) {
        self.statement = statement
        self.row = nil
        self.values = []
        self.mapping = mapping
        self.columnOffset = columnOffset
    }

    /// A stored row read ahead (an import's identity lookups): read in place, without copying it by field first.
    init(row: ArraySlice<DatabaseValue>, mapping: EntitySchema) {
        self.statement = nil
        self.row = row
        self.values = []
        self.mapping = mapping
        self.columnOffset = 0
    }

    /// Values by field index: made by the decoder (`decoded`, already of the attributes' types), or read from a
    /// backend whose statements are not SQLite's.
    init(values: [DatabaseValue], mapping: EntitySchema, decoded: Bool = false) {
        self.statement = nil
        self.row = nil
        self.values = values
        self.mapping = mapping
        self.columnOffset = 0
        self.valuesAreDecoded = decoded
    }

    /// Whether ``values`` were made by the decoder, converted already.
    private(set) var valuesAreDecoded = false

    /// Reads an attribute. Inlinable, so that each `init(row:)` reads its columns with the concrete types'
    /// conversions instead of generic ones.
    @inlinable
    public func value<V: AttributeValue>(_ field: Int, as type: V.Type) throws -> V {
        do throws(AttributeValueError) {
            if let statement {
                return try V.read(from: statement, at: column(of: field))
            }
            if let row {
                return try V(databaseValue: row[row.startIndex + Int(column(of: field))])
            }
            return try V(databaseValue: values[field])
        } catch {
            throw mismatch(field, error)
        }
    }

    @usableFromInline
    func column(of field: Int) -> Int32 { mapping.columnOfField[field] + columnOffset }

    @usableFromInline
    func mismatch(_ field: Int, _ error: AttributeValueError) -> StoreError {
        StoreError.valueMismatch(entity: mapping.name, field: mapping.description.fields[field].name, error)
    }

    /// A to-one relationship starts unloaded.
    @inlinable public func value<D: EntityObject>(_ field: Int, as type: D?.Type) throws -> D? { nil }
    /// An ordered to-many relationship starts unloaded.
    @inlinable public func value<D: EntityObject>(_ field: Int, as type: [D].Type) throws -> [D] { [] }
    /// An unordered to-many relationship starts unloaded.
    @inlinable public func value<D: EntityObject>(_ field: Int, as type: Set<D>.Type) throws -> Set<D> { [] }
    /// An optional ordered to-many relationship starts unloaded (nil until it is read).
    @inlinable public func value<D: EntityObject>(_ field: Int, as type: [D]?.Type) throws -> [D]? { nil }
    /// An optional unordered to-many relationship starts unloaded (nil until it is read).
    @inlinable public func value<D: EntityObject>(_ field: Int, as type: Set<D>?.Type) throws -> Set<D>? { nil }
}
