import CSQLiteFaultVFS
import Foundation

/// A SQLite VFS that counts the reads, writes, syncs and truncations of every file opened through it, and fails
/// the Nth call of a chosen kind: the Swift face of the `CSQLiteFaultVFS` test-support target.
///
/// ```swift
/// let vfs = FaultInjectingVFS()
/// defer { vfs.unregister() }                      // once every store opened with it is closed
/// let store = try Store(path: path, entities: entities, options: .init(vfs: vfs.name))
/// vfs.arm(.init(.write, nth: 3))                 // the third write from now fails with SQLITE_IOERR_WRITE
/// ```
/// Each instance registers a VFS under a name of its own, with its own counters and fault, so tests that use
/// different instances can run in parallel.
final class FaultInjectingVFS: @unchecked Sendable {
    // @unchecked: `handle` and `name` never change, and every C function locks the VFS's own mutex (an import
    // reaches SQLite from a writer thread of its own).

    /// The I/O calls that are counted and can be failed.
    enum Operation: Int32, CaseIterable, Sendable, CustomStringConvertible {
        case read, write, sync, truncate

        var description: String {
            switch self {
            case .read: "read"
            case .write: "write"
            case .sync: "sync"
            case .truncate: "truncate"
            }
        }
    }

    /// Which files a count or a fault is about.
    struct Files: OptionSet, Sendable, CustomStringConvertible {
        let rawValue: Int32
        static let main = Files(rawValue: Int32(CS_FAULT_FILE_MAIN))
        static let wal = Files(rawValue: Int32(CS_FAULT_FILE_WAL))
        static let journal = Files(rawValue: Int32(CS_FAULT_FILE_JOURNAL))
        /// Temporary databases, statement journals, sorter files.
        static let other = Files(rawValue: Int32(CS_FAULT_FILE_OTHER))
        static let all = Files(rawValue: Int32(CS_FAULT_FILE_ANY))

        static let kinds: [(Files, String)] = [(.main, "main"), (.wal, "wal"), (.journal, "journal"), (.other, "other")]

        var description: String {
            self == .all ? "all" : Self.kinds.filter { contains($0.0) }.map(\.1).joined(separator: "+")
        }
    }

    /// A fault to inject.
    struct Fault: Sendable, CustomStringConvertible {
        var operation: Operation
        var files: Files = .all
        /// The call (1-based, counted from when the fault is armed) that fails.
        var nth: Int
        /// Every later call of the kind fails too (a disk that stays broken), until disarmed.
        var isPersistent = false
        /// A failing write writes the first half of its bytes before it reports the error.
        var isTorn = false
        /// What the call returns; 0: SQLITE_IOERR_READ, _WRITE, _FSYNC or _TRUNCATE, after ``operation``.
        var resultCode: Int32 = 0

        init(_ operation: Operation, files: Files = .all, nth: Int, persistent: Bool = false, torn: Bool = false, resultCode: Int32 = 0) {
            self.operation = operation
            self.files = files
            self.nth = nth
            self.isPersistent = persistent
            self.isTorn = torn
            self.resultCode = resultCode
        }

        var description: String {
            var text = "\(operation) #\(nth) of \(files)"
            if isPersistent { text += ", persistent" }
            if isTorn { text += ", torn" }
            if resultCode != 0 { text += ", code \(resultCode)" }
            return text
        }
    }

    /// Calls counted at one moment, per operation and kind of file.
    struct Counts: Sendable, Equatable, CustomStringConvertible {
        fileprivate var calls: [[Int]]  // [operation][kind]

        static let zero = Counts(calls: Array(repeating: Array(repeating: 0, count: Files.kinds.count), count: Operation.allCases.count))

        /// Calls of `operation` on `files`.
        func total(_ operation: Operation, _ files: Files = .all) -> Int {
            Files.kinds.indices.reduce(0) { sum, kind in
                files.contains(Files.kinds[kind].0) ? sum + calls[Int(operation.rawValue)][kind] : sum
            }
        }

        static func - (after: Counts, before: Counts) -> Counts {
            Counts(calls: zip(after.calls, before.calls).map { zip($0, $1).map { $0 - $1 } })
        }

        var description: String {
            Operation.allCases.map { operation in
                let kinds = Files.kinds.filter { total(operation, $0.0) > 0 }.map { "\($0.1) \(total(operation, $0.0))" }
                return "\(operation) \(total(operation))" + (kinds.isEmpty ? "" : " (" + kinds.joined(separator: ", ") + ")")
            }.joined(separator: "; ")
        }
    }

    /// The name to open stores with (``Store/Options/vfs``).
    let name: String
    private let handle: OpaquePointer

    /// Registers a new VFS wrapping SQLite's default one, under a fresh name.
    init() {
        name = "codablestore-faults-\(UUID().uuidString)"
        guard let handle = cs_fault_vfs_register(name) else { fatalError("cannot register the fault-injecting VFS \(name)") }
        self.handle = handle
    }

    /// Unregisters and frees the VFS: call it only once every connection opened with it is closed.
    /// (Not in `deinit`: Swift may release this object before a store opened by name is closed.)
    func unregister() {
        cs_fault_vfs_unregister(handle)
    }

    /// Arms `fault`, counting matching calls from now on.
    func arm(_ fault: Fault) {
        let flags = (fault.isPersistent ? Int32(CS_FAULT_PERSISTENT) : 0) | (fault.isTorn ? Int32(CS_FAULT_TORN) : 0)
        cs_fault_vfs_arm(handle, fault.operation.rawValue, fault.files.rawValue, Int64(fault.nth), flags, fault.resultCode)
    }

    /// Lets every call reach the disk again.
    func disarm() {
        cs_fault_vfs_disarm(handle)
    }

    /// Sets every counter to zero.
    func resetCounts() {
        cs_fault_vfs_reset_counts(handle)
    }

    /// Faults injected since the last ``arm(_:)``.
    var injected: Int { Int(cs_fault_vfs_injected(handle)) }

    /// Every counter, now.
    var counts: Counts {
        Counts(calls: Operation.allCases.map { operation in
            Files.kinds.map { Int(cs_fault_vfs_count(handle, operation.rawValue, $0.0.rawValue)) }
        })
    }
}
