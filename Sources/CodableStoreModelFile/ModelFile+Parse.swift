import Yams

/// A model file that cannot be read: where (file, line, column, and the field as a path of names) and why.
///
/// `issues.yaml:12:13: entities.Issue.attributes.title: unknown type 'strng' (types: integer, double, …)`
public struct ModelFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file's name as given to ``ModelFile/parse(_:file:)``; nil for text without one.
    public var file: String?
    /// 1-based line and column of the value at fault; 0 when the model has no text to point into (one built in
    /// code, or a problem found after reading, such as ``ModelFile/swiftSource(namespace:isPublic:)``'s).
    public var line: Int
    public var column: Int
    /// The field at fault, as the names that lead to it: `entities.Issue.attributes.title.type`.
    public var field: String
    public var message: String

    public init(file: String?, line: Int, column: Int, field: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
    }

    public var description: String {
        (file ?? "<model>") + (line > 0 ? ":\(line):\(column)" : "") + ": " + (field.isEmpty ? "" : "\(field): ") + message
    }
}

extension ModelFile {
    /// Reads a model file. Every problem is a ``ModelFileError`` that names the file, the line and the field: YAML
    /// syntax, a field this format does not have (a misspelling), an unknown type, an identity, index or inverse that
    /// names no field, a relationship to no entity, two fields read from the same JSON key, and the rest of what
    /// ``validate()`` checks.
    public static func parse(_ text: String, file: String? = nil) throws(ModelFileError) -> ModelFile {
        try parsePlaced(text, file: file).model
    }

    /// Reads a model file as ``parse(_:file:)`` does, and where each entity and field is in it: for messages that
    /// point at what the model says (an import's record that contradicts it).
    public static func parsePlaced(_ text: String, file: String? = nil) throws(ModelFileError) -> (model: ModelFile, places: Places) {
        let root: Node?
        do {
            // The basic resolver: every scalar a string, typed below (`Node.plain…`). The default one resolves tags with
            // NSRegularExpression, which maps ICU's data: 3.5 MiB of resident memory for an import's whole run. UTF-8
            // named rather than Yams' default, which reads the environment through Foundation's ProcessInfo to choose.
            root = try Yams.compose(yaml: text, .basic, .default, .utf8)
        } catch let error as YamlError {
            throw syntaxError(error, file: file)
        } catch {
            throw ModelFileError(file: file, line: 1, column: 1, field: "", message: "\(error)")
        }
        var reader = Reader(file: file)
        let model = try reader.model(root)
        try model.validate(file: file, marks: reader.marks)
        return (model, Places(file: file, marks: reader.marks))
    }

    /// Where the entities and fields of a parsed file are.
    public struct Places: Sendable {
        /// The file's name as it was given to ``parsePlaced(_:file:)``.
        public let file: String?
        let marks: Marks

        /// The line and column of a field's name (an attribute or a relationship) of `entity`.
        public func place(entity: String, field: String) -> (line: Int, column: Int)? {
            for section in ["attributes", "relationships"] {
                if let mark = marks.byField["entities.\(entity).\(section).\(field)"] { return mark }
            }
            return nil
        }
    }

    private static func syntaxError(_ error: YamlError, file: String?) -> ModelFileError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let message = context.map { "\(problem) (\($0.text) at \($0.mark.line):\($0.mark.column))" } ?? problem
            return ModelFileError(file: file, line: mark.line, column: mark.column, field: "", message: "not valid YAML: \(message)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ModelFileError(
                file: file, line: context.mark.line, column: context.mark.column, field: "",
                message: "a key appears twice in one mapping: \(duplicates.sorted().joined(separator: ", "))")
        case .reader(let problem, _, _, _):
            return ModelFileError(file: file, line: 1, column: 1, field: "", message: "not readable as YAML: \(problem)")
        default:
            return ModelFileError(file: file, line: 1, column: 1, field: "", message: "not valid YAML: \(error)")
        }
    }

    /// Where each part of a parsed file was, for errors found after reading (an identity that names no field).
    struct Marks: Sendable {
        var byField: [String: (line: Int, column: Int)] = [:]

        func at(_ field: String) -> (line: Int, column: Int) {
            var path = field
            while !path.isEmpty {
                if let mark = byField[path] { return mark }
                guard let dot = path.lastIndex(of: ".") else { break }
                path = String(path[..<dot])
            }
            return (1, 1)
        }
    }

    /// Reads nodes into values, remembering where each field was.
    private struct Reader {
        let file: String?
        var marks = Marks()

        init(file: String?) { self.file = file }

        func error(_ node: Node?, _ field: String, _ message: String) -> ModelFileError {
            let mark = node?.mark
            return ModelFileError(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1, field: field, message: message)
        }

        mutating func note(_ node: Node, _ field: String) {
            if let mark = node.mark { marks.byField[field] = (mark.line, mark.column) }
        }

        /// The pairs of a mapping, keys as strings, refusing keys outside `allowed`.
        func mapping(_ node: Node, _ field: String, allowed: [String]? = nil) throws(ModelFileError) -> [(String, Node, Node)] {
            guard case .mapping(let mapping) = node else {
                throw error(node, field, "expected a mapping (name: value lines), found \(describe(node))")
            }
            var pairs: [(String, Node, Node)] = []
            for (key, value) in mapping {
                guard case .scalar(let scalar) = key else { throw error(key, field, "a key must be a plain name") }
                if let allowed, !allowed.contains(scalar.string) {
                    throw error(
                        key, field.isEmpty ? scalar.string : "\(field).\(scalar.string)",
                        "unknown field '\(scalar.string)' (expected one of: \(allowed.joined(separator: ", ")))")
                }
                pairs.append((scalar.string, key, value))
            }
            return pairs
        }

        func string(_ node: Node, _ field: String) throws(ModelFileError) -> String {
            guard case .scalar(let scalar) = node, !node.isPlainNull else {
                throw error(node, field, "expected a name or text, found \(describe(node))")
            }
            return scalar.string
        }

        func bool(_ node: Node, _ field: String) throws(ModelFileError) -> Bool {
            guard case .scalar = node, let value = node.plainBool else {
                throw error(node, field, "expected true or false, found \(describe(node))")
            }
            return value
        }

        func strings(_ node: Node, _ field: String) throws(ModelFileError) -> [String] {
            switch node {
            case .scalar: return [try string(node, field)]
            case .sequence(let sequence):
                var result: [String] = []
                for element in sequence { result.append(try string(element, field)) }
                return result
            default: throw error(node, field, "expected a name or a list of names, found \(describe(node))")
            }
        }

        /// A key: one string split by the entity's delimiter, or a list of components taken as they are.
        func key(_ node: Node, _ field: String, delimiter: String) throws(ModelFileError) -> [String] {
            let components: [String]
            switch node {
            case .sequence: components = try strings(node, field)
            default:
                let text = try string(node, field)
                components = delimiter.isEmpty ? [text] : text.split(separator: delimiter, omittingEmptySubsequences: false).map(String.init)
            }
            if components.isEmpty || components.contains(where: \.isEmpty) {
                throw error(node, field, "a key cannot be empty, nor have an empty component")
            }
            return components
        }

        func describe(_ node: Node) -> String {
            switch node {
            case .scalar(let scalar): node.isPlainNull ? "nothing" : "'\(scalar.string)'"
            case .mapping: "a mapping"
            case .sequence: "a list"
            case .alias: "an alias"
            }
        }

        mutating func model(_ root: Node?) throws(ModelFileError) -> ModelFile {
            guard let root else { throw error(nil, "", "the file is empty: expected 'version' and 'entities'") }
            var version: Int?
            var entities: [Entity] = []
            var migrations: [Migration] = []
            var sawEntities = false
            for (name, key, value) in try mapping(root, "", allowed: ["version", "entities", "migrations"]) {
                switch name {
                case "migrations":
                    note(key, "migrations")
                    guard case .sequence(let sequence) = value else {
                        throw error(value, "migrations", "expected a list of migrations, found \(describe(value))")
                    }
                    for (position, element) in sequence.enumerated() {
                        migrations.append(try migration(element, "migrations.\(position)"))
                    }
                case "version":
                    guard case .scalar = value, let number = value.plainInt else {
                        throw error(value, "version", "expected a whole number, found \(describe(value))")
                    }
                    guard number == ModelFile.currentVersion else {
                        throw error(value, "version", "version \(number) is not one this library reads (it reads \(ModelFile.currentVersion))")
                    }
                    version = number
                default:
                    sawEntities = true
                    note(key, "entities")
                    for (entityName, entityKey, entityValue) in try mapping(value, "entities") {
                        entities.append(try entity(entityName, key: entityKey, entityValue))
                    }
                }
            }
            if version == nil { throw error(root, "version", "missing: the file must say 'version: \(ModelFile.currentVersion)'") }
            if !sawEntities || entities.isEmpty { throw error(root, "entities", "missing: the file declares no entity") }
            return ModelFile(entities: entities, migrations: migrations)
        }

        mutating func migration(_ node: Node, _ field: String) throws(ModelFileError) -> Migration {
            note(node, field)
            var name: String?
            var steps: [Step] = []
            for (key, keyNode, value) in try mapping(node, field, allowed: ["name", "steps"]) {
                let path = "\(field).\(key)"
                note(keyNode, path)
                if key == "name" {
                    name = try string(value, path)
                    continue
                }
                guard case .sequence(let sequence) = value else {
                    throw error(value, path, "expected a list of steps, found \(describe(value))")
                }
                for (position, element) in sequence.enumerated() { steps.append(try step(element, "\(path).\(position)")) }
            }
            guard let name else { throw error(node, "\(field).name", "missing: a migration needs a name, which the store records") }
            return Migration(name: name, steps: steps)
        }

        mutating func step(_ node: Node, _ field: String) throws(ModelFileError) -> Step {
            note(node, field)
            let kinds = ["renameEntity", "renameAttribute", "changeIdentity", "sql"]
            let pairs = try mapping(node, field, allowed: kinds)
            guard pairs.count == 1, let (kind, _, value) = pairs.first else {
                throw error(node, field, "a step is one of \(kinds.joined(separator: ", ")), with its details")
            }
            let path = "\(field).\(kind)"
            func arguments(_ names: [String]) throws(ModelFileError) -> [String: String] {
                var found: [String: String] = [:]
                for (name, _, argument) in try mapping(value, path, allowed: names) { found[name] = try string(argument, "\(path).\(name)") }
                for name in names where found[name] == nil {
                    throw error(value, "\(path).\(name)", "missing: \(kind) needs \(names.joined(separator: ", "))")
                }
                return found
            }
            switch kind {
            case "renameEntity":
                let found = try arguments(["from", "to"])
                return .renameEntity(from: found["from"]!, to: found["to"]!)
            case "renameAttribute":
                let found = try arguments(["entity", "from", "to"])
                return .renameAttribute(entity: found["entity"]!, from: found["from"]!, to: found["to"]!)
            case "changeIdentity":
                return .changeIdentity(entity: try arguments(["entity"])["entity"]!)
            default:
                return .sql(try string(value, path))
            }
        }

        mutating func entity(_ name: String, key: Node, _ node: Node) throws(ModelFileError) -> Entity {
            let field = "entities.\(name)"
            note(key, field)
            var entity = Entity(name: name)
            let pairs = try mapping(node, field, allowed: ["identity", "keyDelimiter", "attributes", "relationships", "indexes"])
            // The delimiter first: keys below are split by it.
            if let (_, _, value) = pairs.first(where: { $0.0 == "keyDelimiter" }) {
                entity.keyDelimiter = try string(value, "\(field).keyDelimiter")
            }
            for (name, key, value) in pairs {
                let path = "\(field).\(name)"
                note(key, path)
                switch name {
                case "identity":
                    entity.identity = try strings(value, path)
                    note(value, path)
                case "attributes":
                    for (attributeName, attributeKey, attributeValue) in try mapping(value, path) {
                        entity.attributes.append(
                            try attribute(attributeName, key: attributeKey, attributeValue, "\(path).\(attributeName)", entity.keyDelimiter))
                    }
                case "relationships":
                    for (relationshipName, relationshipKey, relationshipValue) in try mapping(value, path) {
                        entity.relationships.append(
                            try relationship(
                                relationshipName, key: relationshipKey, relationshipValue, "\(path).\(relationshipName)",
                                entity.keyDelimiter))
                    }
                case "indexes":
                    guard case .sequence(let sequence) = value else {
                        throw error(value, path, "expected a list of indexes, found \(describe(value))")
                    }
                    for (position, element) in sequence.enumerated() {
                        entity.indexes.append(try index(element, "\(path).\(position)"))
                    }
                default: break
                }
            }
            return entity
        }

        mutating func attribute(_ name: String, key: Node, _ node: Node, _ field: String, _ delimiter: String) throws(ModelFileError) -> Attribute {
            note(key, field)
            var typeName: String
            var optional = false
            var format: DateFormat?
            var keyPath: [String]?
            var defaultValue: DefaultValue?
            var typeNode = node
            switch node {
            case .scalar:
                typeName = try string(node, field)
            case .mapping:
                guard let type = try mapping(node, field).first(where: { $0.0 == "type" }) else {
                    throw error(node, field, "missing 'type' (one of: \(AttributeKind.names.joined(separator: ", ")))")
                }
                typeName = try string(type.2, "\(field).type")
                typeNode = type.2
                for (option, optionKey, value) in try mapping(node, field, allowed: ["type", "optional", "format", "key", "default"]) {
                    let path = "\(field).\(option)"
                    note(optionKey, path)
                    switch option {
                    case "optional": optional = try bool(value, path)
                    case "format":
                        let text = try string(value, path)
                        guard let parsed = DateFormat(rawValue: text) else {
                            throw error(value, path, "unknown date format '\(text)' (expected one of: \(DateFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
                        }
                        format = parsed
                    case "key": keyPath = try self.key(value, path, delimiter: delimiter)
                    case "default": defaultValue = try self.defaultValue(value, path)
                    default: break
                    }
                }
            default:
                throw error(node, field, "expected a type name or a mapping with 'type', found \(describe(node))")
            }
            if typeName.hasSuffix("?") {
                typeName.removeLast()
                optional = true
            }
            guard let type = AttributeKind(name: typeName, format: format) else {
                throw error(typeNode, field, "unknown type '\(typeName)' (types: \(AttributeKind.names.joined(separator: ", ")))")
            }
            if format != nil, case .date = type {} else if format != nil {
                throw error(node, "\(field).format", "'format' is for date attributes only, and this one is \(typeName)")
            }
            return Attribute(name: name, type: type, isOptional: optional, key: keyPath, defaultValue: defaultValue)
        }

        func defaultValue(_ node: Node, _ field: String) throws(ModelFileError) -> DefaultValue {
            guard case .scalar(let scalar) = node else { throw error(node, field, "expected a single value, found \(describe(node))") }
            if scalar.style == .plain {
                if let value = node.plainBool { return .bool(value) }
                if let value = Int64(scalar.string) { return .integer(value) }
                if let value = node.plainDouble { return .double(value) }
                if node.isPlainNull { throw error(node, field, "a default cannot be null: leave it out, and make the attribute optional") }
            }
            return .string(scalar.string)
        }

        mutating func relationship(_ name: String, key: Node, _ node: Node, _ field: String, _ delimiter: String) throws(ModelFileError) -> Relationship {
            note(key, field)
            switch node {
            case .scalar:
                return Relationship(name: name, destination: try string(node, field))
            case .sequence(let sequence):
                // `[Label]`: to-many, unordered.
                guard sequence.count == 1 else {
                    throw error(node, field, "a to-many relationship written as a list names one entity: [Label]")
                }
                return Relationship(name: name, destination: try string(sequence[0], field), isToMany: true)
            case .mapping:
                var relationship = Relationship(name: name, destination: "")
                var sawDestination = false
                for (option, optionKey, value) in try mapping(
                    node, field, allowed: ["to", "many", "ordered", "inverse", "deleteRule", "references", "key"])
                {
                    let path = "\(field).\(option)"
                    note(optionKey, path)
                    switch option {
                    case "to":
                        relationship.destination = try string(value, path)
                        sawDestination = true
                    case "many": relationship.isToMany = try bool(value, path)
                    case "ordered": relationship.isOrdered = try bool(value, path)
                    case "inverse": relationship.inverse = try string(value, path)
                    case "deleteRule":
                        let text = try string(value, path)
                        guard let rule = DeleteRule(rawValue: text) else {
                            throw error(value, path, "unknown delete rule '\(text)' (expected one of: \(DeleteRule.allCases.map(\.rawValue).joined(separator: ", ")))")
                        }
                        relationship.deleteRule = rule
                    case "references":
                        let text = try string(value, path)
                        guard let policy = UnknownReferences(rawValue: text) else {
                            throw error(value, path, "unknown reference policy '\(text)' (expected one of: \(UnknownReferences.allCases.map(\.rawValue).joined(separator: ", ")))")
                        }
                        relationship.unknownReferences = policy
                    case "key": relationship.key = try self.key(value, path, delimiter: delimiter)
                    default: break
                    }
                }
                guard sawDestination else { throw error(node, field, "missing 'to': the destination entity") }
                if relationship.isOrdered && !relationship.isToMany {
                    throw error(node, "\(field).ordered", "only a to-many relationship ('many: true') is ordered")
                }
                return relationship
            default:
                throw error(node, field, "expected an entity name, [Entity], or a mapping with 'to', found \(describe(node))")
            }
        }

        mutating func index(_ node: Node, _ field: String) throws(ModelFileError) -> Index {
            note(node, field)
            switch node {
            case .sequence, .scalar: return Index(fields: try strings(node, field))
            case .mapping:
                var index = Index(fields: [])
                for (option, _, value) in try mapping(node, field, allowed: ["fields", "unique"]) {
                    switch option {
                    case "fields": index.fields = try strings(value, "\(field).fields")
                    default: index.isUnique = try bool(value, "\(field).unique")
                    }
                }
                if index.fields.isEmpty { throw error(node, field, "an index needs 'fields'") }
                return index
            default:
                throw error(node, field, "expected a list of field names, found \(describe(node))")
            }
        }
    }
}

/// The types of plain (unquoted) scalars, as YAML's core schema and Yams' default resolver read them, without its
/// regular expressions (see `parsePlaced`); a quoted scalar is always a string.
extension Node {
    private var plainText: String? {
        guard case .scalar(let scalar) = self, scalar.style == .plain || scalar.style == .any else { return nil }
        return scalar.string
    }

    var isPlainNull: Bool {
        guard let text = plainText else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(text)
    }

    var plainBool: Bool? {
        switch plainText {
        case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON": true
        case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF": false
        default: nil
        }
    }

    var plainInt: Int? {
        guard var text = plainText else { return nil }
        if text.hasPrefix("+") { text.removeFirst() }
        return Int(text)
    }

    var plainDouble: Double? {
        guard let text = plainText, !text.isEmpty else { return nil }
        switch text {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .infinity
        case "-.inf", "-.Inf", "-.INF": return -.infinity
        case ".nan", ".NaN", ".NAN": return .nan
        default: break
        }
        // Digits, a point, an exponent and underscores between digits: not Double's "inf", "nan" or hexadecimal.
        guard text.contains(where: \.isNumber),
            text.allSatisfy({ $0.isASCII && ($0.isNumber || "+-._eE".contains($0)) })
        else { return nil }
        return Double(String(text.filter { $0 != "_" }))
    }
}
