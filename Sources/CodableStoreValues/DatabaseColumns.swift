#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The columns of the current row of a query, read in place: what an attribute type reads its stored value from
/// (see `AttributeValue.read(from:at:)`) without making a ``DatabaseValue`` first.
///
/// Columns are numbered from 0. A backend's statement or row cursor conforms (SQLite's `Statement` does); the typed
/// readers are meant for a column whose ``kind(at:)`` is the matching one.
public protocol DatabaseColumns {
    /// What the column holds.
    func kind(at column: Int32) -> DatabaseValue.Kind
    /// Whether the column is `NULL`.
    func isNull(at column: Int32) -> Bool
    /// The column as a 64-bit integer.
    func int64(at column: Int32) -> Int64
    /// The column as a double.
    func double(at column: Int32) -> Double
    /// The column as a text.
    func text(at column: Int32) -> String
    /// The column's bytes.
    func data(at column: Int32) -> Data
    /// The column's value, whatever its kind.
    func value(at column: Int32) -> DatabaseValue
}

extension DatabaseColumns {
    @inlinable
    public func isNull(at column: Int32) -> Bool { kind(at: column) == .null }
}
