import CodableStore
import Foundation

/// A store for a test, seeded from fixture files in one call, with its statement log.
///
/// ```swift
/// import CodableStoreTesting
/// import Testing
///
/// @Test func theInboxLoadsInTwoQueries() throws {
///     let fixture = try FixtureStore(
///         entities: [Issue.self, User.self, Label.self],
///         fixtures: [.records(User.self, "users.json"), .records(Issue.self, "issues.json")])
///     let inbox = try fixture.statements.expectQueries(atMost: 2) { try Inbox.load(from: fixture.store) }
///     #expect(inbox.unread.count == 3)
///     try fixture.expectMatchesGolden("after-inbox.json")
/// }
/// ```
/// Fixtures are loaded in the order given, each in its own write, with the given decoder (configure it as the app
/// configures its own: key strategy, dates, reference policy). They are found in `Fixtures/` next to the test
/// file, else in the test file's own folder, unless a ``FixtureLocation`` says otherwise. The store lives in memory,
/// or in a temporary file (``Storage-swift.enum/temporaryFile``) that is removed when the fixture store goes away.
public final class FixtureStore: Sendable {
    /// Where the store lives.
    public enum Storage: Sendable {
        /// In memory (the default): fast, and gone with the store.
        case inMemory
        /// In a new file in the temporary folder, for code that opens the file itself or needs separate reader
        /// connections; removed with its WAL files when the fixture store is deinitialized.
        case temporaryFile
    }

    /// The store, to hand to the code under test.
    public let store: Store
    /// Every statement the store runs.
    public let statements: StatementLog
    /// Where fixtures are looked for when a fixture does not say.
    public let location: FixtureLocation
    /// The decoder fixtures are loaded with when a load does not give one.
    public let decoder: StoreDecoder
    /// The folder of the test file that made the store: golden files are found from it.
    let testFolder: URL
    private let temporaryFolder: URL?

    /// Makes a store for `entities` (and `runtimeEntities`, described at run time: a model file's) and loads
    /// `fixtures` into it, in order.
    ///
    /// - Throws: ``FixtureError`` naming the fixture file, the line and column and the JSON path of what failed to
    ///   load, or the store's error when it cannot be opened.
    public init(
        entities: [any EntityObject.Type],
        runtimeEntities: [EntityDescription] = [],
        fixtures: [Fixture] = [],
        decoder: StoreDecoder = StoreDecoder(),
        location: FixtureLocation? = nil,
        storage: Storage = .inMemory,
        options: Store.Options = Store.Options(),
        filePath: StaticString = #filePath
    ) throws {
        let statements = StatementLog()
        let options = statements.recording(into: options)
        switch storage {
        case .inMemory:
            store = try Store.inMemory(entities: entities, runtimeEntities: runtimeEntities, options: options)
            temporaryFolder = nil
        case .temporaryFile:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("CodableStoreTesting-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            temporaryFolder = folder
            store = try Store(
                path: folder.appendingPathComponent("store.sqlite").path, entities: entities, runtimeEntities: runtimeEntities,
                options: options)
        }
        self.statements = statements
        self.location = location ?? .folder(relativeTo: filePath)
        self.decoder = decoder
        self.testFolder = URL(fileURLWithPath: "\(filePath)").deletingLastPathComponent()
        try load(fixtures)
    }

    deinit {
        if let temporaryFolder { try? FileManager.default.removeItem(at: temporaryFolder) }
    }

    /// Loads more fixtures, in order, with `decoder` or else the store's ``decoder``.
    /// - Throws: ``FixtureError`` naming the fixture file, the line and column and the JSON path of what failed.
    public func load(_ fixtures: [Fixture], decoder: StoreDecoder? = nil) throws {
        try store.load(fixtures, decoder: decoder ?? self.decoder, location: location)
    }

    /// Compares the store's `Store.stableExport(of:)` with a golden file in `Golden/` next to the test
    /// file (see ``CodableStoreCore/Store/expectMatchesGolden(_:entities:in:filePath:)``).
    public func expectMatchesGolden(_ name: String, entities: [any EntityObject.Type]? = nil, in folder: URL? = nil) throws {
        try store.expectMatchesGolden(name, entities: entities, in: folder ?? testFolder.appendingPathComponent("Golden"))
    }
}

extension Store {
    /// Loads fixtures into this store, in order, each in its own write: for a store you opened yourself (a file
    /// your test prepared, a store with options of your own). ``FixtureStore`` does this for the store it makes.
    ///
    /// ```swift
    /// let store = try Store(path: path, entities: [Issue.self])
    /// try store.load([.records(Issue.self, "issues.json")], decoder: AppDecoders.github)
    /// ```
    /// - Parameters:
    ///   - fixtures: the fixtures, loaded in this order.
    ///   - decoder: the decoder they are decoded with.
    ///   - location: where fixtures that do not say are found: by default `Fixtures/` next to the calling test file,
    ///     else its own folder.
    ///   - filePath: the calling test file (leave the default).
    /// - Throws: ``FixtureError`` naming the fixture file, the line and column and the JSON path of what failed.
    public func load(
        _ fixtures: [Fixture], decoder: StoreDecoder = StoreDecoder(), location: FixtureLocation? = nil,
        filePath: StaticString = #filePath
    ) throws {
        let location = location ?? .folder(relativeTo: filePath)
        for fixture in fixtures {
            try fixture.load(into: self, decoder: decoder, defaultLocation: location)
        }
    }
}
