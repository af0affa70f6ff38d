import CodableStoreCore

extension ModelFile {
    /// The model file of compiled entities (`@Entity` classes): the same entities, fields, identities, JSON keys,
    /// relationships with their inverses (declared or paired by the store), delete rules, reference policies and
    /// indexes. `dateFormat` is how their dates are read: a compiled model leaves it to the decoder's
    /// `dateDecodingStrategy`, a model file says it per attribute.
    ///
    /// Throws for what a model file cannot say: an attribute of a type of the application's own (a custom
    /// `AttributeValue`), unsigned 64-bit integers, a field left out of `CodingKeys`, custom decoding.
    public init(compiled types: [any EntityObject.Type], dateFormat: DateFormat = .iso8601) throws(ModelFileError) {
        let schema: Schema
        do {
            schema = try Schema(entities: types)
        } catch {
            throw ModelFileError(file: nil, line: 0, column: 0, field: "", message: "the entities do not form a model: \(error)")
        }
        var entities: [Entity] = []
        for mapping in schema.mappings {
            let description = mapping.description
            let path = "entities.\(mapping.name)"
            func fail(_ field: String, _ message: String) -> ModelFileError {
                ModelFileError(file: nil, line: 0, column: 0, field: "\(path).\(field)", message: message)
            }
            if !mapping.decodesPlainly {
                throw fail(
                    "", "\(mapping.name) decodes with code of its own (EntityCustomDecoding or prepareForDecoding), which a model file cannot hold")
            }
            var entity = Entity(name: mapping.name)
            entity.identity = description.identity.map { description.fields[$0].name }
            for attribute in description.attributes {
                guard let key = description.codingKeyPaths[attribute.index] else {
                    throw fail("attributes.\(attribute.name)", "left out of CodingKeys: a model file decodes every field it has")
                }
                guard let kind = Self.kind(of: attribute.type, dateFormat: dateFormat) else {
                    throw fail(
                        "attributes.\(attribute.name)",
                        "its type \(attribute.type.name) has no model-file type (types: \(AttributeKind.names.joined(separator: ", ")))")
                }
                entity.attributes.append(
                    Attribute(
                        name: attribute.name, type: kind, isOptional: attribute.isOptional, key: key,
                        defaultValue: attribute.defaultValue.flatMap { Self.defaultValue($0, kind) }))
            }
            for relationship in description.relationships {
                guard let key = description.codingKeyPaths[relationship.index] else {
                    throw fail("relationships.\(relationship.name)", "left out of CodingKeys: a model file decodes every field it has")
                }
                guard let resolved = mapping.relationships[relationship.index] else { continue }
                let destination = schema.mappings[resolved.destination]
                let rule: DeleteRule =
                    switch description.deleteRules[relationship.index] ?? .nullify {
                    case .nullify: .nullify
                    case .cascade: .cascade
                    case .deny: .deny
                    }
                let policy: UnknownReferences? =
                    switch mapping.referencePolicies[relationship.index] {
                    case .stub?: .stub
                    case .ignore?: .ignore
                    case .deferred?: .deferred
                    case nil: nil
                    }
                entity.relationships.append(
                    Relationship(
                        name: relationship.name, destination: destination.name, isToMany: relationship.isToMany,
                        isOrdered: relationship.isOrdered,
                        inverse: resolved.inverse.map { destination.description.fields[$0].name }, deleteRule: rule,
                        unknownReferences: policy, key: key))
            }
            entity.indexes = description.indexes.map { index in
                Index(fields: index.fields.map { description.fields[$0].name }, isUnique: index.isUnique)
            }
            entities.append(entity)
        }
        self.init(entities: entities)
        try validate()
    }

    private static func kind(of type: AttributeType, dateFormat: DateFormat) -> AttributeKind? {
        switch type {
        case .integer: .integer
        case .double, AttributeType(name: "Float", affinity: "REAL"): .double
        case .bool: .bool
        case .string: .string
        case .date: .date(dateFormat)
        case .decimal: .decimal
        case .uuid: .uuid
        case .url: .url
        case .data: .data
        case .json: .json
        default: nil
        }
    }

    /// A stored default as the file writes it, for the attribute's type.
    private static func defaultValue(_ value: DatabaseValue, _ kind: AttributeKind) -> DefaultValue? {
        switch (value, kind) {
        case (.integer(let number), .bool): .bool(number != 0)
        case (.integer(let number), _): .integer(number)
        case (.real(let number), .date(.iso8601)): .string(ISO8601.string(secondsSince1970: number))
        case (.real(let number), .date(.milliseconds)): .double(number * 1000)
        case (.real(let number), _): .double(number)
        case (.text(let text), _): .string(text)
        case (.blob, _), (.null, _): nil
        }
    }
}
