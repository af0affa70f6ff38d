#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A value as a column holds it, whatever the backend: null, a 64-bit integer, a double, a text or bytes. Every
/// attribute is stored as one of these (see `AttributeValue`); SQLite's five storage classes are exactly these,
/// and the PostgreSQL backend maps its column types onto them.
///
/// Two texts are equal when their UTF-8 bytes are, as databases compare them under a binary collation (SQLite's
/// `BINARY`, PostgreSQL's `"C"`, and `UNIQUE` indexes): `"café"` precomposed and `"cafe\u{301}"` decomposed are
/// different values, where `String`'s `==` (canonical equivalence) calls them equal. So a decoded text that differs
/// from the stored one only in its normalization is written, and two such identities are two objects, as they are
/// two rows.
public enum DatabaseValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    // Inlinable: the context compares and hashes values (identity keys, stored values) on every decoded field.
    @inlinable
    public static func == (lhs: DatabaseValue, rhs: DatabaseValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.integer(let a), .integer(let b)): return a == b
        case (.real(let a), .real(let b)): return a == b
        case (.text(let a), .text(let b)): return sameUTF8(a, b)
        case (.blob(let a), .blob(let b)): return a == b
        default: return false
        }
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .integer(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .real(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .text(var value):
            hasher.combine(3 as UInt8)
            value.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        case .blob(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        }
    }

    /// Whether two strings have the same UTF-8 bytes (not canonical equivalence, which `==` tests, and which
    /// costs a normalization for every non-ASCII string).
    @usableFromInline
    static func sameUTF8(_ a: String, _ b: String) -> Bool {
        if a.utf8.count != b.utf8.count { return false }
        if let equal = a.utf8.withContiguousStorageIfAvailable({ a in
            b.utf8.withContiguousStorageIfAvailable { b in
                a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
            }
        }), let equal {
            return equal
        }
        return a.utf8.elementsEqual(b.utf8)
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A SQL literal for messages (never used to build SQL that is executed).
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
        case .blob(let value): "x'" + value.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "'"
        }
    }

    /// Which of the five kinds of value this is.
    public var kind: Kind {
        switch self {
        case .null: .null
        case .integer: .integer
        case .real: .real
        case .text: .text
        case .blob: .blob
        }
    }

    /// The kind of a ``DatabaseValue``, without the value: what a column of a row holds (see
    /// ``DatabaseColumns/kind(at:)``). Its description is the name SQLite's `typeof()` gives it.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case null, integer, real, text, blob

        public var description: String {
            switch self {
            case .null: "null"
            case .integer: "integer"
            case .real: "real"
            case .text: "text"
            case .blob: "blob"
            }
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
