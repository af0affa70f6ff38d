/// An array of entities decoded in one batch: every identity in it is resolved with one query per entity.
///
/// Use it like an array, and inside your own `Codable` types:
/// ```swift
/// struct Page: Codable {
///     var results: Many<Issue>
///     let next: URL?
/// }
/// var page = try StoreDecoder().decode(Page.self, from: data, into: context)
/// page.results.append(try #require(try context.object(Issue.self, identity: 7)))
/// page.results[0] = other
/// let titles = page.results.map(\.title)
/// let again = try StoreEncoder().encode(page)     // {"results": [{"id": …, "title": …}, …], "next": …}
/// ```
/// `Many` is a `MutableCollection`, a `RangeReplaceableCollection` and a `RandomAccessCollection` with the
/// indices of its ``array`` (from 0), is built from an array literal (`let many: Many<Issue> = [a, b]`), and is
/// `Equatable` and `Hashable` as the array of its objects is: two `Many` are equal when they hold the same
/// objects in the same order (entities compare by identity, `===`, so the same row fetched in two contexts gives
/// two different objects).
///
/// Changing a `Many` changes the collection, not the store: to relate objects, assign a to-many relationship of
/// an entity; to store a new object, insert it into a context.
///
/// Decoding and encoding shape: a JSON array of the entities (see ``init(from:)`` and ``encode(to:)``).
///
/// ## Topics
///
/// ### Creating
/// - ``init()``
/// - ``init(_:)``
/// - ``init(arrayLiteral:)``
///
/// ### The objects
/// - ``array``
///
/// ### Coding
/// - ``init(from:)``
/// - ``encode(to:)``
public struct Many<Element: EntityObject> {
    /// The objects, in order: what the collection reads and changes.
    public var array: [Element]

    /// An empty collection.
    public init() {
        array = []
    }

    /// A collection of `array`'s objects, in its order.
    ///
    /// - Parameter array: The objects.
    public init(_ array: [Element]) {
        self.array = array
    }
}

/// One entity decoded by upsert: the stored object with the JSON applied, or a new one.
///
/// ``StoreDecoder`` decodes an entity type directly; `One` is for Foundation's `JSONDecoder` (and other
/// decoders), whose `init(from:)` would have to return a stored object, which a class initializer cannot do.
/// With a ``ContextReference`` in `userInfo[.codableStoreContext]`, it upserts into that context with the same
/// semantics (the JSON is captured first, then decoded; slower). Use ``Many`` for arrays.
/// ```swift
/// struct Webhook: Codable {
///     let action: String
///     let issue: One<Issue>
/// }
/// let decoder = JSONDecoder()
/// decoder.userInfo[.codableStoreContext] = ContextReference(context)
/// let event = try decoder.decode(Webhook.self, from: body)
/// event.issue.object.title
/// ```
/// `One` is `Equatable` and `Hashable` as its object is (by identity, `===`). Decoding and encoding shape: the
/// entity's JSON object (see ``init(from:)`` and ``encode(to:)``).
public struct One<Element: EntityObject> {
    /// The entity.
    public let object: Element

    /// The entity `object`, for encoding it inside a `Codable` type.
    public init(_ object: Element) {
        self.object = object
    }
}
