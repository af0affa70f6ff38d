import Foundation

extension Store {
    /// The store's contents as JSON that depends on the contents only: what golden files hold (the
    /// `CodableStoreTesting` library compares them) and what `codable-store export --stable` writes.
    ///
    /// ```json
    /// {
    ///   "Issue" : [
    ///     { "id" : 1, "labels" : [ 2, 3 ], "title" : "Crash on launch", "user" : 5 }
    ///   ],
    ///   "User" : [ … ]
    /// }
    /// ```
    ///
    /// One object whose keys are entity names; each holds the entity's objects as an array sorted by identity
    /// (an entity without identity: by the objects' JSON text). Each object is encoded as ``StoreEncoder`` encodes
    /// it, with its coding keys, sorted: nils as `null`, relationships as identities (destinations without identity
    /// nested), the members of unordered to-many relationships sorted by identity, dates in ISO 8601 (UTC, with
    /// fractional seconds when they have some), data in Base64. Output is pretty-printed (an empty array as `[]`, an
    /// empty object as `{}`). The same contents give the
    /// same bytes, whatever order they were written in (but for the order of nested destinations without identity,
    /// which is the order of their rows).
    ///
    /// - Parameter entities: the entities to export (the destinations of their relationships are written as
    ///   identities, not exported with them); `nil` for every entity of the store.
    /// - Throws: ``StoreError`` (`unknownEntity`) for an entity the store does not have.
    public func stableExport(of entities: [any EntityObject.Type]? = nil) throws -> Data {
        try read { context in try context.stableExport(of: entities) }
    }
}


extension Context {
    func stableExport(of entities: [any EntityObject.Type]?) throws -> Data {
        var mappings = try entities.map { types in try types.map { try model.mapping(for: $0) } } ?? model.mappings
        mappings.sort { $0.name < $1.name }
        let encoder = StoreEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.relationshipEncodingStrategy = .identities
        encoder.sortsUnorderedMembers = true
        var sections: [(name: String, objects: [EntityEncodingBox])] = []
        for mapping in mappings where !sections.contains(where: { $0.name == mapping.name }) {
            var objects: [any EntityObject] = []
            let statement = try connection.cached(storage.selectSQL(mapping) + " ORDER BY _pk")
            defer { statement.reset() }
            while try statement.step() { objects.append(try object(for: mapping, statement: statement)) }
            if mapping.description.identity.isEmpty {
                let texts = try objects.map { String(decoding: try encoder.encode(EntityEncodingBox(object: $0, via: nil)), as: UTF8.self) }
                objects = zip(texts, objects).sorted { $0.0 < $1.0 }.map(\.1)
            } else {
                objects = Self.inIdentityOrder(objects, mapping)
            }
            sections.append((mapping.name, objects.map { EntityEncodingBox(object: $0, via: nil) }))
        }
        return Self.collapsingEmptyContainers(try encoder.encode(ExportDocument(sections: sections)))
    }

    /// Pretty-printed JSON with each empty array and object written `[]` and `{}`: Foundation's pretty printer
    /// writes them over three lines (`[`, an empty line, `]`). Strings cannot hold a raw line break (JSON escapes
    /// it), so a bracket followed by only line breaks and spaces up to its closing bracket is an empty container.
    static func collapsingEmptyContainers(_ json: Data) -> Data {
        let bytes = [UInt8](json)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            output.append(byte)
            index += 1
            guard byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{"), index < bytes.count, bytes[index] == 0x0A else { continue }
            let closing = byte == UInt8(ascii: "[") ? UInt8(ascii: "]") : UInt8(ascii: "}")
            var end = index
            while end < bytes.count, bytes[end] == 0x0A || bytes[end] == 0x20 { end += 1 }
            if end < bytes.count, bytes[end] == closing {
                output.append(closing)
                index = end + 1
            }
        }
        return Data(output)
    }

    /// `objects` of one entity with an identity, sorted by their identity values (then by row id).
    static func inIdentityOrder(_ objects: [any EntityObject], _ mapping: EntitySchema) -> [any EntityObject] {
        let attributes = mapping.description.identity.compactMap { field -> AttributeDescription? in
            if case .attribute(let attribute) = mapping.description.fields[field] { attribute } else { nil }
        }
        // Decimals (text) sort by value, as the store's collation sorts them.
        let decimal = attributes.map { $0.type.name == AttributeType.decimal.name }
        let keyed = objects.map { object in (attributes.map { $0.value(of: object) }, object.entityState.rowID, object) }
        return keyed.sorted { left, right in
            for (position, (a, b)) in zip(left.0, right.0).enumerated() where a != b {
                if decimal[position], case .text(let x) = a, case .text(let y) = b {
                    let order = Array(x.utf8).withUnsafeBytes { x in Array(y.utf8).withUnsafeBytes { y in DecimalText.compare(x, y) } }
                    if order != 0 { return order < 0 }
                    continue
                }
                return a.precedes(b)
            }
            return left.1 < right.1
        }.map(\.2)
    }

    /// The export: one key per entity, in the encoder's key order.
    private struct ExportDocument: Encodable {
        let sections: [(name: String, objects: [EntityEncodingBox])]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: NameKey.self)
            for section in sections { try container.encode(section.objects, forKey: NameKey(stringValue: section.name)) }
        }

        struct NameKey: CodingKey {
            let stringValue: String
            init(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }
    }
}

extension DatabaseValue {
    /// An order of values for sorting exports: nulls, then numbers (integers and reals by value), then texts (by
    /// their UTF-8 bytes, as SQLite's `BINARY` collation), then blobs (by their bytes).
    func precedes(_ other: DatabaseValue) -> Bool {
        func rank(_ value: DatabaseValue) -> Int {
            switch value {
            case .null: 0
            case .integer, .real: 1
            case .text: 2
            case .blob: 3
            }
        }
        switch (self, other) {
        case (.integer(let a), .integer(let b)): return a < b
        case (.integer(let a), .real(let b)): return Double(a) < b
        case (.real(let a), .integer(let b)): return a < Double(b)
        case (.real(let a), .real(let b)): return a < b
        case (.text(let a), .text(let b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.blob(let a), .blob(let b)): return a.lexicographicallyPrecedes(b)
        default: return rank(self) < rank(other)
        }
    }
}
