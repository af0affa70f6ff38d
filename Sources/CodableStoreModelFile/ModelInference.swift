import CodableStoreCore
import CodableStoreJSON
import Foundation

/// Infers a model file from the records of a dump, in one pass and bounded memory: feed it every record
/// (``add(_:)``), then ask for the ``model()``.
///
/// What it decides, from what it saw:
/// - **Entities.** The records are the root entity. A nested object (or an array of them) becomes an entity when it
///   has an identity: a key named like one (`id`, `uuid`, `node_id`, `key`, `guid`) that every such object has, whose
///   values are integers or strings, and that identifies: objects met again with the same value are the same object
///   (their other values agree, allowing for a few updated ones). Records without such a key may have a composite
///   identity: two keys that identify together (an event log's `stream` and `sequence`), judged on the first 10,000
///   records.
/// - **One entity for one shape.** Objects with an identity found at several places (GitHub's `user`, `assignee`,
///   `assignees[]`, `closed_by`) are one entity when they share the identity key and most of their keys; it is named
///   after the place where it was met most.
/// - **Relationships**: to-one for a nested entity, to-many for an array of them.
/// - **Everything else is attributes**: scalars by their values (integers, doubles, booleans, strings; ISO 8601
///   strings and epoch seconds or milliseconds under date-like names as dates; UUIDs), nested objects without
///   identity as key paths (`milestone.title` becomes `milestoneTitle`), down to ``Options/flatteningDepth``, past it
///   and for arrays of values or of objects without identity one `json` attribute.
/// - **Optionality**: an attribute is optional when it was missing or null in some object.
///
/// The file says what was seen in comments (counts, nulls, examples), so that a person can correct it. The same
/// records give the same file.
public struct ModelInference {
    public struct Options: Sendable {
        /// The root entity's name.
        public var rootName: String
        /// How deep nested objects without identity are flattened into key-path attributes; deeper ones are `json`.
        public var flatteningDepth: Int
        /// The key names an identity is looked for under, in order of preference.
        public var identityNames: [String]
        /// At most this many values per identity candidate are remembered for the evidence; past it, only values
        /// already remembered are checked. Bounds memory whatever the dump's size.
        public var evidenceLimit = 100_000

        public init(rootName: String = "Record", flatteningDepth: Int = 2, identityNames: [String] = ["id", "uuid", "node_id", "key", "guid"]) {
            self.rootName = rootName
            self.flatteningDepth = flatteningDepth
            self.identityNames = identityNames
        }
    }

    public let options: Options
    /// The records seen.
    public private(set) var recordCount = 0
    private var sites: [Site] = []
    private var siteIndex: [[String]: Int] = [:]

    /// How deep objects are looked into.
    static let maximumDepth = 8
    /// How many records composite identities are looked for in.
    static let compositeWindow = 10_000

    public init(options: Options = Options()) {
        self.options = options
        _ = site(at: [])
    }

    /// Looks at one record.
    public mutating func add(_ record: borrowing JSONRecord) {
        recordCount += 1
        let tape = record.tape
        guard tape.kind(of: tape.root) == .object else {
            sites[0].nonObjects += 1
            return
        }
        visit(tape, tape.root, site: 0, depth: 0)
    }

    // MARK: - Statistics

    /// Where objects were met: a path of keys from the record, `[]` after a key whose value was an array of them.
    final class Site {
        let path: [String]
        var objects = 0
        var nonObjects = 0
        var keys: [String] = []
        var fields: [String: Field] = [:]
        /// Per identity candidate (a key, or two joined by "\u{1}"): each value's fingerprint of the object.
        var evidence: [String: Evidence] = [:]

        init(path: [String]) { self.path = path }
    }

    final class Field {
        var present = 0
        var nulls = 0
        var strings = 0
        var integers = 0
        var floats = 0
        var bools = 0
        var objects = 0
        var arrays = 0
        var isoDates = 0
        var uuids = 0
        var integerMin = Int64.max
        var integerMax = Int64.min
        /// Arrays: how many elements were objects, and how many were values.
        var objectElements = 0
        var valueElements = 0
        var examples: [String] = []

        var scalarKinds: Int { (strings > 0 ? 1 : 0) + (integers + floats > 0 ? 1 : 0) + (bools > 0 ? 1 : 0) }

        /// Adds what `other` saw of the same key at another place of one entity.
        func absorb(_ other: Field) {
            present += other.present
            nulls += other.nulls
            strings += other.strings
            integers += other.integers
            floats += other.floats
            bools += other.bools
            objects += other.objects
            arrays += other.arrays
            isoDates += other.isoDates
            uuids += other.uuids
            integerMin = min(integerMin, other.integerMin)
            integerMax = max(integerMax, other.integerMax)
            objectElements += other.objectElements
            valueElements += other.valueElements
            for example in other.examples where examples.count < 2 && !examples.contains(example) { examples.append(example) }
        }
    }

    final class Evidence {
        var fingerprints: [String: UInt64] = [:]
        var repeats = 0
        var conflicts = 0
        var missing = 0
        /// Values met after the limit that were not among those remembered: new ones, as far as anyone can tell.
        var unremembered = 0
    }

    private mutating func site(at path: [String]) -> Int {
        if let index = siteIndex[path] { return index }
        sites.append(Site(path: path))
        siteIndex[path] = sites.count - 1
        return sites.count - 1
    }

    private mutating func visit(_ tape: JSONTape, _ node: JSONTape.Index, site index: Int, depth: Int) {
        let site = sites[index]
        site.objects += 1
        var scalars: [(String, JSONTape.Index)] = []
        for (keyNode, value) in tape.members(of: node) {
            guard let key = tape.string(at: keyNode) else { continue }
            let field: Field
            if let existing = site.fields[key] {
                field = existing
            } else {
                field = Field()
                site.fields[key] = field
                site.keys.append(key)
            }
            field.present += 1
            switch tape.kind(of: value) {
            case .null: field.nulls += 1
            case .bool:
                field.bools += 1
                scalars.append((key, value))
            case .number:
                if let number = try? tape.int64(at: value) {
                    field.integers += 1
                    field.integerMin = min(field.integerMin, number)
                    field.integerMax = max(field.integerMax, number)
                } else {
                    field.floats += 1
                }
                scalars.append((key, value))
                if field.examples.count < 2, let text = tape.number(at: value)?.text, !field.examples.contains(text) { field.examples.append(text) }
            case .string:
                field.strings += 1
                if tape.parseUTF8(at: value, { bytes in ISO8601.parse(bytes.assumingMemoryBound(to: UInt8.self)) }) != nil {
                    field.isoDates += 1
                } else if tape.withUTF8(at: value, { $0.count }) == 36, let text = tape.string(at: value), Self.isUUID(text) {
                    field.uuids += 1
                }
                scalars.append((key, value))
                if field.examples.count < 2, let text = tape.string(at: value), text.utf8.count <= 40 {
                    let quoted = "\"" + text + "\""
                    if !field.examples.contains(quoted) { field.examples.append(quoted) }
                }
            case .object:
                field.objects += 1
                if depth < Self.maximumDepth {
                    let child = self.site(at: site.path + [key])
                    visit(tape, value, site: child, depth: depth + 1)
                }
            case .array:
                field.arrays += 1
                var child: Int?
                for element in tape.elements(of: value) {
                    if tape.kind(of: element) == .object {
                        field.objectElements += 1
                        if depth < Self.maximumDepth {
                            if child == nil { child = self.site(at: site.path + [key + "[]"]) }
                            visit(tape, element, site: child!, depth: depth + 1)
                        }
                    } else {
                        field.valueElements += 1
                    }
                }
            }
        }
        collectEvidence(site, tape, scalars)
    }

    /// Remembers, per identity candidate, which object each value stood for (a fingerprint of the object's scalar
    /// values).
    private func collectEvidence(_ site: Site, _ tape: JSONTape, _ scalars: [(String, JSONTape.Index)]) {
        var hasher = Hasher()
        for (key, value) in scalars {
            hasher.combine(key)
            _ = tape.withUTF8(at: value) { hasher.combine(bytes: $0) }
            if let flag = tape.bool(at: value) { hasher.combine(flag) }
        }
        let fingerprint = UInt64(bitPattern: Int64(hasher.finalize()))
        func value(_ key: String) -> String? {
            guard let (_, node) = scalars.first(where: { $0.0 == key }) else { return nil }
            switch tape.kind(of: node) {
            // As text: an id that is a number in one place and a string in another is one id.
            case .string: return tape.string(at: node)
            case .number: return (try? tape.int64(at: node)).map { String($0) }
            default: return nil
            }
        }
        func record(_ candidate: String, _ text: String?) {
            let evidence = site.evidence[candidate] ?? Evidence()
            site.evidence[candidate] = evidence
            guard let text else {
                evidence.missing += 1
                return
            }
            if let seen = evidence.fingerprints[text] {
                evidence.repeats += 1
                if seen != fingerprint { evidence.conflicts += 1 }
            } else if evidence.fingerprints.count < options.evidenceLimit {
                evidence.fingerprints[text] = fingerprint
            } else {
                evidence.unremembered += 1
            }
        }
        for name in options.identityNames where site.fields[name] != nil || site.evidence[name] != nil {
            record(name, value(name))
        }
        // Composite candidates, for records only, and for the first of them: pairs of the first keys with integer or
        // string values (28 pairs a record; after `compositeWindow` records, the evidence is what it is).
        guard site.path.isEmpty, site.objects <= Self.compositeWindow else { return }
        let keys = site.keys.prefix(8).filter { key in
            guard let field = site.fields[key] else { return false }
            return field.floats == 0 && field.bools == 0 && field.objects == 0 && field.arrays == 0
        }
        for (position, first) in keys.enumerated() {
            for second in keys[(position + 1)...] {
                let pair = value(first).flatMap { a in value(second).map { a + "\u{1}" + $0 } }
                record(first + "\u{1}" + second, pair)
            }
        }
    }

    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (position, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(position) {
                if byte != UInt8(ascii: "-") { return false }
            } else if !(byte >= 48 && byte <= 57) && !(byte >= 97 && byte <= 102) && !(byte >= 65 && byte <= 70) {
                return false
            }
        }
        return true
    }
}

// MARK: - Decisions

extension ModelInference {
    /// The model the records seen so far stand for.
    public func model() -> ModelFile {
        // Identities, per site.
        var identities: [Int: [String]] = [:]
        for (index, site) in sites.enumerated() where site.objects > 0 {
            if let identity = identity(of: site) { identities[index] = identity }
        }
        // Entities: the records, then the nested sites with an identity, merged by identity and shape.
        var groups: [[Int]] = [[0]]
        var groupOfSite: [Int: Int] = [0: 0]
        for (index, site) in sites.enumerated() where index != 0 && identities[index] != nil {
            let keys = Set(site.keys)
            if let group = groups.indices.dropFirst().first(where: { group in
                let other = sites[groups[group][0]]
                let shared = keys.intersection(other.keys).count
                return identities[groups[group][0]] == identities[index]
                    && Double(shared) >= 0.6 * Double(keys.union(other.keys).count)
            }) {
                groups[group].append(index)
                groupOfSite[index] = group
            } else {
                groups.append([index])
                groupOfSite[index] = groups.count - 1
            }
        }
        // Names: the records' as asked; a group's after the place it was met most.
        var names: [String] = []
        var used: Set<String> = []
        for (position, group) in groups.enumerated() {
            let base =
                position == 0
                ? options.rootName
                : Self.typeName(ofPath: sites[group.max { sites[$0].objects < sites[$1].objects || (sites[$0].objects == sites[$1].objects && $0 > $1) }!].path)
            var name = base
            var suffix = 2
            while used.contains(name) {
                name = base + String(suffix)
                suffix += 1
            }
            used.insert(name)
            names.append(name)
        }
        var entities: [ModelFile.Entity] = []
        var bareIDs: Set<String> = []
        for (position, group) in groups.enumerated() {
            let groupSites = group.map { sites[$0] }
            var entity = ModelFile.Entity(name: names[position])
            var fieldNames: Set<String> = []
            func unique(_ base: String) -> String {
                var name = base
                var suffix = 2
                while fieldNames.contains(name) || name.isEmpty {
                    name = (base.isEmpty ? "field" : base) + String(suffix)
                    suffix += 1
                }
                fieldNames.insert(name)
                return name
            }
            let objects = groupSites.reduce(0) { $0 + $1.objects }
            addFields(
                of: groupSites, objects: objects, prefix: [], namePrefix: "", depth: 0, into: &entity, bareIDs: &bareIDs,
                unique: unique,
                entityOfSites: { paths in
                    let indexes = paths.compactMap { siteIndex[$0] }
                    guard !indexes.isEmpty, let group = groupOfSite[indexes[0]], group != 0,
                        indexes.allSatisfy({ groupOfSite[$0] == group })
                    else { return nil }
                    return names[group]
                },
                hasEntityBelow: { path in
                    sites.indices.contains { index in
                        index != 0 && groupOfSite[index] != nil && sites[index].path.count > path.count
                            && Array(sites[index].path.prefix(path.count)) == path
                    }
                })
            if let identity = identities[group[0]] {
                entity.identity = identity.map { key in
                    guard let position = entity.attributes.firstIndex(where: { $0.key == [key] }) else { return key }
                    // An id seen as numbers in one place and strings in another: one identity, kept as text.
                    if entity.attributes[position].type == .json {
                        entity.attributes[position].type = .string
                        entity.attributes[position].note = (entity.attributes[position].note ?? "")
                            .replacingOccurrences(of: "kept as JSON", with: "an identity: read as text (a number as its digits)")
                    }
                    return entity.attributes[position].name
                }
            }
            if position == 0 {
                entity.notes.append(
                    Self.counted(recordCount, "record") + (sites[0].nonObjects > 0 ? ", \(Self.grouped(sites[0].nonObjects)) of them not objects (left out)" : ""))
            } else {
                let places = groupSites.map { $0.path.joined(separator: ".") }
                entity.notes.append("met " + Self.counted(objects, "time") + " at \(places.joined(separator: ", "))")
            }
            if let identity = identities[group[0]] {
                let evidence = groupSites.compactMap { $0.evidence[identity.joined(separator: "\u{1}")] }
                let distinct = Set(evidence.flatMap { $0.fingerprints.keys }).count
                let conflicts = evidence.reduce(0) { $0 + $1.conflicts }
                if evidence.contains(where: { $0.fingerprints.count >= options.evidenceLimit }) {
                    entity.notes.append(
                        "identity \(identity.joined(separator: " + ")): \(Self.grouped(distinct))+ distinct (counting stopped at \(Self.grouped(options.evidenceLimit)))")
                } else {
                    entity.notes.append(
                        "identity \(identity.joined(separator: " + ")): \(Self.grouped(distinct)) distinct, \(Self.grouped(max(0, objects - distinct))) repeated"
                            + (conflicts > 0 ? " (\(Self.grouped(conflicts)) with other values: updates)" : ""))
                }
            } else {
                entity.notes.append("no identity found: every record inserts a row (add `identity:` to upsert)")
            }
            entities.append(entity)
        }
        // A bare id of an object that is not stored makes a stub of it (the decoder's default policy): its other
        // attributes must be able to stay empty.
        for index in entities.indices where bareIDs.contains(entities[index].name) {
            var made = false
            for field in entities[index].attributes.indices
            where !entities[index].identity.contains(entities[index].attributes[field].name) && !entities[index].attributes[field].isOptional {
                entities[index].attributes[field].isOptional = true
                made = true
            }
            if made { entities[index].notes.append("referred to by bare id too: its attributes but the identity are optional, for the stubs") }
        }
        // Entities that no relationship of the records (or of what they reach) leads to hold nothing: left out.
        var reached: Set<String> = [entities[0].name]
        var frontier = [entities[0].name]
        while let name = frontier.popLast() {
            for relationship in entities.first(where: { $0.name == name })?.relationships ?? [] where reached.insert(relationship.destination).inserted {
                frontier.append(relationship.destination)
            }
        }
        return ModelFile(entities: entities.filter { reached.contains($0.name) })
    }

    /// The identity of the objects of a site: a candidate that every object has, with integer or string values,
    /// and that identifies them (objects met again with it are the same, but for a few updates).
    private func identity(of site: Site) -> [String]? {
        // Either repeated objects agree (a user embedded in many records), or the values are mostly unique and the
        // repeats are updates of one object (a record exported twice, changed in between).
        func qualifies(_ candidate: String, objects: Int? = nil) -> Bool {
            guard let evidence = site.evidence[candidate], evidence.missing == 0, !evidence.fingerprints.isEmpty else { return false }
            return evidence.conflicts * 5 <= evidence.repeats
                || (evidence.fingerprints.count + evidence.unremembered) * 5 >= (objects ?? site.objects) * 4
        }
        for name in options.identityNames where qualifies(name) {
            guard let field = site.fields[name], field.nulls == 0, field.present == site.objects, field.floats == 0,
                field.bools == 0
            else { continue }
            return [name]
        }
        guard site.path.isEmpty else { return nil }
        // Two keys together, one of them named like a key or a counter, best with repeats that agree.
        let identifying = ["id", "key", "seq", "sequence", "number", "version", "index", "offset"]
        func looksIdentifying(_ key: String) -> Bool {
            let lower = key.lowercased()
            return identifying.contains { lower == $0 || lower.hasSuffix("_" + $0) || lower.hasSuffix($0) }
        }
        var best: (pair: [String], repeats: Int)?
        let keys = Array(site.keys.prefix(8))
        for (position, first) in keys.enumerated() {
            for second in keys[(position + 1)...] {
                let candidate = first + "\u{1}" + second
                guard qualifies(candidate, objects: min(site.objects, Self.compositeWindow)), looksIdentifying(first) || looksIdentifying(second),
                    let evidence = site.evidence[candidate]
                else { continue }
                // A pair whose first key alone identifies is no composite identity.
                if qualifies(first) || qualifies(second) { continue }
                if best == nil || evidence.repeats > best!.repeats { best = ([first, second], evidence.repeats) }
            }
        }
        return best?.pair
    }

    /// The attributes and relationships of the objects of `sites` (one entity), the keys under `prefix`.
    private func addFields(
        of sites: [Site], objects: Int, noteObjects: Int? = nil, prefix: [String], namePrefix: String, depth: Int,
        into entity: inout ModelFile.Entity, bareIDs: inout Set<String>, unique: (String) -> String,
        entityOfSites: ([[String]]) -> String?, hasEntityBelow: ([String]) -> Bool
    ) {
        var keys: [String] = []
        for site in sites {
            for key in site.keys where !keys.contains(key) { keys.append(key) }
        }
        for key in keys {
            let field = Field()
            for site in sites {
                if let part = site.fields[key] { field.absorb(part) }
            }
            let path = prefix + [key]
            let name = namePrefix.isEmpty ? Self.fieldName(key) : namePrefix + Self.capitalized(Self.fieldName(key))
            // `relationships.author.data` holds the author: a wrapper's key adds nothing to a relationship's name.
            let relationshipName = !namePrefix.isEmpty && Self.genericKeys.contains(key.lowercased()) ? namePrefix : name
            let optional = field.present < objects || field.nulls > 0
            let seen = Self.seen(field, objects: noteObjects ?? objects)
            // Objects in some records and bare ids in others (an API that expands a reference only when asked):
            // a relationship, when the objects are an entity.
            if field.objects > 0, field.arrays == 0, field.bools == 0, field.floats == 0, field.scalarKinds == 1,
                let destination = entityOfSites(sites.map { $0.path + [key] })
            {
                bareIDs.insert(destination)
                entity.relationships.append(
                    ModelFile.Relationship(
                        name: unique(relationshipName), destination: destination, key: path,
                        note: seen + "; " + Self.counted(field.strings + field.integers, "bare id") + ", " + Self.counted(field.objects, "object")))
                continue
            }
            if field.objects > 0, field.scalarKinds == 0, field.arrays == 0 {
                let childPaths = sites.map { $0.path + [key] }
                if let destination = entityOfSites(childPaths) {
                    entity.relationships.append(
                        ModelFile.Relationship(name: unique(relationshipName), destination: destination, key: path, note: seen))
                } else if depth + 1 < options.flatteningDepth || childPaths.contains(where: hasEntityBelow) {
                    let children = childPaths.compactMap { siteIndex[$0].map { self.sites[$0] } }
                    let childObjects = children.reduce(0) { $0 + $1.objects }
                    var nested = ModelFile.Entity(name: entity.name)
                    addFields(
                        of: children, objects: childObjects, noteObjects: noteObjects ?? objects, prefix: path, namePrefix: name,
                        depth: depth + 1, into: &nested, bareIDs: &bareIDs, unique: unique, entityOfSites: entityOfSites,
                        hasEntityBelow: hasEntityBelow)
                    // Inside an object that may be missing or null, everything is optional.
                    for var attribute in nested.attributes {
                        if optional { attribute.isOptional = true }
                        entity.attributes.append(attribute)
                    }
                    entity.relationships += nested.relationships
                } else {
                    entity.attributes.append(
                        ModelFile.Attribute(name: unique(name), type: .json, isOptional: optional, key: path, note: seen + "; objects, kept as JSON"))
                }
                continue
            }
            if field.arrays > 0, field.objects == 0, field.scalarKinds == 0 {
                if field.objectElements > 0, let destination = entityOfSites(sites.map { $0.path + [key + "[]"] }) {
                    // Elements that are values are bare ids of the same entity.
                    if field.valueElements > 0 { bareIDs.insert(destination) }
                    entity.relationships.append(
                        ModelFile.Relationship(
                            name: unique(relationshipName), destination: destination, isToMany: true, key: path,
                            note: seen + (field.valueElements > 0 ? "; " + Self.counted(field.valueElements, "bare id") + ", " + Self.counted(field.objectElements, "object") : "")))
                } else {
                    entity.attributes.append(
                        ModelFile.Attribute(name: unique(name), type: .json, isOptional: optional, key: path, note: seen + "; arrays, kept as JSON"))
                }
                continue
            }
            let (type, why) = Self.type(of: field, key: key)
            entity.attributes.append(
                ModelFile.Attribute(name: unique(name), type: type, isOptional: optional, key: path, note: seen + (why.map { "; " + $0 } ?? "")))
        }
    }

    /// A scalar attribute's type, and what to tell about it.
    private static func type(of field: Field, key: String) -> (ModelFile.AttributeKind, String?) {
        if field.objects > 0 || field.arrays > 0 || field.scalarKinds > 1 {
            var kinds: [String] = []
            if field.strings > 0 { kinds.append("strings") }
            if field.integers + field.floats > 0 { kinds.append("numbers") }
            if field.bools > 0 { kinds.append("booleans") }
            if field.objects > 0 { kinds.append("objects") }
            if field.arrays > 0 { kinds.append("arrays") }
            return (.json, "mixed: \(kinds.joined(separator: ", ")), kept as JSON")
        }
        if field.bools > 0 { return (.bool, nil) }
        if field.strings > 0 {
            if field.isoDates == field.strings { return (.date(.iso8601), nil) }
            if field.uuids == field.strings { return (.uuid, nil) }
            return (.string, nil)
        }
        if field.floats > 0 { return (.double, nil) }
        if field.integers > 0 {
            if looksLikeDate(key) {
                if field.integerMin >= 100_000_000, field.integerMax < 10_000_000_000 { return (.date(.seconds), "epoch seconds") }
                if field.integerMin >= 100_000_000_000, field.integerMax < 10_000_000_000_000 {
                    return (.date(.milliseconds), "epoch milliseconds")
                }
            }
            return (.integer, nil)
        }
        return (.string, "always null: its type is a guess")
    }

    private static func looksLikeDate(_ key: String) -> Bool {
        let lower = key.lowercased()
        return ["_at", "at", "time", "date", "timestamp", "created", "updated", "ts"].contains { lower.hasSuffix($0) }
            && !lower.hasSuffix("format")
    }

    private static func counted(_ count: Int, _ noun: String) -> String { "\(grouped(count)) \(noun)\(count == 1 ? "" : "s")" }

    /// `1000000` → `1,000,000`.
    static func grouped(_ number: Int) -> String {
        let digits = String(number.magnitude)
        var result = ""
        for (position, digit) in digits.enumerated() {
            if position > 0, (digits.count - position) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return (number < 0 ? "-" : "") + result
    }

    private static func seen(_ field: Field, objects: Int) -> String {
        var parts: [String] = [field.present == objects ? "always present" : "in \(grouped(field.present)) of \(grouped(objects))"]
        if field.nulls > 0 { parts.append("null in \(grouped(field.nulls))") }
        if !field.examples.isEmpty { parts.append("e.g. " + field.examples.joined(separator: ", ")) }
        return parts.joined(separator: "; ")
    }

    /// `created_at` → `createdAt`, `node-id` → `nodeId`, `2fa` → `n2fa`.
    static func fieldName(_ key: String) -> String {
        var key = key
        if key.hasPrefix("+") { key = "plus" + key.dropFirst() } else if key.hasPrefix("-") { key = "minus" + key.dropFirst() }
        let words = key.split { !($0.isLetter || $0.isNumber) }.map(String.init)
        guard let first = words.first else { return "field" }
        var name = first.prefix(1).lowercased() + first.dropFirst()
        for word in words.dropFirst() { name += word.prefix(1).uppercased() + word.dropFirst() }
        if let initial = name.first, initial.isNumber { name = "n" + name }
        return name
    }

    /// Keys that name a wrapper rather than what it holds: an entity met under one is named after the key above.
    static let genericKeys: Set<String> = ["data", "node", "nodes", "item", "items", "value", "values", "attributes", "edges", "results", "records"]

    /// The name of the objects at `path`: its last key, or the one above it when the last is a wrapper's.
    static func typeName(ofPath path: [String]) -> String {
        let keys = path.map { $0.hasSuffix("[]") ? String($0.dropLast(2)) : $0 }
        if let last = keys.last, genericKeys.contains(last.lowercased()), keys.count >= 2 { return typeName(keys[keys.count - 2]) }
        return typeName(keys.last ?? "")
    }

    /// `closed_by` → `ClosedBy`, `labels` → `Label`, `categories` → `Category`.
    static func typeName(_ key: String) -> String {
        var word = key
        if word.hasSuffix("ies"), word.count > 3 {
            word = String(word.dropLast(3)) + "y"
        } else if word.hasSuffix("sses") || word.hasSuffix("xes") {
            word = String(word.dropLast(2))
        } else if word.hasSuffix("s"), !word.hasSuffix("ss"), word.count > 1 {
            word = String(word.dropLast())
        }
        return capitalized(fieldName(word))
    }

    static func capitalized(_ name: String) -> String { name.prefix(1).uppercased() + name.dropFirst() }
}
