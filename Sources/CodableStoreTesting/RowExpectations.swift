import CodableStore
import Foundation

extension Store {
    /// Compares the stored rows of an entity with a literal table: the values of `fields` (attribute names, as
    /// declared in Swift) of every object matching `predicate`, in `sort` order (by default the order the rows
    /// were inserted; give one for a stable expectation).
    ///
    /// ```swift
    /// try fixture.store.expectRows(Issue.self, ["number", "title", "state"], orderBy: [.ascending(\.number)], [
    ///     [1, "Crash when the list is empty", "closed"],
    ///     [2, "Dark mode", "open"],
    /// ])
    /// ```
    /// Values are compared as the store keeps them (an `Int` and the `Int64` 1 are equal; `nil` is `NULL`).
    /// - Throws: ``FixtureError`` (`rowsMismatch`) naming the first row and field that differ, or the counts, with the
    ///   store's rows as a table to copy; `invalidExpectation` for a field name the entity does not store.
    public func expectRows<T: EntityObject>(
        _ type: T.Type, _ fields: [String], where predicate: EntityPredicate<T>? = nil, orderBy sort: [Sort<T>] = [],
        _ expected: [[(any AttributeValue)?]]
    ) throws {
        let stored = try read { context in try context.snapshots(T.self, where: predicate, orderBy: sort) }
        let entity = T.entityDescription.name
        for field in fields {
            guard case .attribute? = T.entityDescription.field(named: field) else {
                throw FixtureError(.invalidExpectation, message: "\(entity) has no attribute named '\(field)'")
            }
        }
        if let row = expected.firstIndex(where: { $0.count != fields.count }) {
            throw FixtureError(
                .invalidExpectation, message: "row \(row + 1) of the expected \(entity) rows has \(expected[row].count) values for \(fields.count) fields")
        }
        let actual = stored.map { snapshot in fields.map { snapshot[field: $0] ?? .null } }
        let wanted = expected.map { row in row.map { $0?.databaseValue ?? .null } }
        guard actual != wanted else { return }
        func table() -> String {
            "the store's rows (\(fields.joined(separator: ", "))):\n" + actual.map { "  [" + $0.map(Self.render).joined(separator: ", ") + "]" }.joined(separator: "\n")
        }
        if let row = zip(wanted, actual).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            let column = zip(wanted[row], actual[row]).enumerated().first { $0.element.0 != $0.element.1 }!.offset
            throw FixtureError(
                .rowsMismatch,
                message: "\(entity) row \(row + 1), \(fields[column]): expected \(Self.render(wanted[row][column])), store \(Self.render(actual[row][column])); \(table())")
        }
        throw FixtureError(.rowsMismatch, message: "\(entity): expected \(wanted.count) rows, the store has \(actual.count); \(table())")
    }

    private static func render(_ value: DatabaseValue) -> String {
        switch value {
        case .null: "nil"
        case .integer(let value): "\(value)"
        case .real(let value): "\(value)"
        case .text(let text): "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .blob(let data): "<\(data.count) bytes>"
        }
    }
}
