import CodableStore
import CodableStoreSQLite
import Foundation
import IssuesModel
import Testing

/// The import's page cache (``ImportOptions/cacheSizeKiB``): the store's writer connection has it from before the
/// import's transaction begins until it ends, and its own size again afterwards, whatever the import's outcome.
@Suite struct ImportPageCacheTests {
    /// The writer connection's page cache, as SQLite states it (negative: KiB).
    static func writerCacheSize(_ store: Store) throws -> DatabaseValue? {
        try store.withWriterConnection { try $0.scalar(sql: "PRAGMA cache_size") }
    }

    /// The page cache sizes the statements set, in KiB, each with its position among all the statements. Not those
    /// around the building of indexes deferred by the import (IndexDeferralTests checks those).
    static func cacheSizesSet(_ statements: [String]) -> [(position: Int, kibibytes: Int)] {
        statements.enumerated().compactMap { position, sql in
            guard sql.hasPrefix("PRAGMA cache_size = -") else { return nil }
            if position + 1 < statements.count, statements[position + 1].hasPrefix("CREATE INDEX") { return nil }
            if position > 0, statements[position - 1].hasPrefix("CREATE INDEX") { return nil }
            return Int(sql.dropFirst("PRAGMA cache_size = -".count)).map { (position, $0) }
        }
    }

    @Test func theWriterHasTheImportsCacheDuringTheTransactionAndItsOwnAfter() throws {
        let statements = StatementLog()
        let store = try Store(path: TestStore.temporaryPath(), entities: issueEntities, options: .init(statementObserver: statements.observer))
        #expect(try Self.writerCacheSize(store) == .integer(-16_384))
        let before = statements.all.count
        var options = ImportTests.options(batchSize: 50)
        #expect(options.cacheSizeKiB == 20 * 1_024)
        options.cacheSizeKiB = 20_000
        let report = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 300)), options: options)
        #expect(report.recordsImported == 300)
        let log = Array(statements.all[before...])
        let sizes = Self.cacheSizesSet(log)
        #expect(sizes.map(\.kibibytes) == [20_000, 16_384])
        let begin = try #require(log.firstIndex(of: "BEGIN IMMEDIATE TRANSACTION"))
        let commit = try #require(log.lastIndex(of: "COMMIT TRANSACTION"))
        #expect(sizes.first.map { $0.position < begin } == true)
        #expect(sizes.last.map { $0.position > commit } == true)
        #expect(try Self.writerCacheSize(store) == .integer(-16_384))
    }

    @Test func aFailedImportGivesTheCacheBackToo() throws {
        let store = try Store(path: TestStore.temporaryPath(), entities: issueEntities)
        // A syntax error after 200 good records: the stop policy rolls everything back.
        let dump = try ImportTests.dumpWithASyntaxError(after: 200)
        #expect(throws: ImportError.self) {
            try store.importJSON(GitIssue.self, from: .file(dump), options: ImportTests.options(batchSize: 50))
        }
        #expect(try Self.writerCacheSize(store) == .integer(-16_384))
        #expect(try store.read { try $0.count(GitIssue.self) } == 0)
    }

    /// A store whose own cache is larger keeps it; `nil` leaves the store's cache alone.
    @Test(arguments: [(32 * 1_024, 24 * 1_024 as Int?), (16 * 1_024, nil)])
    func aLargerOwnCacheOrNoImportCacheChangesNothing(storeCache: Int, importCache: Int?) throws {
        let statements = StatementLog()
        let store = try Store(
            path: TestStore.temporaryPath(), entities: issueEntities,
            options: .init(cacheSizeKiB: storeCache, statementObserver: statements.observer))
        let before = statements.all.count
        var options = ImportTests.options()
        options.cacheSizeKiB = importCache
        _ = try store.importJSON(GitIssue.self, from: .file(try ImportTests.dump(count: 100)), options: options)
        #expect(Self.cacheSizesSet(Array(statements.all[before...])).isEmpty)
        #expect(try Self.writerCacheSize(store) == .integer(Int64(-storeCache)))
    }
}
