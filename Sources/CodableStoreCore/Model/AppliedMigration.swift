#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A ``Migration`` a store has recorded as applied: what ``Store/appliedMigrations()`` lists, oldest first.
///
/// ```swift
/// let store = try Store(path: path, entities: [Issue.self], options: .init(migrations: migrations))
/// for migration in try store.appliedMigrations() {
///     print(migration.name, migration.kind, migration.appliedAt.map(String.init(describing:)) ?? "-", migration.steps)
/// }
/// // rename Ticket to Issue  ran  2026-05-20 10:00:00 +0000  ["renameEntity(Ticket to Issue)"]
/// ```
///
/// A migration is recorded once, in the transaction that applies it; the record never changes afterwards, even
/// if the ``Migration`` given to a later open has other steps (its name is the record).
public struct AppliedMigration: Sendable, Hashable, CustomStringConvertible {
    /// How a migration came to be recorded.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case ran, recordedAtCreation, recordedByName
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        /// Its steps ran on the store, when a store opened with it for the first time.
        public static let ran = Kind(.ran)
        /// The store was created with it in ``Store/Options/migrations``: its tables were made as the model
        /// declares them, which already includes the migration's changes, so it was recorded as done and its steps
        /// never ran.
        public static let recordedAtCreation = Kind(.recordedAtCreation)
        /// A version of CodableStore that recorded the names of migrations only (before their steps and time were
        /// recorded) applied it: ``AppliedMigration/steps`` is empty and ``AppliedMigration/appliedAt`` nil.
        public static let recordedByName = Kind(.recordedByName)

        init?(rawValue: String) {
            guard let wrapped = Wrapped(rawValue: rawValue) else { return nil }
            self.wrapped = wrapped
        }
    }

    /// The migration's name (``Migration/name``).
    public let name: String
    /// The descriptions of its steps, in order, as they were when it was recorded (``Migration/Step/description``):
    /// `["renameEntity(Ticket to Issue)", "changeType(of: Issue.score)"]`. Empty for a migration without steps and
    /// for one recorded by name only (``Kind/recordedByName``).
    public let steps: [String]
    /// When it was recorded (the clock of the process that applied it, to the microsecond); nil for a migration
    /// recorded by name only.
    public let appliedAt: Date?
    /// Whether its steps ran, or it was recorded as done.
    public let kind: Kind

    package init(name: String, steps: [String], appliedAt: Date?, kind: Kind) {
        self.name = name
        self.steps = steps
        self.appliedAt = appliedAt
        self.kind = kind
    }

    /// `rename Ticket to Issue (ran at 2026-05-20T10:00:00Z: renameEntity(Ticket to Issue))`.
    public var description: String {
        var text = "\(name) (\(kind)"
        if let appliedAt { text += " at " + ISO8601.string(secondsSince1970: appliedAt.timeIntervalSince1970) }
        if !steps.isEmpty { text += ": " + steps.joined(separator: ", ") }
        return text + ")"
    }
}
