extension ModelFile {
    /// Checks what a store would refuse, or a person would not mean: names (unique, none reserved), identities,
    /// indexes and inverses that name fields that exist, relationships to entities of the file, defaults of the
    /// attribute's type, and JSON keys read by one field only (a key that is another field's, or the parent of one,
    /// is a clash: a value cannot be a scalar and an object at once). ``parse(_:file:)`` runs it; call it on a
    /// model built or edited in code.
    public func validate() throws(ModelFileError) {
        try validate(file: nil, marks: nil)
    }

    func validate(file: String?, marks: Marks?) throws(ModelFileError) {
        func fail(_ field: String, _ message: String) -> ModelFileError {
            let mark = marks?.at(field) ?? (line: 0, column: 0)
            return ModelFileError(file: file, line: mark.line, column: mark.column, field: field, message: message)
        }
        var entityNames: Set<String> = []
        for entity in entities {
            let path = "entities.\(entity.name)"
            if entity.name.isEmpty { throw fail(path, "an entity needs a name") }
            if entity.name.hasPrefix("_") || entity.name.lowercased().hasPrefix("sqlite_") {
                throw fail(path, "the entity name \(entity.name) is reserved (names starting with '_' or 'sqlite_' are the store's)")
            }
            if !entityNames.insert(entity.name).inserted { throw fail(path, "two entities are named \(entity.name)") }
        }
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for entity in entities {
            let path = "entities.\(entity.name)"
            var kinds: [String: String] = [:]  // field name → "attribute" / "relationship"
            for attribute in entity.attributes {
                let field = "\(path).attributes.\(attribute.name)"
                try checkFieldName(attribute.name, field, &kinds, "attribute", fail)
                if let value = attribute.defaultValue, !Self.fits(value, attribute.type) {
                    throw fail(field, "the default \(Self.text(of: value)) is not a value of type \(attribute.type.name)")
                }
            }
            for relationship in entity.relationships {
                let field = "\(path).relationships.\(relationship.name)"
                try checkFieldName(relationship.name, field, &kinds, "relationship", fail)
                guard let destination = byName[relationship.destination] else {
                    throw fail(
                        field, "relationship to '\(relationship.destination)', which is no entity of this file (entities: \(entities.map(\.name).joined(separator: ", ")))")
                }
                guard let inverseName = relationship.inverse else { continue }
                guard let inverse = destination.relationships.first(where: { $0.name == inverseName }) else {
                    throw fail("\(field).inverse", "\(destination.name) has no relationship '\(inverseName)' to be the inverse of \(entity.name).\(relationship.name)")
                }
                if inverse.destination != entity.name {
                    throw fail("\(field).inverse", "\(destination.name).\(inverseName) points at \(inverse.destination), not at \(entity.name): it cannot be the inverse of \(entity.name).\(relationship.name)")
                }
                if destination.name == entity.name, inverseName == relationship.name {
                    throw fail("\(field).inverse", "\(entity.name).\(relationship.name) cannot be its own inverse")
                }
                if let back = inverse.inverse, back != relationship.name {
                    throw fail("\(field).inverse", "\(destination.name).\(inverseName) declares \(back) as its inverse, not \(relationship.name)")
                }
            }
            var identitySeen: Set<String> = []
            for name in entity.identity {
                let field = "\(path).identity"
                guard identitySeen.insert(name).inserted else { throw fail(field, "the identity names \(name) twice") }
                if let attribute = entity.attributes.first(where: { $0.name == name }) {
                    if attribute.type == .json || attribute.type == .data {
                        throw fail(field, "the identity attribute \(name) is \(attribute.type.name): identities are values that compare exactly (integer, string, uuid, …)")
                    }
                    continue
                }
                if entity.relationships.contains(where: { $0.name == name }) {
                    throw fail(field, "the identity names \(name), a relationship: only attributes identify (add the related id as an attribute, with its key)")
                }
                throw fail(field, "the identity names \(name), which is no attribute of \(entity.name)")
            }
            for (position, index) in entity.indexes.enumerated() {
                let field = "\(path).indexes.\(position)"
                for name in index.fields {
                    if entity.attributes.contains(where: { $0.name == name }) { continue }
                    if let relationship = entity.relationships.first(where: { $0.name == name }), !relationship.isToMany { continue }
                    throw fail(field, "the index names \(name), which is no attribute or to-one relationship of \(entity.name)")
                }
            }
            // JSON keys: one field per key, and no key inside another field's value.
            var keys: [(path: [String], field: String)] = entity.attributes.map { ($0.key, "\(path).attributes.\($0.name)") }
            keys += entity.relationships.map { ($0.key, "\(path).relationships.\($0.name)") }
            let delimiter = entity.keyDelimiter.isEmpty ? "." : entity.keyDelimiter
            for (position, first) in keys.enumerated() {
                for second in keys[(position + 1)...] {
                    let shorter = min(first.path.count, second.path.count)
                    guard Array(first.path.prefix(shorter)) == Array(second.path.prefix(shorter)) else { continue }
                    let (a, b) = first.path.count <= second.path.count ? (first, second) : (second, first)
                    let aKey = a.path.joined(separator: delimiter)
                    let bKey = b.path.joined(separator: delimiter)
                    let reason =
                        a.path.count == b.path.count
                        ? "both are read from the JSON key '\(aKey)'"
                        : "'\(aKey)' is read as a value, and '\(bKey)' inside it as an object"
                    throw fail(second.field, "the key clashes with \(first.field.split(separator: ".").suffix(2).joined(separator: ".")): \(reason)")
                }
            }
        }
        // Migrations: what a step names on the file's side exists in this file (the old names are the store's).
        var migrationNames: Set<String> = []
        for (position, migration) in migrations.enumerated() {
            let path = "migrations.\(position)"
            if migration.name.isEmpty { throw fail("\(path).name", "a migration needs a name, which the store records") }
            if !migrationNames.insert(migration.name).inserted {
                throw fail("\(path).name", "two migrations are named '\(migration.name)': a store records each by its name")
            }
            for (index, step) in migration.steps.enumerated() {
                let field = "\(path).steps.\(index)"
                func entity(_ name: String, _ argument: String) throws(ModelFileError) -> Entity {
                    guard let entity = byName[name] else {
                        throw fail("\(field).\(argument)", "'\(name)' is no entity of this file (entities: \(entities.map(\.name).joined(separator: ", ")))")
                    }
                    return entity
                }
                switch step {
                case .renameEntity(_, let to):
                    _ = try entity(to, "renameEntity.to")
                case .renameAttribute(let name, _, let to):
                    let declared = try entity(name, "renameAttribute.entity")
                    guard declared.attributes.contains(where: { $0.name == to }) else {
                        throw fail("\(field).renameAttribute.to", "'\(to)' is no attribute of \(name)")
                    }
                case .changeIdentity(let name):
                    _ = try entity(name, "changeIdentity.entity")
                case .sql(let text):
                    if text.allSatisfy(\.isWhitespace) { throw fail("\(field).sql", "the SQL is empty") }
                }
            }
        }
    }

    private func checkFieldName(
        _ name: String, _ field: String, _ kinds: inout [String: String], _ kind: String,
        _ fail: (String, String) -> ModelFileError
    ) throws(ModelFileError) {
        if name.isEmpty { throw fail(field, "a field needs a name") }
        if name.hasPrefix("_") { throw fail(field, "the field name \(name) is reserved (names starting with '_' are the store's columns)") }
        if let other = kinds[name] { throw fail(field, "\(name) is declared twice (as \(other) and as \(kind))") }
        kinds[name] = kind
    }

    static func fits(_ value: DefaultValue, _ type: AttributeKind) -> Bool {
        switch (value, type) {
        case (.integer, .integer), (.integer, .double), (.double, .double), (.bool, .bool): true
        case (.integer, .decimal), (.double, .decimal), (.string, .decimal): true
        case (.string, .string), (.string, .uuid), (.string, .url), (.string, .json), (.string, .data): true
        case (.string, .date(.iso8601)): true
        case (.integer, .date(.seconds)), (.double, .date(.seconds)), (.integer, .date(.milliseconds)), (.double, .date(.milliseconds)): true
        default: false
        }
    }

    static func text(of value: DefaultValue) -> String {
        switch value {
        case .integer(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        case .string(let value): "'\(value)'"
        }
    }
}
