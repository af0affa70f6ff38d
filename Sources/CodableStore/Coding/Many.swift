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
        guard let reference = decoder.userInfo[.codableStoreContext] as? ContextReference else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "Many<\(Element.self)> upserts into a store context: decode it with StoreDecoder, or put a ContextReference in userInfo[.codableStoreContext]"))
        }
        let tree = try JSONValue(from: decoder)
        var path = CodingPathNode.root
        for key in decoder.codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") { path = path.appending(index: index) } else { path = path.appending(key.stringValue) }
        }
        let session = DecodingSession(context: reference.context, options: reference.options)
        let tape = try JSONTape.parse(tree.jsonBytes())
        let impl = StoreDecoderImpl(source: JSONTapeView(tape: tape), node: tape.root, path: path, session: session)
        elements = try impl.decodeEntityArray(Element.self)
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
                debugDescription: "\(type) is an entity: decode it with StoreDecoder (upsert needs the store context); with JSONDecoder, decode Many<\(type)> with a ContextReference in userInfo[.codableStoreContext]"))
    }
}
