import CodableStore
import CodableStorePostgres
import Foundation
import Testing

/// Observations that cannot read their results, on every backend: on PostgreSQL, after another process's commit.
private let entities: [any EntityObject.Type] = [Device.self, Vendor.self, Component.self, Badge.self]

@Suite struct BackendObservationTests {
    @Test(arguments: Backend.available)
    func aFailedRefreshIsSentAndTheObservationCatchesUpByItself(_ backend: Backend) async throws {
        let store = try backend.makeStore(entities: entities)
        // Another process's store on PostgreSQL, whose commits reach this one's observers; the same store on SQLite.
        let writer = backend == .postgres ? try backend.reopen(store, entities: entities) : store
        _ = try storedRows(store, #"CREATE TABLE "Allowed" ("id" bigint)"#)
        let received = ObservationRecorder(store.observe(Device.self, where: .sql(#""id" NOT IN (SELECT "id" FROM "Allowed")"#)))
        func wait(for count: Int) async -> Bool { await received.wait { $0.count >= count } }
        #expect(await wait(for: 1))
        // The query cannot run while its table is gone.
        _ = try storedRows(store, #"DROP TABLE "Allowed""#)
        try await writer.write { context in _ = try StoreDecoder().decode([Device].self, from: Data(#"[{"id": 1}]"#.utf8), into: context) }
        #expect(await wait(for: 2))
        let failed = received.all[1]
        let failure = try #require(failed.failure)
        #expect(failure.code == .observationFailed)
        #expect(failure.message.hasPrefix("the observation of Device could not read its results: "))
        switch backend {
        case .sqlite: #expect(failure.message.hasSuffix("no such table: Allowed"))
        case .postgres: #expect(failure.cause is PostgresError)
        }
        #expect(failed.rows.isEmpty)
        // Back: a retry reads the results, with no commit after.
        _ = try storedRows(store, #"CREATE TABLE "Allowed" ("id" bigint)"#)
        #expect(await wait(for: 3))
        let recovered = received.all[2]
        #expect(recovered.failure == nil)
        #expect(recovered.rows.map { $0[\Device.id] } == [1])
        #expect(recovered.inserted == [0])
    }
}
