import CFuzzSupport
import CodableStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Hands the command line to libFuzzer (`StoreFuzzer CORPUS_DIR -max_total_time=60`, see README.md), which calls
/// ``fuzzOneInput(_:_:)`` for every input it makes.
@main
enum StoreFuzzer {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzOneInput($0, $1) })
    }
}

/// libFuzzer's entry point: tests one input, and stops the program (`fatalError`) when the paths disagree or a
/// number conversion disagrees with the C library (`NumberFuzzing`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = count == 0 || bytes == nil ? Data() : Data(bytes: bytes!, count: count)
    NumberFuzzing.check(data)
    if !NumberFuzzing.isOnly { Harness.shared.check(data) }
    return 0
}

/// What one path made of an input: accepted (with what it returned) or rejected (with the error).
struct Outcome: CustomStringConvertible {
    var accepted: Bool
    var detail: String

    var description: String { (accepted ? "accepted: " : "rejected: ") + detail }
}

/// Feeds each input through four paths and stops the program when they disagree:
/// (a) `StoreDecoder.decode([FuzzItem].self, …)` on one thread into store A,
/// (b) the same decode again into store A, which must change nothing (upsert is idempotent),
/// (c) the same decode with the two-thread array decode forced on (`parallelDecodingThreshold = 0`) into store B,
/// (d) `Store.importJSON(FuzzItem.self, …)` reading the bytes from a pipe into store C (batches of 2 records).
///
/// The stores are in memory, opened once and emptied between inputs.
final class Harness {
    /// `nonisolated(unsafe)`: libFuzzer runs one input at a time, on one thread, so the harness (whose oracle keeps
    /// prepared statements of the stores' connections) is never used by two threads at once.
    nonisolated(unsafe) static let shared: Harness = {
        do {
            return try Harness()
        } catch {
            fatalError("StoreFuzzer: cannot set up the stores: \(error)")
        }
    }()

    /// The stores of (a) and (b), (c), and (d), with the oracle's queries.
    let storeA: StoreDump
    let storeB: StoreDump
    let storeC: StoreDump
    let oneThread: StoreDecoder
    let twoThreads: StoreDecoder
    let importOptions: ImportOptions
    /// Whether a second decode of the same input must run no INSERT, UPDATE or DELETE at all (the design's
    /// "re-importing the same data writes nothing"), beyond leaving the same rows. On unless
    /// STORE_FUZZER_CHECK_WRITES=0.
    let checksWrites: Bool
    /// STORE_FUZZER_VERBOSE=1 prints what each path made of each input.
    let isVerbose: Bool

    init() throws {
        checksWrites = ProcessInfo.processInfo.environment["STORE_FUZZER_CHECK_WRITES"] != "0"
        isVerbose = ProcessInfo.processInfo.environment["STORE_FUZZER_VERBOSE"] == "1"
        // A pipe's reader that stops early (a syntax error) must not kill the writer thread.
        signal(SIGPIPE, SIG_IGN)
        func options(_ name: String) -> Store.Options {
            // STORE_FUZZER_TRACE=1 prints every statement the stores run, to see what a failing input does.
            guard ProcessInfo.processInfo.environment["STORE_FUZZER_TRACE"] == "1" else { return Store.Options() }
            return Store.Options(statementObserver: { sql in print("[\(name)] \(sql)") })
        }
        // STORE_FUZZER_ORDER=ranks compares ordered relationships by the order they read back in, not by the
        // numbers stored for it (see StoreDump).
        let ranks = ProcessInfo.processInfo.environment["STORE_FUZZER_ORDER"] == "ranks"
        storeA = try StoreDump(Store.inMemory(entities: FuzzModel.entities, options: options("a")), ordersAsRanks: ranks)
        storeB = try StoreDump(Store.inMemory(entities: FuzzModel.entities, options: options("c")), ordersAsRanks: ranks)
        storeC = try StoreDump(Store.inMemory(entities: FuzzModel.entities, options: options("d")), ordersAsRanks: ranks)
        oneThread = StoreDecoder()
        oneThread.parallelDecodingThreshold = nil
        twoThreads = StoreDecoder()
        twoThreads.parallelDecodingThreshold = 0
        // Small batches: duplicates and references across batches are the importer's hard cases.
        importOptions = ImportOptions(layout: .array, batchSize: 2, decoder: StoreDecoder())
    }

    func check(_ data: Data) {
        do {
            try checkOrThrow(data)
        } catch {
            fatalError("StoreFuzzer: the oracle itself failed: \(error)")
        }
    }

    private func checkOrThrow(_ data: Data) throws {
        for store in [storeA, storeB, storeC] { try store.clear() }

        let first = decode(data, into: storeA.store, with: oneThread)
        let firstDump = try storeA.raw()
        let changesBefore = try storeA.totalChanges()
        let second = decode(data, into: storeA.store, with: oneThread)
        let secondDump = try storeA.raw()
        let secondChanges = try storeA.totalChanges() - changesBefore
        let canonical = try storeA.canonical()

        let parallel = decode(data, into: storeB.store, with: twoThreads)
        let parallelDump = try storeB.canonical()

        let imported = importJSON(data, into: storeC.store)
        let importedDump = try storeC.canonical()

        if isVerbose {
            print("input: \(Self.render(data))\n  (a) \(first)\n  (b) \(second)\n  (c) \(parallel)\n  (d) \(imported)")
            print("store (a), canonical:\n" + canonical, terminator: "")
        }

        func fail(_ what: String, _ dumps: (String, String, String, String)? = nil) -> Never {
            var message = "StoreFuzzer: \(what)\n"
            message += "input (\(data.count) bytes): \(Self.render(data))\n"
            message += "(a) one thread:   \(first)\n"
            message += "(b) second time:  \(second)\n"
            message += "(c) two threads:  \(parallel)\n"
            message += "(d) importJSON:   \(imported)\n"
            if let (leftName, left, rightName, right) = dumps {
                message += Self.difference(leftName, left, rightName, right)
            }
            fatalError(message)
        }

        // (a) ⇔ (b): the same outcome, and the second decode leaves the tables exactly as the first did.
        if first.accepted != second.accepted { fail("(a) and (b) disagree on accept/reject") }
        if first.detail != second.detail { fail("(a) and (b) return or throw different things") }
        if firstDump != secondDump { fail("the second decode changed the store", ("(a)", firstDump, "(b)", secondDump)) }
        if checksWrites, first.accepted, secondChanges != 0 {
            fail("the second decode of the same input wrote \(secondChanges) rows (upsert must write nothing)")
        }
        // A rejected input changes nothing.
        if !first.accepted, !canonical.isEmpty { fail("(a) rejected the input but left rows", ("(a)", canonical, "empty", "")) }

        // (a) ⇔ (c): the two-thread decode is the one-thread decode, results and errors included.
        if first.accepted != parallel.accepted { fail("(a) and (c) disagree on accept/reject") }
        if first.detail != parallel.detail { fail("(a) and (c) return or throw different things") }
        if canonical != parallelDump { fail("(a) and (c) leave different stores", ("(a)", canonical, "(c)", parallelDump)) }

        // (a) ⇔ (d): the importer accepts what the decoder accepts and stores the same.
        if first.accepted != imported.accepted { fail("(a) and (d) disagree on accept/reject") }
        if canonical != importedDump { fail("(a) and (d) leave different stores", ("(a)", canonical, "(d)", importedDump)) }
    }

    // MARK: - The paths

    private func decode(_ data: Data, into store: Store, with decoder: StoreDecoder) -> Outcome {
        do {
            let ids = try store.write { context in
                try decoder.decode([FuzzItem].self, from: data, into: context).map(\.id)
            }
            return Outcome(accepted: true, detail: "ids \(ids)")
        } catch {
            return Outcome(accepted: false, detail: "\(error)")
        }
    }

    /// Imports `data` read from a pipe, as from standard input.
    private func importJSON(_ data: Data, into store: Store) -> Outcome {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("StoreFuzzer: pipe failed: \(String(cString: strerror(errno)))") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        // An input that fits in the pipe's buffer (64 KiB on Linux) is written before the import starts; a larger
        // one by a thread of its own, which gets EPIPE (not SIGPIPE) if the import stops reading early.
        if data.count <= 65_536 {
            Self.writeAll(data, to: writeEnd)
        } else {
            Thread { Self.writeAll(data, to: writeEnd) }.start()
        }
        do {
            let report = try store.importJSON(FuzzItem.self, from: .fileDescriptor(readEnd), options: importOptions)
            return Outcome(accepted: true, detail: "\(report.recordsRead) records")
        } catch {
            return Outcome(accepted: false, detail: "\(error)")
        }
    }

    /// Writes `data` to a pipe and closes it.
    private static func writeAll(_ data: Data, to descriptor: Int32) {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { break }  // EPIPE: the import stopped reading
                offset += written
            }
        }
        close(descriptor)
    }

    // MARK: - Messages

    private static func render(_ data: Data) -> String {
        let text = String(decoding: data.prefix(4_000), as: UTF8.self).debugDescription
        return data.count > 4_000 ? text + "…" : text
    }

    /// The lines only one of two dumps has.
    private static func difference(_ leftName: String, _ left: String, _ rightName: String, _ right: String) -> String {
        let leftRows = left.split(separator: "\n")
        let rightRows = right.split(separator: "\n")
        let onlyLeft = leftRows.filter { !rightRows.contains($0) }
        let onlyRight = rightRows.filter { !leftRows.contains($0) }
        var text = "rows only in \(leftName):\n"
        for line in onlyLeft.prefix(40) { text += "  \(line)\n" }
        text += "rows only in \(rightName):\n"
        for line in onlyRight.prefix(40) { text += "  \(line)\n" }
        return text
    }
}
