/// An error of the store itself, rather than of SQLite or of Codable: schema mismatches, identity conflicts,
/// misuse of contexts, stored values that do not fit their attribute.
///
/// `description` is one stable line that names the entity, the field and how to fix the problem;
/// ``detailedDescription()`` renders the full context. Match on ``code``:
///
/// ```swift
/// do { try store.write { try $0.insert(Person(id: 1)) } }
/// catch let error as StoreError where error.code == .identityConflict { … }
/// ```
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. A struct rather than an enum, so that codes can be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case schemaMismatch, invalidModel, unknownEntity, identityConflict, valueMismatch
            case readOnly, wrongContext, invalidObject, invalidQuery, relationshipLoad, missingIdentity, storeBusy
            case deleteDenied, migrationFailed, unsupported, connectionFailed, observationFailed, writeConflict
            case serverFailed
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        /// The stored model differs from the declared one in a way that cannot be applied automatically.
        public static let schemaMismatch = Code(.schemaMismatch)
        /// The declared entities are inconsistent (a bad identity, a clash of names).
        public static let invalidModel = Code(.invalidModel)
        /// An entity class that the store was not opened with.
        public static let unknownEntity = Code(.unknownEntity)
        /// Another object with the same identity is already stored.
        public static let identityConflict = Code(.identityConflict)
        /// A stored value does not fit the attribute's Swift type.
        public static let valueMismatch = Code(.valueMismatch)
        /// A change was attempted in a read-only context or store.
        public static let readOnly = Code(.readOnly)
        /// An object was used with a context that does not hold it.
        public static let wrongContext = Code(.wrongContext)
        /// An object or value cannot be used this way (a deleted object, an identity of the wrong arity).
        public static let invalidObject = Code(.invalidObject)
        /// A fetch that cannot be turned into SQL (a key path that is not a stored field).
        public static let invalidQuery = Code(.invalidQuery)
        /// What this store's backend does not offer (a SQLite connection of a PostgreSQL store, say).
        public static let unsupported = Code(.unsupported)
        /// The database server cannot be reached, or refused the connection (PostgreSQL).
        public static let connectionFailed = Code(.connectionFailed)
        /// The database server failed a statement for a reason of its own rather than of the data: its disk is full,
        /// it ran out of memory, a statement ran longer than its `statement_timeout`, an I/O error (PostgreSQL). Its
        /// ``StoreError/cause`` is the server's error. The transaction was rolled back.
        public static let serverFailed = Code(.serverFailed)
        /// A relationship could not be loaded when it was accessed.
        public static let relationshipLoad = Code(.relationshipLoad)
        /// Decoded JSON lacks the identity of an entity that has one.
        public static let missingIdentity = Code(.missingIdentity)
        /// Another connection (another process, or another ``Store`` of the same file) kept the store's write
        /// lock for longer than ``Store/Options/busyTimeout``.
        public static let storeBusy = Code(.storeBusy)
        /// A delete reached a relationship whose delete rule is ``RelationshipDeleteRule/deny`` while it had a
        /// destination: nothing was deleted.
        public static let deleteDenied = Code(.deleteDenied)
        /// A step of a ``Migration`` failed (or left rows that do not fit the model): the store was not changed.
        public static let migrationFailed = Code(.migrationFailed)
        /// A write met other writers' transactions (deadlocks, serialization failures) on every one of its
        /// ``Store/Options/maximumWriteAttempts`` attempts, on a backend with writers in parallel (PostgreSQL): nothing
        /// of it was committed. Its ``StoreError/cause`` is the last attempt's error.
        public static let writeConflict = Code(.writeConflict)
        /// An observation could not read its query's results (``Store/observe(_:where:orderBy:)``): its
        /// ``StoreError/cause`` is the read's error.
        public static let observationFailed = Code(.observationFailed)
    }

    public let code: Code
    /// What happened and how to fix it.
    public let message: String
    /// The entity concerned, if any.
    public let entity: String?
    /// The field concerned, if any.
    public let field: String?
    /// The individual differences of a schema mismatch.
    public let differences: [String]
    /// The underlying error.
    public let cause: (any Error)?
    /// Where in the decoded JSON the failure happened (`[41].user`), when it happened while decoding.
    public internal(set) var codingPath: [any CodingKey] = []
    /// For ``Code/missingIdentity``: the JSON keys of the entity's identity (key paths joined with `.`).
    public internal(set) var identityKeys: [String] = []
    /// For ``Code/missingIdentity``: the keys the JSON object had.
    public internal(set) var receivedKeys: [String] = []
    /// For ``Code/missingIdentity``: the identity keys whose value is `null` (or lies under a `null`).
    public internal(set) var nullKeys: [String] = []
    /// For ``Code/migrationFailed`` (and ``Code/unsupported`` on a backend that cannot run a step): the name of the
    /// ``Migration`` whose step failed, when one migration is to blame.
    public package(set) var migration: String?
    /// With ``migration``: the number of the step that failed in the migration's ``Migration/steps`` (1 for the
    /// first), when one step is to blame.
    public package(set) var migrationStep: Int?

    package init(
        _ code: Code,
        _ message: String,
        entity: String? = nil,
        field: String? = nil,
        differences: [String] = [],
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.entity = entity
        self.field = field
        self.differences = differences
        self.cause = cause
    }

    public var description: String {
        var text = "StoreError.\(code): \(message)"
        // A busy store's message says all there is; its cause is SQLite's "database is locked" on BEGIN.
        if let cause, code != .storeBusy { text += " (cause: \(cause))" }
        return text
    }

    /// A multi-line rendering with the full context.
    public func detailedDescription() -> String {
        var lines = ["StoreError: \(message)", "├─ Code: \(code)"]
        if let entity { lines.append("├─ Entity: \(entity)") }
        if let field { lines.append("├─ Field: \(field)") }
        if let migration { lines.append("├─ Migration: \(migration)" + (migrationStep.map { ", step \($0)" } ?? "")) }
        for difference in differences { lines.append("├─ Difference: \(difference)") }
        if let cause { lines.append("├─ Cause: \(cause)") }
        lines[lines.count - 1] = "└" + lines[lines.count - 1].dropFirst()
        return lines.joined(separator: "\n")
    }

    // MARK: - Factories

    static func valueMismatch(entity: String, field: String, _ error: any Error) -> StoreError {
        StoreError(
            .valueMismatch, "\(entity).\(field): stored value does not fit: \(error)", entity: entity, field: field,
            cause: error)
    }

    static func unknownEntity(_ type: Any.Type) -> StoreError {
        StoreError(
            .unknownEntity,
            "\(type) is not an entity of this store; list it in the entities the Store is opened with",
            entity: "\(type)")
    }

    package static func storeBusy(
        waitedMilliseconds: Int32, cause: any Error, by holder: String = "another process (or another Store of the same file)"
    ) -> StoreError {
        let seconds = Double(waitedMilliseconds) / 1000
        let waited = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
        return StoreError(
            .storeBusy,
            "the store is being written by \(holder); waited \(waited) s "
                + "for it to finish. Wait longer with Store.Options.busyTimeout",
            cause: cause)
    }

    static func readOnly(_ operation: String) -> StoreError {
        StoreError(.readOnly, "cannot \(operation) in a read-only context; use store.write { … }")
    }
}
