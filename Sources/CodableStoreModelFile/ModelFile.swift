/// A model written down as a file: the entities of a store, their attributes, identities, JSON keys, relationships
/// and indexes, in YAML a person can read, edit and comment.
///
/// ```yaml
/// version: 1
/// entities:
///   Issue:
///     identity: [id]
///     attributes:
///       id: integer
///       title: string
///       body: string?                                   # optional
///       createdAt: {type: date, format: iso8601, key: created_at}
///     relationships:
///       user: User                                      # to-one, the JSON holds an object or a bare id
///       labels: {to: Label, many: true, inverse: issues}
///     indexes:
///       - [title]
/// ```
///
/// Why YAML: a model is read and corrected by people (inference writes what it saw as comments next to what it
/// decided), and YAML has comments, needs no quotes around names, and nests without brackets. The subset used is
/// plain mappings, sequences and scalars: the file is also valid input for any YAML tool. JSON was the other
/// candidate; it has no comments, which this file exists for.
///
/// `ModelFile` is the file's content as values: ``parse(_:file:)`` reads it (errors name the file, line, column
/// and the field, see ``ModelFileError``) and ``rendered(header:)`` writes it, deterministically.
public struct ModelFile: Sendable, Equatable {
    /// The format version this library reads and writes.
    public static let currentVersion = 1

    public var entities: [Entity]
    /// The changes a store made with an earlier version of this file needs before it takes this one (a renamed
    /// attribute or entity, a new identity, a data fix in SQL), oldest first: see ``Migration``.
    public var migrations: [Migration]

    public init(entities: [Entity], migrations: [Migration] = []) {
        self.entities = entities
        self.migrations = migrations
    }

    /// A named change of the model that adding tables and columns cannot make, as CodableStore's `Migration` is for
    /// compiled entities. A store runs the migrations it has not recorded when it opens, then records them: never
    /// rename one that has run.
    ///
    /// ```yaml
    /// migrations:
    ///   - name: heading instead of title
    ///     steps:
    ///       - renameAttribute: {entity: Issue, from: title, to: heading}
    ///   - name: tickets are issues
    ///     steps:
    ///       - renameEntity: {from: Ticket, to: Issue}
    ///       - sql: DELETE FROM Issue WHERE number IS NULL
    ///       - changeIdentity: {entity: Issue}
    /// ```
    public struct Migration: Sendable, Equatable {
        public var name: String
        public var steps: [Step]

        public init(name: String, steps: [Step]) {
            self.name = name
            self.steps = steps
        }
    }

    /// One change of a ``Migration``; names are those of the store before the migration (`from`) and of this file.
    public enum Step: Sendable, Equatable {
        /// The entity stored as `from` is the file's entity `to`: its rows, relationships and links are kept.
        case renameEntity(from: String, to: String)
        /// The attribute stored as `from` is the attribute `to` of `entity`: its values are kept.
        case renameAttribute(entity: String, from: String, to: String)
        /// `entity`'s identity is the file's now (stored rows sharing it fail the migration).
        case changeIdentity(entity: String)
        /// SQL statements run as they are, between the other steps.
        case sql(String)
    }

    /// One entity: a table, and an object type whose fields are read and written by name.
    public struct Entity: Sendable, Equatable {
        public var name: String
        /// The attributes whose values identify an object (upserts find stored objects by them): one, or several
        /// (a composite identity). Empty: every record inserts a new object.
        public var identity: [String]
        /// What splits a ``Attribute/key`` or ``Relationship/key`` given as one string into path components.
        public var keyDelimiter: String
        public var attributes: [Attribute]
        public var relationships: [Relationship]
        public var indexes: [Index]
        /// Comment lines written above the entity (inference says what it saw here).
        public var notes: [String]

        public init(
            name: String, identity: [String] = [], keyDelimiter: String = ".", attributes: [Attribute] = [],
            relationships: [Relationship] = [], indexes: [Index] = [], notes: [String] = []
        ) {
            self.name = name
            self.identity = identity
            self.keyDelimiter = keyDelimiter
            self.attributes = attributes
            self.relationships = relationships
            self.indexes = indexes
            self.notes = notes
        }
    }

    /// A value stored in one column.
    public struct Attribute: Sendable, Equatable {
        public var name: String
        public var type: AttributeKind
        /// Whether the value may be null or missing from the JSON.
        public var isOptional: Bool
        /// Where the value is in a record: path components from the object (`["origin", "country", "name"]`).
        /// Defaults to the attribute's name.
        public var key: [String]
        /// The value a record that lacks the attribute gets (and the column's default), as written in the file.
        public var defaultValue: DefaultValue?
        /// A comment written after the attribute.
        public var note: String?

        public init(
            name: String, type: AttributeKind, isOptional: Bool = false, key: [String]? = nil,
            defaultValue: DefaultValue? = nil, note: String? = nil
        ) {
            self.name = name
            self.type = type
            self.isOptional = isOptional
            self.key = key ?? [name]
            self.defaultValue = defaultValue
            self.note = note
        }
    }

    /// The types an attribute of a model file can have.
    public enum AttributeKind: Sendable, Equatable, Hashable {
        case integer
        case double
        case bool
        case string
        /// A date, in JSON as the given format.
        case date(DateFormat)
        /// An exact decimal number (a JSON number, read without going through a binary double), stored as text.
        case decimal
        case uuid
        case url
        /// Bytes, Base64 in JSON.
        case data
        /// Any JSON value, kept as its JSON text.
        case json

        /// The name the file uses (`date` for every date format: the format is a field of its own).
        public var name: String {
            switch self {
            case .integer: "integer"
            case .double: "double"
            case .bool: "bool"
            case .string: "string"
            case .date: "date"
            case .decimal: "decimal"
            case .uuid: "uuid"
            case .url: "url"
            case .data: "data"
            case .json: "json"
            }
        }

        /// Every type name the file accepts.
        public static let names = ["integer", "double", "bool", "string", "date", "decimal", "uuid", "url", "data", "json"]

        init?(name: String, format: DateFormat?) {
            switch name {
            case "integer": self = .integer
            case "double": self = .double
            case "bool": self = .bool
            case "string": self = .string
            case "date": self = .date(format ?? .iso8601)
            case "decimal": self = .decimal
            case "uuid": self = .uuid
            case "url": self = .url
            case "data": self = .data
            case "json": self = .json
            default: return nil
            }
        }
    }

    /// How a date attribute is written in JSON.
    public enum DateFormat: String, Sendable, Equatable, Hashable, CaseIterable {
        /// `2015-06-05T09:52:26Z`, with or without fractional seconds and with any offset.
        case iso8601
        /// Seconds since 1970 as a number.
        case seconds
        /// Milliseconds since 1970 as a number.
        case milliseconds
    }

    /// A default value as the file writes it.
    public enum DefaultValue: Sendable, Equatable, Hashable {
        case integer(Int64)
        case double(Double)
        case bool(Bool)
        case string(String)
    }

    /// A relationship to another entity of the file.
    public struct Relationship: Sendable, Equatable {
        public var name: String
        /// The destination entity's name.
        public var destination: String
        public var isToMany: Bool
        /// For a to-many relationship: whether the order of the JSON array is kept.
        public var isOrdered: Bool
        /// The relationship of the destination that is this one's inverse; nil lets the store pair them when each
        /// is the only relationship between the two entities.
        public var inverse: String?
        public var deleteRule: DeleteRule
        /// What a bare id of an object that is not stored becomes; nil: the decoder's policy.
        public var unknownReferences: UnknownReferences?
        /// Where the relationship is in a record, as for ``Attribute/key``.
        public var key: [String]
        public var note: String?

        public init(
            name: String, destination: String, isToMany: Bool = false, isOrdered: Bool = false, inverse: String? = nil,
            deleteRule: DeleteRule = .nullify, unknownReferences: UnknownReferences? = nil, key: [String]? = nil,
            note: String? = nil
        ) {
            self.name = name
            self.destination = destination
            self.isToMany = isToMany
            self.isOrdered = isOrdered
            self.inverse = inverse
            self.deleteRule = deleteRule
            self.unknownReferences = unknownReferences
            self.key = key ?? [name]
            self.note = note
        }
    }

    /// What deleting an object does to the destinations of a relationship.
    public enum DeleteRule: String, Sendable, Equatable, CaseIterable {
        case nullify, cascade, deny
    }

    /// What a bare reference to an object that is not stored becomes (the decoder's unknown-reference policy).
    public enum UnknownReferences: String, Sendable, Equatable, CaseIterable {
        case stub, ignore, deferred
    }

    /// A declared index on fields of the entity.
    public struct Index: Sendable, Equatable {
        public var fields: [String]
        public var isUnique: Bool

        public init(fields: [String], isUnique: Bool = false) {
            self.fields = fields
            self.isUnique = isUnique
        }
    }
}
