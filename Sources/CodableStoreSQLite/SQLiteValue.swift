@_exported import CodableStoreValues

/// A value as SQLite stores it: one of its five storage classes, which are exactly the kinds of a
/// `DatabaseValue` (from `CodableStoreValues`, the name the rest of CodableStore uses).
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html>
public typealias SQLiteValue = DatabaseValue

extension DatabaseValue {
    /// The storage class name, as SQLite's `typeof()` reports it.
    public var storageClass: String { kind.description }
}
