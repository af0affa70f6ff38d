import CodableStoreCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ModelFile {
    /// The file's ``migrations`` as a store runs them (`Store.Options.migrations`), by entity and attribute name.
    public func storeMigrations() -> [CodableStoreCore.Migration] {
        migrations.map { migration in
            CodableStoreCore.Migration(
                migration.name,
                migration.steps.map { step in
                    switch step {
                    case .renameEntity(let from, let to): .renameEntity(from, toEntityNamed: to)
                    case .renameAttribute(let entity, let from, let to): .renameAttribute(from, to: to, ofEntityNamed: entity)
                    case .changeIdentity(let entity): .changeIdentity(ofEntityNamed: entity)
                    case .sql(let text): .sql(text)
                    }
                })
        }
    }

    /// The file's entities as descriptions a store runs directly (`RuntimeEntityBuilder`): give them to
    /// `Store(path:entities:runtimeEntities:options:)` and import, fetch and export by entity name, with no Swift
    /// written or compiled. A store opened with them has the same tables, columns and rows as one opened with the
    /// `@Entity` classes ``swiftSource(namespace:isPublic:)`` writes for the same file.
    ///
    /// Dates are read in each attribute's own format, whatever the decoder's date strategy. A `string` attribute that
    /// is part of an identity also takes a JSON number as its digits (APIs that give an id as `42` in one place and
    /// `"42"` in another); every other attribute refuses a value of another JSON type, with the record and its path.
    ///
    /// - Throws: ``ModelFileError`` when the file is not a valid model (``validate()``).
    public func entityDescriptions() throws -> [EntityDescription] {
        try validate()
        return entities.map { entity in
            var builder = RuntimeEntityBuilder(name: entity.name)
            for attribute in entity.attributes {
                builder.attribute(
                    attribute.name, attribute.type.runtimeType, optional: attribute.isOptional, key: attribute.key,
                    default: attribute.defaultValue.map { Self.storedDefault($0, attribute.type) },
                    numbersAsText: attribute.type == .string && entity.identity.contains(attribute.name))
            }
            for relationship in entity.relationships {
                let kind: RelationshipDescription.Kind =
                    !relationship.isToMany ? .toOne : relationship.isOrdered ? .toManyOrdered : .toManyUnordered
                let rule: RelationshipDeleteRule =
                    switch relationship.deleteRule {
                    case .nullify: .nullify
                    case .cascade: .cascade
                    case .deny: .deny
                    }
                let policy: StoreDecoder.UnknownReferencePolicy? =
                    switch relationship.unknownReferences {
                    case .stub: .stub
                    case .ignore: .ignore
                    case .deferred: .deferred
                    case nil: nil
                    }
                builder.relationship(
                    relationship.name, to: relationship.destination, kind: kind, key: relationship.key,
                    inverse: relationship.inverse, deleteRule: rule, unknownReferences: policy)
            }
            for index in entity.indexes { builder.index(index.fields, unique: index.isUnique) }
            return builder.build(identity: entity.identity)
        }
    }

    /// A default as the column stores it: what the compiled property's initial value stores.
    static func storedDefault(_ value: DefaultValue, _ kind: AttributeKind) -> DatabaseValue {
        switch (value, kind) {
        case (.integer(let number), .decimal): return Decimal(number).databaseValue
        case (.double(let number), .decimal): return Decimal(string: String(number)).map(\.databaseValue) ?? .null
        case (.string(let text), .decimal): return Decimal(string: text).map(\.databaseValue) ?? .null
        case (.string(let text), .uuid): return UUID(uuidString: text).map(\.databaseValue) ?? .null
        case (.string(let text), .url): return URL(string: text).map(\.databaseValue) ?? .null
        case (.string(let text), .data): return Data(base64Encoded: text).map(\.databaseValue) ?? .null
        case (.string(let text), .date):
            var text = text
            return text.withUTF8 { ISO8601.parse($0) }.map { .real($0) } ?? .null
        case (.integer(let number), .date(.milliseconds)): return .real(Double(number) / 1000)
        case (.double(let number), .date(.milliseconds)): return .real(number / 1000)
        case (.integer(let number), .date), (.integer(let number), .double): return .real(Double(number))
        case (.double(let number), _): return .real(number)
        case (.integer(let number), _): return .integer(number)
        case (.bool(let flag), _): return .integer(flag ? 1 : 0)
        case (.string(let text), _): return .text(text)
        }
    }
}

extension ModelFile.AttributeKind {
    var runtimeType: RuntimeAttributeType {
        switch self {
        case .integer: .integer
        case .double: .double
        case .bool: .bool
        case .string: .string
        case .date(.iso8601): .date(.iso8601)
        case .date(.seconds): .date(.seconds)
        case .date(.milliseconds): .date(.milliseconds)
        case .decimal: .decimal
        case .uuid: .uuid
        case .url: .url
        case .data: .data
        case .json: .json
        }
    }
}

extension ModelFile {
    /// The field of the model a value of a record of `entity` at `keys` is read into (JSON keys from the record's
    /// root, array indexes left out): an attribute whose key is a prefix of them, or a relationship's, followed into
    /// its destination. nil when the model reads nothing there.
    ///
    /// ```swift
    /// model.field(at: ["user", "login"], in: "Issue")   // ("User", "login")
    /// ```
    public func field(at keys: [String], in entity: String) -> (entity: String, field: String)? {
        field(at: keys[...], in: entity, depth: 0)
    }

    private func field(at keys: ArraySlice<String>, in entityName: String, depth: Int) -> (entity: String, field: String)? {
        guard depth < 64, let entity = entities.first(where: { $0.name == entityName }) else { return nil }
        var best: (length: Int, found: (entity: String, field: String))?
        for attribute in entity.attributes where keys.starts(with: attribute.key) && attribute.key.count > (best?.length ?? 0) {
            best = (attribute.key.count, (entity.name, attribute.name))
        }
        for relationship in entity.relationships
        where keys.starts(with: relationship.key) && relationship.key.count > (best?.length ?? 0) {
            let rest = keys.dropFirst(relationship.key.count)
            let inner = rest.isEmpty ? nil : field(at: rest, in: relationship.destination, depth: depth + 1)
            best = (relationship.key.count, inner ?? (entity.name, relationship.name))
        }
        return best?.found
    }

    /// What the file says of a field, as it writes it: `string?`, `date (milliseconds)`, `User`, `[Label]`.
    public func declaration(of field: String, in entity: String) -> String? {
        guard let entity = entities.first(where: { $0.name == entity }) else { return nil }
        if let attribute = entity.attributes.first(where: { $0.name == field }) {
            var text = attribute.type.name
            if case .date(let format) = attribute.type { text += " (\(format.rawValue))" }
            return text + (attribute.isOptional ? "?" : "")
        }
        if let relationship = entity.relationships.first(where: { $0.name == field }) {
            return relationship.isToMany ? "[\(relationship.destination)]" : relationship.destination
        }
        return nil
    }
}
