/// Why a fixture could not be loaded, or an expectation of CodableStoreTesting failed.
///
/// Its ``description`` is what a test failure shows: the fixture file with the line and column and the JSON path of
/// the value at fault, the first difference from a golden file or from the rows expected, or the statements over a
/// budget. Thrown from a
/// Swift Testing `@Test` or an XCTest method, it fails the test with that text.
public struct FixtureError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A fixture or folder was not found where it was looked for.
        case notFound
        /// A fixture is not valid JSON, or does not decode into its type.
        case invalidFixture
        /// The store differs from a golden file.
        case goldenMismatch
        /// A golden file was missing and has been written.
        case goldenRecorded
        /// A closure ran more statements than its budget, or other kinds.
        case budgetExceeded
        /// An entity's stored rows differ from the rows expected.
        case rowsMismatch
        /// The expectation itself is wrong: a field the entity does not store, a row of the wrong length.
        case invalidExpectation
    }

    public var kind: Kind
    /// The file concerned: a fixture, a golden file.
    public var file: String?
    /// Where in `file` (1-based, the column in bytes), when known.
    public var line: Int?
    public var column: Int?
    /// The JSON path of the value at fault (`[3].user.login`), when known.
    public var jsonPath: String?
    /// What went wrong, without the location.
    public var message: String

    public init(
        _ kind: Kind, file: String? = nil, line: Int? = nil, column: Int? = nil, jsonPath: String? = nil, message: String
    ) {
        self.kind = kind
        self.file = file
        self.line = line
        self.column = column
        self.jsonPath = jsonPath
        self.message = message
    }

    public var description: String {
        var location = file ?? ""
        if let line {
            location += ":\(line)"
            if let column { location += ":\(column)" }
        }
        if let jsonPath { location += location.isEmpty ? "at \(jsonPath)" : " at \(jsonPath)" }
        return location.isEmpty ? message : "\(location): \(message)"
    }
}
