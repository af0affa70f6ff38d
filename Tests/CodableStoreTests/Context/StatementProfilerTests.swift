import Foundation
import Synchronization
import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

/// `Store.Options.statementProfiler`: every statement of the store's connections, with its time, including those
/// an import runs on its writer thread.
@Suite struct StatementProfilerTests {
    @Test func writesReadsAndAnImportAreProfiled() throws {
        let profile = Mutex<[(sql: String, time: Duration)]>([])
        let path = TestStore.temporaryPath()
        let store = try Store(
            path: path, entities: TestStore.entities,
            options: .init(statementProfiler: { sql, time in profile.withLock { $0.append((sql, time)) } }))
        try store.write { try $0.insert(Person(id: 1, name: "Ada")) }
        _ = try store.read { try $0.count(Person.self) }
        let dump = TestStore.temporaryPath("people.json")
        try Data(#"[{"id": 2, "name": "Bob"}, {"id": 3, "name": "Cy"}]"#.utf8).write(to: URL(fileURLWithPath: dump))
        _ = try store.importJSON(Person.self, from: .file(dump), options: ImportOptions(batchSize: 1))
        let statements = profile.withLock { $0 }
        let inserts = statements.filter { $0.sql.hasPrefix("INSERT") && $0.sql.contains("\"Person\"") }
        #expect(inserts.count >= 3, "\(statements.map(\.sql))")
        #expect(statements.contains { $0.sql.hasPrefix("SELECT count(*) FROM \"Person\"") })
        #expect(statements.allSatisfy { $0.time >= .zero })
        #expect(try RawDatabase(path).value("SELECT count(*) FROM Person") == "3")
    }
}
