#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A type that can be stored in one column: the attribute types of an entity.
///
/// Conforming types: `Bool`, the integer types, `Double`, `Float`, `Decimal`, `String`, `Date`, `Data`, `UUID`,
/// `URL`, optionals of these, enums with a raw value of one of these (declare the conformance:
/// `enum State: String, AttributeValue { … }`), arrays and `String`-keyed dictionaries of attribute values
/// (stored as JSON text), and any `Codable & Equatable` type that adopts ``JSONAttributeValue``.
///
/// Storage shape (column affinity and value):
/// | Swift | column | stored as |
/// |---|---|---|
/// | `Bool` | INTEGER | 0 or 1 |
/// | `Int`, `Int8`…`Int64`, `UInt8`…`UInt32` | INTEGER | the value |
/// | `UInt`, `UInt64` | INTEGER | the value up to `Int64.max`; above it, 8 bytes big-endian (a BLOB), which SQLite sorts after every integer, so order and comparisons follow the values |
/// | `Double`, `Float` | REAL | the value |
/// | `Decimal` | TEXT | its exact decimal text, so no precision is lost to REAL, with the `codablestore_decimal` collation: compared and sorted by value |
/// | `String` | TEXT | UTF-8 |
/// | `Date` | REAL | seconds since 1970-01-01T00:00:00Z, so dates sort and compare in SQL |
/// | `Data` | BLOB | the bytes |
/// | `UUID` | TEXT | the canonical upper-case string, readable in the `sqlite3` shell |
/// | `URL` | TEXT | `absoluteString` |
/// | JSON values | TEXT | compact JSON with sorted keys |
///
/// Equality decides whether an assignment changes the object: assigning an equal value does not dirty it.
///
/// A type of your own is stored as one `DatabaseValue` (a 64-bit integer, a double, a text, bytes or null): say
/// which, how to read it back, and how it appears in JSON.
///
/// ```swift
/// struct Cents: Hashable, AttributeValue {           // "price": 1999 in JSON, 1999 in an INTEGER column
///     var amount: Int64
///     init(_ amount: Int64) { self.amount = amount }
///
///     static var attributeType: AttributeType { AttributeType(name: "Cents", affinity: "INTEGER") }
///     var databaseValue: DatabaseValue { .integer(amount) }
///     init(databaseValue: DatabaseValue) throws(AttributeValueError) {
///         guard case .integer(let amount) = databaseValue else {
///             throw AttributeValueError(expected: "Cents", found: databaseValue)
///         }
///         self.amount = amount
///     }
///     static func decodeAttribute(from decoder: any Decoder) throws -> Cents {
///         Cents(try decoder.singleValueContainer().decode(Int64.self))
///     }
///     func encodeAttribute(to encoder: any Encoder) throws {
///         var container = encoder.singleValueContainer()
///         try container.encode(amount)
///     }
/// }
/// ```
public protocol AttributeValue: Equatable, Sendable, SendableMetatype {
    /// The declared type, as recorded in the store's model (`"Int"`, `"String"`, …).
    static var attributeType: AttributeType { get }
    /// Whether `NULL` is a valid value. Only `Optional` says yes.
    static var isOptional: Bool { get }
    /// The value as a column stores it, on every backend (the table above).
    var databaseValue: DatabaseValue { get }
    /// Creates a value from what a column stored, or throws ``AttributeValueError`` when it does not fit.
    init(databaseValue: DatabaseValue) throws(AttributeValueError)
    /// Reads a value from a column of a query's current row. The default goes through ``init(databaseValue:)``;
    /// a type can read the column in place instead (the integers, `Double` and `String` do).
    static func read(from columns: some DatabaseColumns, at column: Int32) throws(AttributeValueError) -> Self
    /// Decodes a value from a decoder's single value: how an attribute appears in JSON. `Decodable` types use
    /// their own `init(from:)`; enums with raw values decode the raw value.
    static func decodeAttribute(from decoder: any Decoder) throws -> Self
    /// Encodes the value into an encoder's single value; the mirror of ``decodeAttribute(from:)``.
    func encodeAttribute(to encoder: any Encoder) throws
}

extension AttributeValue {
    public static var isOptional: Bool { false }

    @inlinable
    public static func read(from columns: some DatabaseColumns, at column: Int32) throws(AttributeValueError) -> Self {
        try Self(databaseValue: columns.value(at: column))
    }
}

/// The declared type of an attribute and the column affinity it is stored with.
public struct AttributeType: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The Swift type name recorded in the model (`"Int"`, `"Date"`, `"JSON"`).
    public var name: String
    /// The column's affinity, in SQLite's words: INTEGER, REAL, TEXT, BLOB or NUMERIC. Another backend maps it to a
    /// column type of its own that holds the same `DatabaseValue`s (PostgreSQL: `bigint`, `double precision`, …).
    public var affinity: String

    public init(name: String, affinity: String) {
        self.name = name
        self.affinity = affinity
    }

    public var description: String { name }

    public static let integer = AttributeType(name: "Int", affinity: "INTEGER")
    public static let bool = AttributeType(name: "Bool", affinity: "INTEGER")
    public static let double = AttributeType(name: "Double", affinity: "REAL")
    public static let decimal = AttributeType(name: "Decimal", affinity: "TEXT")
    public static let string = AttributeType(name: "String", affinity: "TEXT")
    public static let date = AttributeType(name: "Date", affinity: "REAL")
    public static let data = AttributeType(name: "Data", affinity: "BLOB")
    public static let uuid = AttributeType(name: "UUID", affinity: "TEXT")
    public static let url = AttributeType(name: "URL", affinity: "TEXT")
    public static let json = AttributeType(name: "JSON", affinity: "TEXT")
}

/// A stored value that does not fit the attribute's Swift type.
public struct AttributeValueError: Error, Sendable, CustomStringConvertible {
    /// The Swift type that was expected.
    public var expected: String
    /// The value found in the store.
    public var found: DatabaseValue
    /// Why it does not fit.
    public var reason: String

    public init(expected: String, found: DatabaseValue, reason: String? = nil) {
        self.expected = expected
        self.found = found
        self.reason = reason ?? "found \(found.kind) value \(found) instead"
    }

    public var description: String { "expected \(expected), \(reason)" }
}

// MARK: - Integers

extension AttributeValue where Self: FixedWidthInteger {
    public static var attributeType: AttributeType {
        // Unsigned 64-bit values are stored apart from the others above Int64.max (see the table above), so the
        // model records their type.
        if !Self.isSigned && Self.bitWidth == 64 { return AttributeType(name: "\(Self.self)", affinity: "INTEGER") }
        return .integer
    }

    public var databaseValue: DatabaseValue {
        if Self.isSigned || bitWidth < 64 { return .integer(Int64(self)) }
        if let value = Int64(exactly: self) { return .integer(value) }
        // Above Int64.max: 8 bytes big-endian, which SQLite orders after every integer and among themselves by value.
        return .blob(Data(withUnsafeBytes(of: UInt64(truncatingIfNeeded: self).bigEndian) { Array($0) }))
    }

    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        switch databaseValue {
        case .integer(let value): try self.init(storedInteger: value)
        case .blob(let bytes) where !Self.isSigned && Self.bitWidth == 64: try self.init(storedBytes: bytes)
        default: throw AttributeValueError(expected: "\(Self.self)", found: databaseValue)
        }
    }

    // Inlinable, as `read(from:at:)` is: not inlinable, an entity's inlined `init(row:)` called it unspecialized, for
    // three times the instructions of the whole read (callgrind, StoreBenchmarks' fetch).
    @inlinable
    init(storedInteger value: Int64) throws(AttributeValueError) {
        if let exact = Self(exactly: value) {
            self = exact
        } else {
            throw AttributeValueError(
                expected: "\(Self.self)", found: .integer(value), reason: "\(value) does not fit in \(Self.self)")
        }
    }

    /// An unsigned 64-bit value above Int64.max, from its 8 big-endian bytes.
    @usableFromInline
    init(storedBytes bytes: Data) throws(AttributeValueError) {
        guard bytes.count == 8 else {
            throw AttributeValueError(
                expected: "\(Self.self)", found: .blob(bytes), reason: "a blob of \(bytes.count) bytes is not an unsigned 64-bit value (8 bytes)")
        }
        let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard value > UInt64(Int64.max) else {
            throw AttributeValueError(
                expected: "\(Self.self)", found: .blob(bytes), reason: "\(value) is stored as an integer, not as a blob")
        }
        self.init(truncatingIfNeeded: value)
    }

    // Inlinable: specialized for the backend's row type where an entity's `init(row:)` reads its columns.
    @inlinable
    public static func read(from columns: some DatabaseColumns, at column: Int32) throws(AttributeValueError) -> Self {
        switch columns.kind(at: column) {
        case .integer: return try Self(storedInteger: columns.int64(at: column))
        case .blob where !Self.isSigned && Self.bitWidth == 64: return try Self(storedBytes: columns.data(at: column))
        default: throw AttributeValueError(expected: "\(Self.self)", found: columns.value(at: column))
        }
    }
}

extension Int: AttributeValue {}
extension Int8: AttributeValue {}
extension Int16: AttributeValue {}
extension Int32: AttributeValue {}
extension Int64: AttributeValue {}
extension UInt: AttributeValue {}
extension UInt8: AttributeValue {}
extension UInt16: AttributeValue {}
extension UInt32: AttributeValue {}
extension UInt64: AttributeValue {}

extension Bool: AttributeValue {
    public static var attributeType: AttributeType { .bool }
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .integer(let value) = databaseValue, value == 0 || value == 1 else {
            throw AttributeValueError(expected: "Bool", found: databaseValue)
        }
        self = value == 1
    }
}

// MARK: - Floating point

extension Double: AttributeValue {
    public static var attributeType: AttributeType { .double }
    public var databaseValue: DatabaseValue { .real(self) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        switch databaseValue {
        case .real(let value): self = value
        // SQLite stores a REAL that is a whole number as an integer in REAL-affinity columns only on disk;
        // values written through other paths may come back as integers.
        case .integer(let value): self = Double(value)
        default: throw AttributeValueError(expected: "Double", found: databaseValue)
        }
    }
    @inlinable
    public static func read(from columns: some DatabaseColumns, at column: Int32) throws(AttributeValueError) -> Double {
        let kind = columns.kind(at: column)
        guard kind == .real || kind == .integer else {
            throw AttributeValueError(expected: "Double", found: columns.value(at: column))
        }
        return columns.double(at: column)
    }
}

extension Float: AttributeValue {
    public static var attributeType: AttributeType { AttributeType(name: "Float", affinity: "REAL") }
    public var databaseValue: DatabaseValue { .real(Double(self)) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        self = Float(try Double(databaseValue: databaseValue))
    }
}

extension Decimal: AttributeValue {
    public static var attributeType: AttributeType { .decimal }
    public var databaseValue: DatabaseValue { .text(description) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        switch databaseValue {
        case .text(let text):
            guard let value = Decimal(string: text, locale: nil) else {
                throw AttributeValueError(expected: "Decimal", found: databaseValue, reason: "'\(text)' is not a decimal number")
            }
            self = value
        case .integer(let value): self = Decimal(value)
        case .real(let value): self = Decimal(value)
        default: throw AttributeValueError(expected: "Decimal", found: databaseValue)
        }
    }
}

// MARK: - Text, bytes and Foundation values

extension String: AttributeValue {
    public static var attributeType: AttributeType { .string }
    public var databaseValue: DatabaseValue { .text(self) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .text(let value) = databaseValue else { throw AttributeValueError(expected: "String", found: databaseValue) }
        self = value
    }
    @inlinable
    public static func read(from columns: some DatabaseColumns, at column: Int32) throws(AttributeValueError) -> String {
        guard columns.kind(at: column) == .text else {
            throw AttributeValueError(expected: "String", found: columns.value(at: column))
        }
        return columns.text(at: column)
    }
}

extension Data: AttributeValue {
    public static var attributeType: AttributeType { .data }
    public var databaseValue: DatabaseValue { .blob(self) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .blob(let value) = databaseValue else { throw AttributeValueError(expected: "Data", found: databaseValue) }
        self = value
    }
}

extension Date: AttributeValue {
    public static var attributeType: AttributeType { .date }
    public var databaseValue: DatabaseValue { .real(timeIntervalSince1970) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        switch databaseValue {
        case .real(let value): self = Date(timeIntervalSince1970: value)
        case .integer(let value): self = Date(timeIntervalSince1970: Double(value))
        default: throw AttributeValueError(expected: "Date", found: databaseValue)
        }
    }
}

extension UUID: AttributeValue {
    public static var attributeType: AttributeType { .uuid }
    public var databaseValue: DatabaseValue { .text(uuidString) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .text(let text) = databaseValue, let value = UUID(uuidString: text) else {
            throw AttributeValueError(expected: "UUID", found: databaseValue)
        }
        self = value
    }
}

extension URL: AttributeValue {
    public static var attributeType: AttributeType { .url }
    public var databaseValue: DatabaseValue { .text(absoluteString) }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .text(let text) = databaseValue, let value = URL(string: text) else {
            throw AttributeValueError(expected: "URL", found: databaseValue)
        }
        self = value
    }
}

// MARK: - Optional

// Inlinable, so that optional attributes convert with their wrapped type's code rather than generically.
extension Optional: AttributeValue where Wrapped: AttributeValue {
    public static var attributeType: AttributeType { Wrapped.attributeType }
    public static var isOptional: Bool { true }
    @inlinable public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    @inlinable public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        self = databaseValue.isNull ? nil : try Wrapped(databaseValue: databaseValue)
    }
    @inlinable public static func read(from columns: some DatabaseColumns, at column: Int32) throws(AttributeValueError) -> Self {
        columns.isNull(at: column) ? nil : try Wrapped.read(from: columns, at: column)
    }
}

// MARK: - Enums with raw values

extension AttributeValue where Self: RawRepresentable, RawValue: AttributeValue {
    public static var attributeType: AttributeType { RawValue.attributeType }
    public var databaseValue: DatabaseValue { rawValue.databaseValue }
    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        let raw = try RawValue(databaseValue: databaseValue)
        guard let value = Self(rawValue: raw) else {
            throw AttributeValueError(
                expected: "\(Self.self)", found: databaseValue, reason: "\(databaseValue) is not a raw value of \(Self.self)")
        }
        self = value
    }
}

// MARK: - JSON values

/// A `Codable` value stored as JSON text in one column.
///
/// ```swift
/// struct Money: Codable, Equatable, JSONAttributeValue { var amount: Decimal; var currency: String }
/// ```
/// Arrays and `String`-keyed dictionaries of attribute values adopt it already. Keys are sorted so that equal
/// values are stored as equal text.
public protocol JSONAttributeValue: AttributeValue, Codable {}

extension JSONAttributeValue {
    public static var attributeType: AttributeType { .json }

    public var databaseValue: DatabaseValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a Codable & Equatable value of attribute types cannot fail except for non-finite floats,
        // which JSON cannot represent: those are stored as NULL rather than crashing.
        guard let data = try? encoder.encode(self) else { return .null }
        return .text(String(decoding: data, as: UTF8.self))
    }

    public init(databaseValue: DatabaseValue) throws(AttributeValueError) {
        guard case .text(let text) = databaseValue else { throw AttributeValueError(expected: "\(Self.self)", found: databaseValue) }
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(text.utf8))
        } catch {
            throw AttributeValueError(expected: "\(Self.self)", found: databaseValue, reason: "invalid JSON: \(error)")
        }
    }
}

extension Array: AttributeValue, JSONAttributeValue where Element: AttributeValue & Codable {}
extension Dictionary: AttributeValue, JSONAttributeValue where Key == String, Value: AttributeValue & Codable {}

// MARK: - Coding

extension AttributeValue where Self: Codable {
    public static func decodeAttribute(from decoder: any Decoder) throws -> Self {
        try decoder.singleValueContainer().decode(Self.self)
    }

    public func encodeAttribute(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self)
    }
}

extension AttributeValue where Self: RawRepresentable, RawValue: AttributeValue {
    /// Decodes the raw value, then the case; an unknown raw value is `DecodingError.dataCorrupted` with the
    /// standard library's wording, unless the type declares a fallback (``UnknownRawValueFallback``).
    public static func decodeAttribute(from decoder: any Decoder) throws -> Self {
        let raw = try RawValue.decodeAttribute(from: decoder)
        if let value = Self(rawValue: raw) { return value }
        if let fallback = try fallbackForUnknownRawValue(Self.self, decoder) { return fallback }
        throw DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "Cannot initialize \(Self.self) from invalid \(RawValue.self) value \(raw)"))
    }

    public func encodeAttribute(to encoder: any Encoder) throws {
        try rawValue.encodeAttribute(to: encoder)
    }
}

extension AttributeValue where Self: RawRepresentable & Codable, RawValue: AttributeValue {
    public static func decodeAttribute(from decoder: any Decoder) throws -> Self {
        do {
            return try decoder.singleValueContainer().decode(Self.self)
        } catch DecodingError.dataCorrupted(let context) {
            if let fallback = try fallbackForUnknownRawValue(Self.self, decoder) { return fallback }
            throw DecodingError.dataCorrupted(context)
        }
    }

    public func encodeAttribute(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self)
    }
}

extension Optional where Wrapped: AttributeValue {
    public static func decodeAttribute(from decoder: any Decoder) throws -> Self {
        if try decoder.singleValueContainer().decodeNil() { return nil }
        do {
            return try Wrapped.decodeAttribute(from: decoder)
        } catch DecodingError.dataCorrupted(let context) {
            // An unknown raw value of a type whose fallback is nil: nil, where nil is a value.
            if let type = Wrapped.self as? any UnknownRawValueFallback.Type, try isUnknownWithoutFallback(type, decoder) {
                return nil
            }
            throw DecodingError.dataCorrupted(context)
        }
    }

    public func encodeAttribute(to encoder: any Encoder) throws {
        if let self {
            try self.encodeAttribute(to: encoder)
        } else {
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }
}

// MARK: - Unknown raw values

/// An enum attribute type that takes raw values it does not know instead of failing: APIs add values over time
/// (GitHub's `state_reason` gained `"duplicate"`), and one new value should not fail a page or an import.
///
/// ```swift
/// enum StateReason: String, AttributeValue, UnknownRawValueFallback {
///     case completed, reopened, notPlanned = "not_planned", unknown
///     static var unknownRawValueFallback: StateReason? { .unknown }
/// }
/// enum LockReason: String, AttributeValue, UnknownRawValueFallback {
///     case offTopic = "off-topic", tooHeated = "too heated", resolved, spam
///     static var unknownRawValueFallback: LockReason? { nil }  // `var lockReason: LockReason?` becomes nil
/// }
/// ```
/// Decoding an unknown raw value gives the fallback case; with a nil fallback, an optional attribute of the type
/// becomes nil, and a non-optional one still fails with `DecodingError.dataCorrupted`. A type that does not
/// adopt the protocol fails as before. The raw value itself is not kept: store it in an attribute of its own if
/// you need it.
public protocol UnknownRawValueFallback: AttributeValue, RawRepresentable where RawValue: AttributeValue {
    /// The value an unknown raw value decodes as; nil makes it nil where the attribute is optional.
    static var unknownRawValueFallback: Self? { get }
}

extension UnknownRawValueFallback {
    /// Whether the decoder's raw value is not a case (and not of the wrong type: that error stays).
    fileprivate static func isUnknownRawValue(_ decoder: any Decoder) throws -> Bool {
        Self(rawValue: try RawValue.decodeAttribute(from: decoder)) == nil
    }
}

/// The fallback of `type` for the decoder's value, when `type` declares one and the value is an unknown raw value.
private func fallbackForUnknownRawValue<T>(_ type: T.Type, _ decoder: any Decoder) throws -> T? {
    guard let fallbackType = type as? any UnknownRawValueFallback.Type else { return nil }
    func open<F: UnknownRawValueFallback>(_ type: F.Type) throws -> T? {
        guard try type.isUnknownRawValue(decoder) else { return nil }
        return type.unknownRawValueFallback as? T
    }
    return try open(fallbackType)
}

/// Whether the decoder's value is an unknown raw value of `type`, whose fallback is nil.
private func isUnknownWithoutFallback(_ type: any UnknownRawValueFallback.Type, _ decoder: any Decoder) throws -> Bool {
    func open<F: UnknownRawValueFallback>(_ type: F.Type) throws -> Bool {
        try type.unknownRawValueFallback == nil && type.isUnknownRawValue(decoder)
    }
    return try open(type)
}
