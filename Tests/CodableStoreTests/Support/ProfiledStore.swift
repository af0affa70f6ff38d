import CodableStore
import Synchronization

/// A store of the issue entities whose statements are recorded, for tests that count the queries of an import.
final class ProfiledStore: Sendable {
    let path: String
    let store: Store
    private let recorded: Recorder

    private final class Recorder: Sendable {
        let statements = Mutex<[String]>([])
    }

    init(path: String = TestStore.temporaryPath()) throws {
        let recorder = Recorder()
        self.path = path
        self.recorded = recorder
        self.store = try Store(
            path: path, entities: issueEntities,
            options: .init(statementProfiler: { sql, _ in recorder.statements.withLock { $0.append(sql) } }))
    }

    /// The SQL of every statement run so far, in order.
    var statements: [String] { recorded.statements.withLock { $0 } }

    /// How many queries looked users up by identity.
    var userLookups: Int {
        statements.count { $0.hasPrefix("SELECT") && $0.contains(#"FROM "User" WHERE"#) }
    }
}
