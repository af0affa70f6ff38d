import CodableStoreCore

/// An import that stopped: where in the input, and why.
///
/// `description` is one line: `record 41 (line 43, column 3, byte 21503) at [41].user.id: Expected to decode
/// Int but found a string instead.` The underlying error (`DecodingError`, `JSONSyntaxError`,
/// `StoreError`, `SQLiteError`) is ``underlyingError``.
public struct ImportError: Error, Sendable, CustomStringConvertible {
    /// The record's index in the dump, when the failure is in a record.
    public var recordIndex: Int?
    /// The byte offset of the failure (a syntax error) or of the record's start.
    public var byteOffset: Int?
    public var line: Int?
    public var column: Int?
    /// Where in the record decoding failed (`[41].user.id`).
    public var codingPath: String?
    /// What went wrong.
    public var reason: String
    public var underlyingError: any Error

    public var description: String {
        var location: [String] = []
        if let line { location.append("line \(line)") }
        if let column { location.append("column \(column)") }
        if let byteOffset { location.append("byte \(byteOffset)") }
        var text = recordIndex.map { "record \($0)" } ?? (isStoreFailure ? "store" : "input")
        if !location.isEmpty { text += " (" + location.joined(separator: ", ") + ")" }
        if let codingPath { text += " at \(codingPath)" }
        return text + ": " + reason
    }

    /// Whether the store failed rather than the input: SQLite (a full disk, an I/O error, another writer) or the
    /// store itself, outside the decoding of a record.
    public var isStoreFailure: Bool {
        switch underlyingError {
        case is SQLiteError, is any DatabaseError: true
        case let error as StoreError: error.codingPath.isEmpty
        default: false
        }
    }

    /// Describes an error of a record: the reason and coding path of a `DecodingError`, the location of a
    /// syntax error, the message of a store error.
    package static func describe(_ error: any Error) -> (reason: String, codingPath: String?) {
        let path = codingKeys(of: error)
        let rendered = path.isEmpty ? nil : CodingPathNode.render(path)
        switch error {
        case let error as DecodingError:
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context),
                .keyNotFound(_, let context):
                return (context.debugDescription, rendered)
            @unknown default:
                return ("\(error)", nil)
            }
        case let error as StoreError:
            return (error.message, rendered)
        case let error as JSONSyntaxError:
            return (error.reason, nil)
        case let error as SQLiteError:
            // The statement can be hundreds of characters of SQL: the log has it (see `Importer.run`).
            return ("\(error.message) (SQLite error \(error.resultCode.rawValue), \(error.resultCode.name))", nil)
        case let error as any DatabaseError:
            return (error.description, nil)
        default:
            return ("\(error)", nil)
        }
    }

    /// Where in the JSON an error happened: the coding path of a `DecodingError` (with the missing key of
    /// `keyNotFound`) or of a ``StoreError``; empty for other errors.
    package static func codingKeys(of error: any Error) -> [any CodingKey] {
        switch error {
        case let error as DecodingError:
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                return context.codingPath
            case .keyNotFound(let key, let context):
                return context.codingPath + [CodingKeys(stringValue: key.stringValue)]
            @unknown default:
                return []
            }
        case let error as StoreError:
            return error.codingPath
        default:
            return []
        }
    }
}
