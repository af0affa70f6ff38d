/// An array of entities decoded in one batch: every identity in it is resolved with one query per entity.
///
/// Use it like an array, and inside your own `Decodable` types:
/// ```swift
/// struct Page: Decodable {
///     let results: Many<Issue>
///     let next: URL?
/// }
/// let page = try StoreDecoder().decode(Page.self, from: data, into: context)
/// ```
/// Encoding shape: a JSON array of the entities. `Many` also decodes under Foundation's `JSONDecoder` when
/// `userInfo[.codableStoreContext]` holds a ``ContextReference`` (the JSON is captured first, then decoded
/// with the same semantics; slower).
public struct Many<Element: EntityObject>: RandomAccessCollection, Decodable {
    public private(set) var elements: [Element]

    public init(_ elements: [Element] = []) {
        self.elements = elements
    }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(position: Int) -> Element { elements[position] }

    public init(from decoder: any Decoder) throws {
        if let handle = decoder as? any EntityDecodingHandle {
            elements = try handle.decodeEntityArray(Element.self)
            return
        }
        elements = try StoreDecoderImpl.forForeignDecoder(decoder, decoding: "Many<\(Element.self)>").decodeEntityArray(Element.self)
    }
}

/// One entity decoded by upsert: the stored object with the JSON applied, or a new one.
///
/// ``StoreDecoder`` decodes an entity type directly; `One` is for Foundation's `JSONDecoder` (and other
/// decoders), whose `init(from:)` would have to return a stored object, which a class initializer cannot do.
/// With a ``ContextReference`` in `userInfo[.codableStoreContext]`, it upserts into that context with the same
/// semantics (the JSON is captured first, then decoded; slower). Use ``Many`` for arrays.
/// ```swift
/// struct Webhook: Decodable {
///     let action: String
///     let issue: One<Issue>
/// }
/// let decoder = JSONDecoder()
/// decoder.userInfo[.codableStoreContext] = ContextReference(context)
/// let event = try decoder.decode(Webhook.self, from: body)
/// event.issue.object.title
/// ```
public struct One<Element: EntityObject>: Decodable {
    public let object: Element

    public init(_ object: Element) {
        self.object = object
    }

    public init(from decoder: any Decoder) throws {
        if let handle = decoder as? any EntityDecodingHandle {
            object = try handle.decodeOneEntity(Element.self)
            return
        }
        object = try StoreDecoderImpl.forForeignDecoder(decoder, decoding: "One<\(Element.self)>").decodeOneEntity(Element.self)
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
