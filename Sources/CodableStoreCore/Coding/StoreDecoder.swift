import Foundation

/// Decodes JSON straight into store-tracked entities, upserting them by identity.
///
/// ```swift
/// let decoder = StoreDecoder()
/// decoder.dateDecodingStrategy = .iso8601
/// try store.write { context in
///     let issues = try decoder.decode([Issue].self, from: data, into: context)
/// }
/// ```
///
/// The contract:
/// - An entity with an identity is looked up by it (in the context, then in the store) and updated in place;
///   otherwise it is inserted. An entity without identity is always inserted.
/// - Only keys present in the JSON are applied. `null` clears an optional attribute; `null` or a missing key
///   for a non-optional attribute of a new object is a `DecodingError` (unless the attribute has a default).
/// - Assigning an unchanged value does not mark the object changed, so re-importing the same data writes
///   nothing.
/// - Duplicates within one payload are one object, updated in payload order.
/// - Relationships accept nested objects (decoded and upserted), bare identities (`"country": 7`,
///   `"tags": [1, 2]`, composite ones as an object or an array of values), and mixes of both. `null` unlinks a
///   to-one or empties a to-many; `null` elements are skipped.
/// - Arrays of entities resolve all identities of the array (nested objects and bare references included)
///   with one query per entity, not one per element.
///
/// Errors are `DecodingError`s with the full coding path and swift-foundation's wording; store failures are
/// ``StoreError``s.
public final class StoreDecoder: @unchecked Sendable {
    // @unchecked: the options are plain values set before use, like JSONDecoder's; a decode call copies them.

    /// How JSON keys are matched with field keys.
    public enum KeyDecodingStrategy: Sendable {
        /// Keys are used as they are.
        case useDefaultKeys
        /// `snake_case` JSON keys match `camelCase` fields (`user_id` → `userId`), as JSONDecoder does.
        case convertFromSnakeCase
        /// A function from the coding path (ending with the JSON key) to the key to match.
        case custom(@Sendable ([any CodingKey]) -> any CodingKey)
    }

    /// How dates are read.
    public enum DateDecodingStrategy: @unchecked Sendable {
        // @unchecked: a DateFormatter handed over here must not be mutated afterwards.
        /// `Date`'s own decoding: seconds since 2001-01-01.
        case deferredToDate
        /// ISO 8601 with or without fractional seconds, with `Z` or an offset (`2015-06-05T09:52:26Z`,
        /// `2015-06-05T09:52:26.123+02:00`).
        case iso8601
        /// A number of seconds since 1970-01-01T00:00:00Z.
        case secondsSince1970
        /// A number of milliseconds since 1970-01-01T00:00:00Z.
        case millisecondsSince1970
        /// A string parsed by a formatter.
        case formatted(DateFormatter)
        /// Your own function.
        case custom(@Sendable (any Decoder) throws -> Date)
    }

    /// How `Data` is read.
    public enum DataDecodingStrategy: Sendable {
        /// Base64 text (the default, as JSONDecoder's).
        case base64
        /// `Data`'s own decoding: an array of bytes.
        case deferredToData
        /// Your own function.
        case custom(@Sendable (any Decoder) throws -> Data)
    }

    /// How non-finite floating-point values are read.
    public enum NonConformingFloatDecodingStrategy: Sendable {
        /// They are an error.
        case `throw`
        /// These strings stand for them.
        case convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String)
    }

    /// What a bare reference to an object that is not stored becomes. The decoder's policy applies to every
    /// relationship the model does not give one of its own (``EntityReferencePolicies``).
    public enum UnknownReferencePolicy: Sendable, Equatable {
        /// A new object holding only the identity (the destination's other non-optional attributes need
        /// default values).
        case stub
        /// Nothing: the reference is skipped.
        case ignore
        /// Kept, and linked when an object with that identity arrives later in the same write or import (a
        /// comment page that refers to issues of a later page). What never arrives is counted
        /// and listed (``Context/listUnresolvedReferences(limit:)``, `ImportReport/unresolvedReferenceList`), or
        /// is an error: at the end of each decode call (``StoreDecoder/failsOnUnresolvedReferences``), when you ask
        /// (``Context/requireResolvedReferences()``), or at the end of an import
        /// (`ImportOptions/failsOnUnresolvedReferences`). A to-many member arrives at the end of the list.
        /// Where no relationship holds the reference (a bare identity in an array of entities), it is ignored.
        case deferred
    }

    /// What a to-many array in JSON does to the relationship.
    public enum ToManyPolicy: Sendable {
        /// The array becomes the membership.
        case replace
        /// The array's objects are added to the membership.
        case append
    }

    public var keyDecodingStrategy: KeyDecodingStrategy = .useDefaultKeys
    public var dateDecodingStrategy: DateDecodingStrategy = .deferredToDate
    public var dataDecodingStrategy: DataDecodingStrategy = .base64
    public var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw
    public var unknownReferencePolicy: UnknownReferencePolicy = .stub
    public var toManyPolicy: ToManyPolicy = .replace
    /// Values your `init(from:)` implementations can read.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]
    /// From this size on (in bytes), a document whose top level is an array of entities (`[T]`, `Set<T>`,
    /// `Many<T>`) decoded into a context that holds no objects yet is parsed on a second thread while the
    /// records already parsed are decoded: about 35% less time on two cores, and no tape of the whole
    /// document in memory. The results, the errors and the context afterwards are the same as on one thread
    /// (a malformed document still changes nothing). `nil` keeps every decode on the calling thread.
    public var parallelDecodingThreshold: Int? = 512 * 1024
    /// Whether a decode call fails when a reference it kept under the ``UnknownReferencePolicy/deferred`` policy has
    /// not found its object by the time the call ends. Off by default: deferred references then wait for a later
    /// decode of the same write, and ``Context/unresolvedReferences`` counts what never arrives.
    ///
    /// ```swift
    /// let decoder = StoreDecoder()
    /// decoder.unknownReferencePolicy = .deferred
    /// decoder.failsOnUnresolvedReferences = true
    /// try store.write { context in
    ///     // The issues arrive after the comments that refer to them, in the same payload: fine.
    ///     _ = try decoder.decode(CommentThread.self, from: data, into: context)   // { comments, issues }
    /// }
    /// // UnresolvedReferencesError: 1 unresolved reference: Comment id = 7: issue → Issue id = 99 never arrived
    /// ```
    /// The check is per call (``decode(_:from:into:)-(_,Data,_)``, ``decodeAndSave(_:from:into:)``, …), over the
    /// references that call deferred: the payload must be complete by itself. When the references of one page may
    /// arrive in a later page of the same write, leave this off and call ``Context/requireResolvedReferences()`` once
    /// every page is decoded; an import checks at its end, with `ImportOptions/failsOnUnresolvedReferences` or this
    /// option (never per record). Not applied under Foundation's `JSONDecoder` (``ContextReference``), which has no
    /// end of call to check at: use ``Context/requireResolvedReferences()`` there too.
    ///
    /// A decode under this option runs in a savepoint, as ``Context/inSavepoint(_:)`` does: changes made before the
    /// call are saved first (into the write's transaction), and when the call throws (an ``UnresolvedReferencesError``
    /// listing each reference that never arrived, or any other error) the store and the context are as they were
    /// before it; the context then forgets the objects it held, as after a failed savepoint (objects you hold are
    /// detached: fetch what you need again). A malformed document still changes nothing: it is parsed first.
    public var failsOnUnresolvedReferences = false

    public init() {}

    package struct Options {
        package var keyDecodingStrategy: KeyDecodingStrategy
        package var dateDecodingStrategy: DateDecodingStrategy
        package var dataDecodingStrategy: DataDecodingStrategy
        package var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy
        package var unknownReferencePolicy: UnknownReferencePolicy
        package var toManyPolicy: ToManyPolicy
        var userInfo: [CodingUserInfoKey: any Sendable]
    }

    package var options: Options {
        Options(
            keyDecodingStrategy: keyDecodingStrategy, dateDecodingStrategy: dateDecodingStrategy,
            dataDecodingStrategy: dataDecodingStrategy,
            nonConformingFloatDecodingStrategy: nonConformingFloatDecodingStrategy,
            unknownReferencePolicy: unknownReferencePolicy, toManyPolicy: toManyPolicy, userInfo: userInfo)
    }

    /// Decodes a value (an entity, an array of entities, `Many<T>`, or any `Decodable` containing entities)
    /// from JSON, upserting the entities into `context`.
    ///
    /// - Throws: `DecodingError` for data that does not fit the types (with the coding path),
    ///   ``StoreError`` for store failures, and `JSONSyntaxError` (byte offset, line, column, snippet) for
    ///   malformed JSON. A malformed document changes nothing in the context. With
    ///   ``failsOnUnresolvedReferences``, ``UnresolvedReferencesError`` when a deferred reference did not arrive.
    ///
    /// The `Decoder` your types' `init(from:)` receive reads `data` in place (strings are not copied until
    /// asked for): keep values, not the decoder, past `init(from:)`. Using it after `decode` returned stops
    /// the program with a clear message rather than reading released memory.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data, into context: Context) throws -> T {
        if let threshold = parallelDecodingThreshold, data.count >= threshold,
            let collection = T.self as? any EntityCollectionDecodable.Type, context.isPristine,
            ParallelArrayDecoding.startsWithArray(data)
        {
            let parallel = ParallelArrayDecoding(data: data, session: DecodingSession(context: context, options: options))
            do {
                // A savepoint of ``failsOnUnresolvedReferences`` that a malformed document rolls back leaves the
                // context as it was: it held nothing.
                return try checkingReferences(in: context, savingAtEnd: false) { try collection.decodeEntities(from: parallel) as! T }
            } catch is ParallelArrayDecoding.Malformed {
                // Nothing was changed: the one-thread decode below throws the syntax error.
            }
        }
        // The whole document is parsed (strictly, with yajl) before anything is decoded, or saved before a savepoint
        // of ``failsOnUnresolvedReferences``: a malformed document changes nothing in the context.
        return try JSONTape.withDocumentTape(data) { tape in
            try checkingReferences(in: context, savingAtEnd: false) { try decode(type, from: tape, into: context) }
        }
    }

    /// Runs a decode call, under ``failsOnUnresolvedReferences`` in a savepoint that the references it deferred
    /// must all have found their objects by its end (see ``Context/failingOnUnresolvedReferences(savingAtEnd:_:)``).
    func checkingReferences<T>(in context: Context, savingAtEnd: Bool, _ decode: () throws -> T) throws -> T {
        guard failsOnUnresolvedReferences else { return try decode() }
        return try context.failingOnUnresolvedReferences(savingAtEnd: savingAtEnd, decode)
    }

    /// Decodes as ``decode(_:from:into:)-(_,Data,_)`` does, saves the changes into the context's transaction, and
    /// counts per entity what the decode inserted, updated and left unchanged, as `ImportReport/entities`
    /// does for an import.
    ///
    /// ```swift
    /// let (page, counts) = try decoder.decodeAndSave([Issue].self, from: data, into: context)
    /// counts["Issue"]   // EntityCounts(inserted: 3, updated: 1, unchanged: 26)
    /// ```
    /// Changes made before the call are saved first and not counted. Decoded on one thread. With
    /// ``failsOnUnresolvedReferences``, a deferred reference that did not arrive fails the call, and nothing of it is
    /// saved.
    ///
    /// - Throws: What ``decode(_:from:into:)-(_,Data,_)`` throws, and the store's error when saving fails.
    public func decodeAndSave<T: Decodable>(
        _ type: T.Type, from data: Data, into context: Context
    ) throws -> (value: T, entities: [String: EntityCounts]) {
        try decodeAndSave(type, from: data, into: context, sync: nil)
    }

    /// Decodes and saves as ``decodeAndSave(_:from:into:)`` does, the payload being the whole truth for `scope`:
    /// then the objects of the scope that were stored before and whose identity the payload does not have are
    /// deleted, with their delete rules, and saved in the same transaction (see ``SyncScope``).
    ///
    /// ```swift
    /// // The page lists every open issue of the repository: the ones it no longer lists are deleted.
    /// let (page, counts) = try decoder.decodeAndSave(
    ///     [Issue].self, from: data, into: context, syncing: .matching(\Issue.repository == "apple/swift" && \Issue.state == "open"))
    /// counts["Issue"]?.deleted   // 2
    /// ```
    /// A payload that fails to decode deletes nothing. The synced entity need not be the decoded type: a wrapper
    /// (`Page` with `Many<Issue>`) or an entity whose relationships hold the synced objects work too.
    public func decodeAndSave<T: Decodable, Synced: EntityObject>(
        _ type: T.Type, from data: Data, into context: Context, syncing scope: SyncScope<Synced>
    ) throws -> (value: T, entities: [String: EntityCounts]) {
        let mapping = try context.model.mapping(for: Synced.self)
        return try decodeAndSave(
            type, from: data, into: context,
            sync: (mapping, { context, tracker in try context.deleteUnseen(tracker, scope: scope, releasingObjects: false).deleted }))
    }

    private func decodeAndSave<T: Decodable>(
        _ type: T.Type, from data: Data, into context: Context,
        sync: (mapping: EntitySchema, deleteUnseen: (Context, SyncTracker) throws -> [Int: Int])?
    ) throws -> (value: T, entities: [String: EntityCounts]) {
        try context.save()
        // Parsed before the savepoint of ``failsOnUnresolvedReferences``: a malformed document changes nothing.
        return try JSONTape.withDocumentTape(data) { tape in
            try checkingReferences(in: context, savingAtEnd: true) { try decodeSaving(type, from: tape, into: context, sync: sync) }
        }
    }

    private func decodeSaving<T: Decodable>(
        _ type: T.Type, from tape: JSONTape, into context: Context,
        sync: (mapping: EntitySchema, deleteUnseen: (Context, SyncTracker) throws -> [Int: Int])?
    ) throws -> (value: T, entities: [String: EntityCounts]) {
        let before = context.writeCounts
        let tracker = try sync.map { try context.startSync(of: $0.mapping) }
        let session = DecodingSession(context: context, options: options)
        session.startCounting()
        session.track(tracker)
        let value = try StoreDecoderImpl(tape: tape, node: tape.root, path: .root, session: session)
            .unwrap(tape.root, as: T.self, path: .root)
        try context.save()
        var deleted: [Int: Int] = [:]
        if let sync, let tracker {
            deleted = try sync.deleteUnseen(context, tracker)
            try context.save()
        }
        return (value, context.entityCounts(since: before, decoded: session.decodedCounts ?? [], deleted: deleted))
    }

    /// Decodes from a record of a `JSONRecordStream` (the streaming importer's path), as
    /// ``decode(_:from:into:)-(_,Data,_)`` does from a document.
    public func decode<T: Decodable>(_ type: T.Type, from record: JSONRecord, into context: Context) throws -> T {
        try checkingReferences(in: context, savingAtEnd: false) { try decode(type, from: record.tape, into: context) }
    }

    func decode<T: Decodable>(_ type: T.Type, from tape: JSONTape, into context: Context) throws -> T {
        let session = DecodingSession(context: context, options: options)
        let impl = StoreDecoderImpl(tape: tape, node: tape.root, path: .root, session: session)
        return try impl.unwrap(tape.root, as: T.self, path: .root)
    }
}

/// State shared by all decoder objects of one decode call.
package final class DecodingSession {
    /// The context decoded into. Only a session made with ``init(model:options:)`` has none: it collects the
    /// identities of records (``StoreDecoderImpl/collectKeys(_:_:model:keepingNodes:)``) on another thread, and must not get
    /// further than that.
    var context: Context {
        guard let decodingContext else { preconditionFailure("a key-collecting DecodingSession has no context") }
        return decodingContext
    }
    private let decodingContext: Context?
    let model: Schema
    let options: StoreDecoder.Options
    /// Converted keys, per raw key, when a key strategy is set.
    var convertedKeys: [String: String] = [:]
    // The counters below opt out of run-time exclusivity checks (see Context.registries and ObjectRetention's): they
    // change for every decoded object.

    /// When counting, the number of distinct objects decoded per entity index (the importer's "unchanged" count).
    @exclusivity(unchecked) package private(set) var decodedCounts: [Int]?
    /// `decodedCounts != nil`, kept as a flag: it is tested for every decoded object, and reading the optional
    /// array there would retain and release it.
    private(set) var isCounting = false
    /// The objects counted since counting started (each is counted once, however often it is decoded).
    @exclusivity(unchecked) private var countedObjects = ObjectSet()

    /// Starts counting the objects decoded from now on.
    package func startCounting() {
        decodedCounts = Array(repeating: 0, count: model.mappings.count)
        isCounting = true
        countedObjects.removeAll()
    }

    /// The sync this session's objects count for, if any (see ``SyncScope``).
    private(set) var sync: SyncTracker?
    /// The entity index of ``sync``'s entity, -1 without one: tested for every decoded object.
    private(set) var syncEntity = -1

    /// Notes the objects of `tracker`'s entity that this session decodes or finds by reference.
    package func track(_ tracker: SyncTracker?) {
        sync = tracker
        syncEntity = tracker?.mapping.index ?? -1
    }

    /// Notes an object of the synced entity that the payload has.
    @inline(__always)
    func saw(_ state: EntityState, entity: Int) {
        if entity == syncEntity { sync.unsafelyUnwrapped.saw(state) }
    }

    /// Counts a decoded object once (when ``isCounting``).
    func countDecoded(_ state: EntityState, entity: Int) {
        if countedObjects.insert(state) { decodedCounts![entity] += 1 }
    }

    /// Counts a record skipped as unchanged (when ``isCounting``): it has no object, and its identity is the batch's
    /// only occurrence (see ``RowStamps``).
    func countUnchanged(entity: Int) {
        decodedCounts![entity] += 1
    }

    /// Notes a row of the synced entity that the payload has, without its object (a record skipped as unchanged).
    func saw(rowID: Int64, entity: Int) {
        if entity == syncEntity, rowID <= sync.unsafelyUnwrapped.existingUpTo { sync.unsafelyUnwrapped.seen.insert(rowID) }
    }

    /// References the decoder left unresolved (ignored or deferred) so far: a record that leaves one gets no stamp.
    @exclusivity(unchecked) var unresolvedReferences = 0

    /// The field values of the last object created, kept for the next one: creating an object then allocates no
    /// array (see ``takeFieldValues(count:)``).
    @exclusivity(unchecked) private var spareFieldValues: [DatabaseValue] = []

    /// `count` nulls, in the array the last ``giveBack(_:)`` returned when there is one.
    func takeFieldValues(count: Int) -> [DatabaseValue] {
        var values = spareFieldValues
        spareFieldValues = []
        // Element by element: appending `repeatElement(.null, count:)` went through the generic path, about 90
        // instructions a value.
        if values.count == count {
            for index in 0..<count { values[index] = .null }
        } else {
            values.removeAll(keepingCapacity: true)
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(.null) }
        }
        return values
    }

    /// Keeps an array of ``takeFieldValues(count:)`` for the next object.
    func giveBack(_ values: consuming [DatabaseValue]) { spareFieldValues = values }

    /// Whether JSON keys are used as they are (no key strategy): field lookups then use precomputed keys.
    let usesDefaultKeys: Bool
    // Options read for every value, kept apart: reading them through `options` copies the whole struct (its
    // dictionary, formatters and closures), fourteen reference counting operations per date.
    /// Whether dates are ISO 8601 strings, parsed from the tape's bytes.
    let datesAreISO8601: Bool
    /// Whether decoded to-many members are appended to the stored ones rather than replacing them.
    let appendsToMany: Bool

    package convenience init(context: Context, options: StoreDecoder.Options) {
        self.init(context: context, model: context.model, options: options)
    }

    /// A session that only reads identities from JSON, for a thread other than the context's.
    convenience init(model: Schema, options: StoreDecoder.Options) {
        self.init(context: nil, model: model, options: options)
    }

    private init(context: Context?, model: Schema, options: StoreDecoder.Options) {
        self.decodingContext = context
        self.model = model
        self.options = options
        if case .useDefaultKeys = options.keyDecodingStrategy { usesDefaultKeys = true } else { usesDefaultKeys = false }
        if case .iso8601 = options.dateDecodingStrategy { datesAreISO8601 = true } else { datesAreISO8601 = false }
        if case .append = options.toManyPolicy { appendsToMany = true } else { appendsToMany = false }
    }

    /// The key a JSON key matches under the key strategy.
    func convert(_ key: String, path: CodingPathNode) -> String {
        switch options.keyDecodingStrategy {
        case .useDefaultKeys:
            return key
        case .convertFromSnakeCase:
            if let converted = convertedKeys[key] { return converted }
            let converted = Self.convertFromSnakeCase(key)
            convertedKeys[key] = converted
            return converted
        case .custom(let convert):
            return convert(path.path + [CodingKeys(stringValue: key)]).stringValue
        }
    }

    /// JSONDecoder's rule: leading and trailing underscores are kept; `_x` inside words capitalizes.
    static func convertFromSnakeCase(_ key: String) -> String {
        guard !key.isEmpty, key.contains("_") else { return key }
        guard let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first, key[last] == "_" { last = key.index(before: last) }
        let body = key[first...last]
        let words = body.split(separator: "_", omittingEmptySubsequences: true)
        guard words.count > 1 || body.contains("_") else { return key }
        let joined = words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
        return String(key[..<first]) + joined + String(key[key.index(after: last)...])
    }
}

extension CodingUserInfoKey {
    /// Where to put a ``ContextReference`` for decoding entities with Foundation's `JSONDecoder`.
    public static let codableStoreContext = CodingUserInfoKey(rawValue: "CodableStore.context")!
}

/// A context handed to Foundation's `JSONDecoder` through `userInfo[.codableStoreContext]`, so that
/// ``Many`` can upsert entities there (a slower path than ``StoreDecoder``, with the same semantics).
///
/// ```swift
/// let decoder = JSONDecoder()
/// decoder.userInfo[.codableStoreContext] = ContextReference(context)
/// let page = try decoder.decode(Page.self, from: data)   // struct Page: Decodable { let results: Many<Issue> }
/// ```
/// Use it only inside the `write` closure that gave you the context.
public final class ContextReference: @unchecked Sendable {
    // @unchecked: the reference is only dereferenced by decoding code running inside the context's closure,
    // on the closure's thread; it is never used concurrently.
    let context: Context
    let options: StoreDecoder.Options

    public init(_ context: Context, decoder: StoreDecoder = StoreDecoder()) {
        self.context = context
        self.options = decoder.options
    }
}
