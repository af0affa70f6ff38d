extension ModelFile {
    /// The file's text: entities and fields in their order, each field on one line, the short forms where they say
    /// everything (`title: string`, `body: string?`, `user: User`, `labels: [Label]`), notes as comments. The same
    /// model always gives the same text, and ``parse(_:file:)`` of the text gives the model back.
    public func rendered(header: [String] = []) -> String {
        var lines = header.map { Self.comment($0, indent: 0) }
        lines.append("version: \(Self.currentVersion)")
        lines.append("entities:")
        for (position, entity) in entities.enumerated() {
            if position > 0 { lines.append("") }
            let isEmpty = entity.identity.isEmpty && entity.keyDelimiter == "." && entity.attributes.isEmpty
                && entity.relationships.isEmpty && entity.indexes.isEmpty
            // An entity with nothing in it is an empty mapping, which reads back as one (a bare key would be null).
            lines.append("  \(Self.scalar(entity.name)):" + (isEmpty ? " {}" : ""))
            for note in entity.notes { lines.append(Self.comment(note, indent: 4)) }
            if !entity.identity.isEmpty { lines.append("    identity: \(Self.list(entity.identity))") }
            if entity.keyDelimiter != "." { lines.append("    keyDelimiter: \(Self.quoted(entity.keyDelimiter))") }
            if !entity.attributes.isEmpty {
                lines.append("    attributes:")
                for attribute in entity.attributes {
                    lines.append(
                        Self.withNote("      \(Self.scalar(attribute.name)): \(attributeValue(attribute, entity))", attribute.note))
                }
            }
            if !entity.relationships.isEmpty {
                lines.append("    relationships:")
                for relationship in entity.relationships {
                    lines.append(
                        Self.withNote(
                            "      \(Self.scalar(relationship.name)): \(relationshipValue(relationship, entity))", relationship.note))
                }
            }
            if !entity.indexes.isEmpty {
                lines.append("    indexes:")
                for index in entity.indexes {
                    lines.append(
                        index.isUnique
                            ? "      - {fields: \(Self.list(index.fields)), unique: true}" : "      - \(Self.list(index.fields))")
                }
            }
        }
        if !migrations.isEmpty {
            lines += ["", "migrations:"]
            for migration in migrations {
                lines.append("  - name: \(Self.scalar(migration.name))")
                lines.append("    steps:")
                for step in migration.steps {
                    switch step {
                    case .renameEntity(let from, let to):
                        lines.append("      - renameEntity: {from: \(Self.scalar(from)), to: \(Self.scalar(to))}")
                    case .renameAttribute(let entity, let from, let to):
                        lines.append("      - renameAttribute: {entity: \(Self.scalar(entity)), from: \(Self.scalar(from)), to: \(Self.scalar(to))}")
                    case .changeIdentity(let entity):
                        lines.append("      - changeIdentity: {entity: \(Self.scalar(entity))}")
                    case .sql(let text):
                        lines.append("      - sql: \(Self.quoted(text))")
                    }
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func attributeValue(_ attribute: Attribute, _ entity: Entity) -> String {
        var options: [String] = []
        // A date always says its format: the one thing about it a person editing the file must check.
        if case .date(let format) = attribute.type { options.append("format: \(format.rawValue)") }
        if attribute.key != [attribute.name] { options.append("key: \(Self.key(attribute.key, entity.keyDelimiter))") }
        if let value = attribute.defaultValue { options.append("default: \(Self.defaultText(value))") }
        if options.isEmpty { return attribute.type.name + (attribute.isOptional ? "?" : "") }
        return "{" + (["type: \(attribute.type.name)"] + (attribute.isOptional ? ["optional: true"] : []) + options)
            .joined(separator: ", ") + "}"
    }

    private func relationshipValue(_ relationship: Relationship, _ entity: Entity) -> String {
        var options: [String] = []
        if relationship.isToMany { options.append("many: true") }
        if relationship.isOrdered { options.append("ordered: true") }
        if let inverse = relationship.inverse { options.append("inverse: \(Self.scalar(inverse))") }
        if relationship.deleteRule != .nullify { options.append("deleteRule: \(relationship.deleteRule.rawValue)") }
        if let policy = relationship.unknownReferences { options.append("references: \(policy.rawValue)") }
        if relationship.key != [relationship.name] { options.append("key: \(Self.key(relationship.key, entity.keyDelimiter))") }
        let destination = Self.scalar(relationship.destination)
        if options.isEmpty { return destination }
        if options == ["many: true"] { return "[\(destination)]" }
        return "{" + (["to: \(destination)"] + options).joined(separator: ", ") + "}"
    }

    /// A key as one string split by the delimiter when no component holds it, else as a list of components.
    private static func key(_ components: [String], _ delimiter: String) -> String {
        let separator = delimiter.isEmpty ? "." : delimiter
        if components.count == 1 || !components.contains(where: { $0.contains(separator) }) {
            if components.count == 1 && components[0].contains(separator) { return list(components) }
            return scalar(components.joined(separator: separator))
        }
        return list(components)
    }

    private static func list(_ names: [String]) -> String {
        "[" + names.map(scalar).joined(separator: ", ") + "]"
    }

    private static func defaultText(_ value: DefaultValue) -> String {
        switch value {
        case .integer(let value): String(value)
        case .double(let value): value.isFinite ? "\(value)" : quoted("\(value)")
        case .bool(let value): value ? "true" : "false"
        case .string(let value): quoted(value)
        }
    }

    private static func withNote(_ line: String, _ note: String?) -> String {
        guard let note, !note.isEmpty else { return line }
        return line + "  # " + oneLine(note)
    }

    private static func comment(_ text: String, indent: Int) -> String {
        String(repeating: " ", count: indent) + (text.isEmpty ? "#" : "# " + oneLine(text))
    }

    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }

    /// Words YAML would read as something other than text.
    private static let reserved: Set<String> = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
    ]

    /// A name or text as a plain scalar when YAML reads it back as the same text in any context (block or flow),
    /// else double-quoted.
    static func scalar(_ text: String) -> String {
        guard let first = text.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else { return quoted(text) }
        if reserved.contains(text.lowercased()) { return quoted(text) }
        for character in text.unicodeScalars {
            if character.properties.isAlphabetic || ("0"..."9").contains(character) { continue }
            if character == "_" || character == "-" || character == "." || character == "/" { continue }
            return quoted(text)
        }
        return text
    }

    static func quoted(_ text: String) -> String {
        var result = "\""
        for character in text.unicodeScalars {
            switch character {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                if character.value < 0x20 || character.value == 0x7F {
                    result += "\\x" + (character.value < 0x10 ? "0" : "") + String(character.value, radix: 16)
                } else {
                    result.unicodeScalars.append(character)
                }
            }
        }
        return result + "\""
    }
}
