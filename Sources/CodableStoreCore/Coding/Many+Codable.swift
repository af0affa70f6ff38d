extension Many: Decodable {
    /// Decodes the entities of a JSON array by upsert, in one batch: each element is an entity's JSON object or
    /// a bare identity (`[1, {"id": 2, …}]`), and every identity is resolved with one query per entity.
    ///
    /// ```swift
    /// let issues = try StoreDecoder().decode(Many<Issue>.self, from: #"[{"id": 1, "title": "A"}, 2]"#, into: context)
    /// ```
    /// Under ``StoreDecoder``, directly. Under Foundation's `JSONDecoder` (or another decoder), with a
    /// ``ContextReference`` in `userInfo[.codableStoreContext]`: the JSON is captured first, then decoded with the
    /// same semantics (slower).
    ///
    /// - Throws: `DecodingError` when the value is not an array, or an element does not decode (with its coding
    ///   path); `DecodingError.dataCorrupted` under another decoder without a ``ContextReference``.
    public init(from decoder: any Decoder) throws {
        if let handle = decoder as? any EntityDecodingHandle {
            array = try handle.decodeEntityArray(Element.self)
            return
        }
        array = try StoreDecoderImpl.forForeignDecoder(decoder, decoding: "Many<\(Element.self)>").decodeEntityArray(Element.self)
    }
}

extension Many: Encodable {
    /// Encodes the entities as a JSON array, in order: each one the JSON object ``StoreEncoder`` writes for it.
    ///
    /// ```swift
    /// struct Export: Encodable { let issues: Many<Issue>; let total: Int }
    /// let json = try StoreEncoder().encode(Export(issues: Many(issues), total: issues.count))
    /// // {"issues":[{"id":1,"title":"A","user":{"id":7,"login":"ada"}}],"total":1}
    /// let same = try JSONEncoder().encode(Export(issues: Many(issues), total: issues.count))
    /// ```
    /// Encoding shape: an unkeyed container (a JSON array) with one element per object, the shape ``init(from:)``
    /// reads, so decoding the output yields the same store. Each object is a JSON object of its fields' coding keys
    /// (key path keys rebuilt as nested objects) and its relationships (the way back left out), with the options of
    /// the ``StoreEncoder`` in use. Under another encoder (Foundation's `JSONEncoder`), relationships are nested
    /// objects and nil values `null`, as ``StoreEncoder``'s defaults are, and dates, data and keys follow that
    /// encoder's own strategies.
    ///
    /// - Note: Entities themselves are not `Encodable` (an `@Entity` class is `Decodable` only, so that it can be
    ///   decoded by upsert): put them in a `Many` (or a ``One``) inside your `Encodable` types.
    /// - Throws: `EncodingError.invalidValue` for an object not held by a context (encode objects inside
    ///   `store.read` or `store.write`), and the encoder's errors.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for element in array { try container.encode(EntityEncodingBox(object: element, via: nil)) }
    }
}

extension One: Decodable {
    /// Decodes one entity by upsert, from its JSON object or a bare identity.
    ///
    /// ```swift
    /// let decoder = JSONDecoder()
    /// decoder.userInfo[.codableStoreContext] = ContextReference(context)
    /// let issue = try decoder.decode(One<Issue>.self, from: #"{"id": 1, "title": "A"}"#.data(using: .utf8)!).object
    /// ```
    /// - Throws: `DecodingError` when the value does not decode (with its coding path);
    ///   `DecodingError.dataCorrupted` under a decoder other than ``StoreDecoder`` without a ``ContextReference``.
    public init(from decoder: any Decoder) throws {
        if let handle = decoder as? any EntityDecodingHandle {
            object = try handle.decodeOneEntity(Element.self)
            return
        }
        object = try StoreDecoderImpl.forForeignDecoder(decoder, decoding: "One<\(Element.self)>").decodeOneEntity(Element.self)
    }
}

extension One: Encodable {
    /// Encodes the entity as the JSON object ``StoreEncoder`` writes for it.
    ///
    /// ```swift
    /// struct Webhook: Encodable { let action: String; let issue: One<Issue> }
    /// let json = try StoreEncoder().encode(Webhook(action: "opened", issue: One(issue)))
    /// // {"action":"opened","issue":{"id":1,"title":"A",…}}
    /// ```
    /// Encoding shape: the entity's JSON object, as in ``Many/encode(to:)`` (the shape ``init(from:)`` reads), with
    /// the options of the ``StoreEncoder`` in use, or its defaults under another encoder.
    ///
    /// - Throws: `EncodingError.invalidValue` when the object is not held by a context, and the encoder's errors.
    public func encode(to encoder: any Encoder) throws {
        try EntityEncodingBox(object: object, via: nil).encode(to: encoder)
    }
}

extension StoreDecoderImpl {
    /// A store decoder over the value a foreign decoder (`JSONDecoder`) is on, for the context of the
    /// ``ContextReference`` in its user info: the value is captured as JSON, then decoded from its own tape.
    static func forForeignDecoder(_ decoder: any Decoder, decoding what: String) throws -> StoreDecoderImpl {
        guard let reference = decoder.userInfo[.codableStoreContext] as? ContextReference else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "\(what) upserts into a store context: decode it with StoreDecoder, or put a ContextReference in userInfo[.codableStoreContext]"))
        }
        let tree = try JSONValue(from: decoder)
        var path = CodingPathNode.root
        for key in decoder.codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") { path = path.appending(index: index) } else { path = path.appending(key.stringValue) }
        }
        let session = DecodingSession(context: reference.context, options: reference.options)
        let tape = try JSONTape.parse(tree.jsonBytes())
        return StoreDecoderImpl(tape: tape, node: tape.root, path: path, session: session)
    }
}

extension Many: EntityCollectionDecodable {
    static func decodeEntities(from handle: any EntityArrayDecoding) throws -> Many<Element> {
        Many(try handle.decodeEntityArray(Element.self))
    }
}

/// Entities decoded by a foreign decoder: explains how to decode them instead.
public enum _$EntityDecoding {
    /// The error `init(from:)` of an entity throws: an entity is upserted into a context, which a plain
    /// `Decoder` cannot do.
    public static func unsupportedDecoder(_ type: Any.Type, _ decoder: any Decoder) -> any Error {
        DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "\(type) is an entity: decode it with StoreDecoder (upsert needs the store context); with JSONDecoder, decode One<\(type)> or Many<\(type)> with a ContextReference in userInfo[.codableStoreContext]"))
    }
}
