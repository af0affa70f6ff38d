import CSQLite
import CodableStore
import Foundation
import Synchronization
import Testing

/// Every table and index definition and every row of a store, values rendered by SQLite's `quote()`, rows in
/// order: two dumps are equal when the stores hold exactly the same thing (row ids included).
typealias StoreDump = [String]

/// Something a store does that a fault inside SQLite's I/O may interrupt (see ``FaultSweep``).
struct FaultScenario {
    let name: String
    let entities: [any EntityObject.Type]
    /// Fills a new store with the old contents, which the sweep then checkpoints into the main file.
    let prepare: (Store) throws -> Void
    /// Changes the old contents a little more, left in the -wal file, so the operation reads both files.
    let prepareInWAL: (Store) throws -> Void
    /// The writer's `PRAGMA wal_autocheckpoint` during the operation, in pages: small, the operation's own
    /// commits checkpoint (and faults hit the checkpoints). `nil`: SQLite's default (1000).
    var walAutocheckpoint: Int? = nil
    /// Takes the old contents to the new ones, and gives the same new contents when run again. `committed`,
    /// when given, is called after each commit an operation that commits several times makes (each leaves a
    /// state a failure may end in).
    let operation: (Store, _ committed: (@Sendable () -> Void)?) throws -> Void
}

/// Runs a scenario with a fault injected at one I/O call after another, and checks what the store makes of
/// each: a clear error (or success, when the call did not matter), a file that passes `integrity_check` and
/// holds exactly the old or the new contents (or a committed state in between), and a store that works on.
///
/// A clean reference run first counts the calls of each kind the operation makes (and the close after it,
/// whose checkpoint moves the -wal file into the main one), then each fault runs on a fresh copy of the same
/// old store: the main file with most of the old contents and a -wal file with the rest.
final class FaultSweep {
    let scenario: FaultScenario
    let vfs = FaultInjectingVFS()
    private let directory: String
    private let template: String
    private var copies = 0
    /// The contents before and after the operation.
    private(set) var old: StoreDump = []
    private(set) var new: StoreDump = []
    /// Every state a failed operation may leave: the old one, and each one an operation committing several
    /// times reached (the last is the new one).
    private(set) var states: [StoreDump] = []
    /// The calls of the clean operation, and of closing the store after it (with automatic checkpoints off).
    private(set) var operationCounts: FaultInjectingVFS.Counts
    private(set) var closeCounts: FaultInjectingVFS.Counts

    /// What the faults did, for the test's summary.
    struct Tally: CustomStringConvertible {
        /// Faults armed, faults that were injected (the call was reached), operations they failed.
        var faults = 0
        var injected = 0
        var failed = 0
        /// The same per kind of call: faults and failed operations.
        var byOperation: [FaultInjectingVFS.Operation: (faults: Int, failed: Int)] = [:]

        mutating func count(_ fault: FaultInjectingVFS.Fault, injected isInjected: Bool, failed isFailed: Bool) {
            faults += 1
            if isInjected { injected += 1 }
            if isFailed { failed += 1 }
            byOperation[fault.operation, default: (0, 0)].faults += 1
            if isFailed { byOperation[fault.operation, default: (0, 0)].failed += 1 }
        }

        var description: String {
            let kinds = FaultInjectingVFS.Operation.allCases.compactMap { operation in
                byOperation[operation].map { "\(operation) \($0.failed)/\($0.faults)" }
            }
            return "\(faults) faults, \(injected) injected, \(failed) failed the operation ("
                + kinds.joined(separator: ", ") + ")"
        }
    }

    init(_ scenario: FaultScenario) throws {
        self.scenario = scenario
        directory = (TestStore.temporaryPath() as NSString).deletingLastPathComponent
        template = directory + "/template.sqlite"
        operationCounts = FaultInjectingVFS.Counts.zero
        closeCounts = FaultInjectingVFS.Counts.zero

        // The old store: most of it in the main file, the rest in the -wal file, copied while the store is open
        // (a store's last connection checkpoints and deletes the -wal file when it closes).
        do {
            let store = try Store(path: template, entities: scenario.entities, options: .init(vfs: vfs.name))
            try store.withWriterConnection { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
            try scenario.prepare(store)
            try store.withWriterConnection { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try scenario.prepareInWAL(store)
            try Self.copy(template, to: template + ".copy")
            withExtendedLifetime(store) {}
        }
        try Self.remove(template)
        try Self.copy(template + ".copy", to: template)
        try Self.remove(template + ".copy")
        #expect(FileManager.default.fileExists(atPath: template + "-wal"))

        let oldCopy = try freshCopy()
        old = try Self.dump(oldCopy)
        try Self.remove(oldCopy)

        // The reference run: the new contents, the states in between, the calls of each kind.
        let path = try freshCopy()
        let committed = Mutex<[StoreDump]>([])
        var store: Store? = try open(path)
        vfs.resetCounts()
        try scenario.operation(store!) {
            committed.withLock { $0.append((try? Self.dump(path)) ?? ["cannot dump \(path)"]) }
        }
        operationCounts = vfs.counts
        store = nil
        new = try Self.dump(path)
        states = [old] + committed.withLock { $0 } + [new]
        try Self.remove(path)
        let changes = new != old
        #expect(changes, "\(scenario.name): the operation changes nothing")

        let closed = try freshCopy()
        store = try open(closed, autocheckpoint: 0)
        try scenario.operation(store!, nil)
        vfs.resetCounts()
        store = nil
        closeCounts = vfs.counts
        let closedDump = try Self.dump(closed)
        Self.expectSame(closedDump, new, "\(scenario.name), closed")
        try Self.remove(closed)
    }

    deinit {
        vfs.unregister()  // every store of the sweep is closed by now
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - Faults

    /// `limit` call numbers spread over `1...count`, first and last included (every call when there are few).
    static func spread(_ count: Int, limit: Int) -> [Int] {
        guard count > 0, limit > 0 else { return [] }
        if count <= limit { return Array(1...count) }
        if limit == 1 { return [1] }
        return Array(Set((0..<limit).map { 1 + $0 * (count - 1) / (limit - 1) })).sorted()
    }

    /// The faults to inject during the operation (or the close, with `counts` of the close): for each kind of
    /// call, one-shot faults spread over every call, persistent ones, and calls on the main and -wal files
    /// alone (a checkpoint's writes and syncs are few among the -wal file's); torn writes of a full disk.
    static func faults(for counts: FaultInjectingVFS.Counts, spread limit: Int) -> [FaultInjectingVFS.Fault] {
        var faults: [FaultInjectingVFS.Fault] = []
        for operation in FaultInjectingVFS.Operation.allCases {
            let count = counts.total(operation)
            faults += spread(count, limit: limit).map { .init(operation, nth: $0) }
            faults += spread(count, limit: 2).map { .init(operation, nth: $0, persistent: true) }
            for files in [FaultInjectingVFS.Files.main, .wal] where counts.total(operation, files) < count {
                faults += spread(counts.total(operation, files), limit: 3).map { .init(operation, files: files, nth: $0) }
            }
        }
        faults += spread(counts.total(.write), limit: 4).map { .init(.write, nth: $0, torn: true, resultCode: SQLITE_FULL) }
        return faults
    }

    /// Runs the operation with each fault injected, on a fresh copy of the old store each time, and checks the
    /// error, the file and the store afterwards.
    func sweepOperation(_ faults: [FaultInjectingVFS.Fault]) throws -> Tally {
        var tally = Tally()
        for fault in faults {
            let context = "\(scenario.name), fault: \(fault)"
            let path = try freshCopy()
            defer { try? Self.remove(path) }
            var store: Store? = try open(path)
            vfs.arm(fault)
            let result = Result { try scenario.operation(store!, nil) }
            let injected = vfs.injected
            vfs.disarm()
            let succeeded = (try? result.get()) != nil
            tally.count(fault, injected: injected > 0, failed: !succeeded)
            if case .failure(let error) = result {
                #expect(injected > 0, "\(context): failed without a fault: \(error)")
                Self.expectClearIOError(error, fault, context)
            }

            // The same store, still open: its writer sees a whole state, and it reads and writes on.
            let seen = try store!.withWriterConnection { connection in
                #expect(try connection.scalar(sql: "PRAGMA integrity_check") == .text("ok"), "\(context)")
                return try Self.dump(connection)
            }
            expectAllowed(seen, succeeded: succeeded, "\(context)")
            try store!.write { _ in }
            _ = try store!.read { readContext in try Self.count(scenario.entities[0], readContext) }
            store = nil

            // Closed (its last connection checkpoints), then read with a plain connection: the same state.
            #expect(try RawDatabase(path).value("PRAGMA integrity_check") == "ok", "\(context)")
            let persisted = try Self.dump(path)
            Self.expectSame(persisted, seen, "\(context)")

            // Reopened, the store writes on; after a failure, it takes the operation again and ends with the new
            // contents.
            store = try open(path)
            try store!.write { _ in }
            if succeeded { continue }
            try scenario.operation(store!, nil)
            store = nil
            let rerun = try Self.dump(path)
            Self.expectSame(rerun, new, "\(context)")
        }
        return tally
    }

    /// Runs the operation cleanly, then closes the store with each fault injected: the close's checkpoint fails
    /// silently (`sqlite3_close` reports nothing a store could throw), so the file must hold the new contents,
    /// whole, from the main file and what is left of the -wal file, and a reopened store must work on.
    func sweepClose(_ faults: [FaultInjectingVFS.Fault]) throws -> Tally {
        var tally = Tally()
        for fault in faults {
            let context = "\(scenario.name), closing, fault: \(fault)"
            let path = try freshCopy()
            defer { try? Self.remove(path) }
            var store: Store? = try open(path, autocheckpoint: 0)
            try scenario.operation(store!, nil)
            vfs.arm(fault)
            store = nil
            let injected = vfs.injected
            vfs.disarm()
            tally.count(fault, injected: injected > 0, failed: false)

            #expect(try RawDatabase(path).value("PRAGMA integrity_check") == "ok", "\(context)")
            let closed = try Self.dump(path)
            Self.expectSame(closed, new, "\(context)")
            store = try open(path)
            try store!.write { _ in }
            try scenario.operation(store!, nil)
            store = nil
            let rerun = try Self.dump(path)
            Self.expectSame(rerun, new, "\(context)")
        }
        return tally
    }

    /// A state seen after a fault must be one a failure may leave, and the new one exactly when the operation
    /// succeeded.
    private func expectAllowed(_ seen: StoreDump, succeeded: Bool, _ context: String) {
        if succeeded {
            Self.expectSame(seen, new, "\(context): succeeded without the new contents")
        } else {
            let isAllowed = states.contains(seen) && seen != new
            #expect(
                isAllowed,
                "\(context): failed, leaving neither the old contents nor a state committed before the failure: \(Self.difference(seen, old))")
        }
    }

    /// The error of a failed operation names the I/O failure: an ``SQLiteError`` with SQLite's result code and
    /// message, thrown as it is, or as the cause of a ``StoreError`` (a relationship that could not be loaded)
    /// inside an ``ImportError`` (an import) — one level each at most.
    static func expectClearIOError(_ error: any Error, _ fault: FaultInjectingVFS.Fault, _ context: String) {
        var unwrapped = error
        var levels = 0
        while levels < 3 {
            if let error = unwrapped as? ImportError {
                unwrapped = error.underlyingError
            } else if let error = unwrapped as? StoreError, let cause = error.cause {
                unwrapped = cause
            } else {
                break
            }
            levels += 1
        }
        guard let sqliteError = unwrapped as? SQLiteError else {
            Issue.record("\(context): not an SQLite error: \(type(of: unwrapped)): \(error)")
            return
        }
        let isFull = fault.resultCode == SQLITE_FULL
        #expect(sqliteError.resultCode.primary == (isFull ? .SQLITE_FULL : .SQLITE_IOERR), "\(context): \(error)")
        #expect("\(error)".contains(isFull ? "database or disk is full" : "disk I/O error"), "\(context): \(error)")
    }

    // MARK: - Stores and files

    private func open(_ path: String, autocheckpoint: Int? = nil) throws -> Store {
        let store = try Store(path: path, entities: scenario.entities, options: .init(vfs: vfs.name))
        if let pages = autocheckpoint ?? scenario.walAutocheckpoint {
            try store.withWriterConnection { try $0.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)") }
        }
        return store
    }

    /// A copy of the old store (main and -wal files) under a new name.
    private func freshCopy() throws -> String {
        copies += 1
        let path = directory + "/run-\(copies).sqlite"
        try Self.copy(template, to: path)
        return path
    }

    private static func copy(_ path: String, to destination: String) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: destination + suffix)
        }
    }

    private static func remove(_ path: String) throws {
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.removeItem(atPath: path + suffix)
        }
    }

    private static func count<T: EntityObject>(_ type: T.Type, _ context: Context) throws -> Int {
        try context.count(type)
    }

    /// The dump of the file at `path`, read with a plain sqlite3 connection (SQLite's default VFS).
    static func dump(_ path: String) throws -> StoreDump {
        let raw = try RawDatabase(path)
        return try dump { try raw.rows($0) }
    }

    /// The dump of what `connection` sees.
    static func dump(_ connection: Connection) throws -> StoreDump {
        try dump { sql in
            try connection.rows(sql: sql).map { row in row.map { if case .text(let text) = $0 { text } else { "\($0)" } } }
        }
    }

    private static func dump(_ rows: (String) throws -> [[String]]) throws -> StoreDump {
        var lines: [String] = []
        let objects = try rows(
            "SELECT type, name, quote(sql) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
        for object in objects {
            lines.append(object.joined(separator: " "))
            guard object[0] == "table" else { continue }
            let table = quoteIdentifier(object[1])
            let columns = try rows("SELECT quote(name) FROM pragma_table_info(\(quoteLiteral(object[1])))").map { $0[0] }
            let quoted = columns.map { "quote(\(quoteIdentifier(String($0.dropFirst().dropLast()))))" }
            let order = (1...max(1, columns.count)).map(String.init).joined(separator: ", ")
            for row in try rows("SELECT \(quoted.joined(separator: ", ")) FROM \(table) ORDER BY \(order)") {
                lines.append("  " + row.joined(separator: ", "))
            }
        }
        return lines
    }

    /// Records an issue naming the first differences when two dumps differ (`#expect(a == b)` would print both).
    static func expectSame(_ seen: StoreDump, _ expected: StoreDump, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if seen != expected { Issue.record("\(context): \(difference(seen, expected))", sourceLocation: sourceLocation) }
    }

    /// The first lines where two dumps differ, for a failure message.
    static func difference(_ seen: StoreDump, _ expected: StoreDump) -> String {
        let diff = seen.difference(from: expected)
        if diff.isEmpty { return "no difference" }
        let lines = diff.prefix(12).map { change -> String in
            switch change {
            case .insert(let offset, let line, _): "+\(offset): \(line)"
            case .remove(let offset, let line, _): "-\(offset): \(line)"
            }
        }
        return "\(diff.count) lines differ from the expected dump:\n" + lines.joined(separator: "\n")
    }

    private static func quoteLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}

