import CodableStore
import CodableStorePostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the CLI writes: standard output, standard error or a file opened with `-o`, through `write(2)`, so that a
/// failure is an error the command can report instead of a trap.
///
/// `FileHandle.write(_:)` traps on any error (a closed or full standard error killed an import with SIGILL), and
/// `print` drops errors silently (a report written to a full disk was lost with exit status 0). Every write here
/// either writes all its bytes or throws an ``OutputError`` naming the stream and the system's reason.
struct Output {
    let descriptor: Int32
    /// How messages name the stream: `standard output`, `'dump.json'`.
    let name: String
    /// The descriptor was closed when the program started (`>&-`): writing to it is an error, although a
    /// placeholder holds its number (see ``prepareStandardStreams()``).
    private let wasClosed: Bool

    static let standardOutput = Output(
        descriptor: STDOUT_FILENO, name: "standard output", wasClosed: StandardStreams.closedAtStart.contains(STDOUT_FILENO))
    static let standardError = Output(
        descriptor: STDERR_FILENO, name: "standard error", wasClosed: StandardStreams.closedAtStart.contains(STDERR_FILENO))

    private init(descriptor: Int32, name: String, wasClosed: Bool) {
        self.descriptor = descriptor
        self.name = name
        self.wasClosed = wasClosed
    }

    /// Opens `path` for writing, into whatever is there: a regular file is truncated, while a FIFO, a device
    /// (`/dev/null`) or the target of a symbolic link is written in place and never replaced by a new file.
    static func open(path: String) throws -> Output {
        let descriptor = systemOpen(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw OutputError(action: "cannot open", name: "'\(path)'", code: errno) }
        return Output(descriptor: descriptor, name: "'\(path)'", wasClosed: false)
    }

    /// Writes all of `bytes`, retrying short writes and interruptions.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        if wasClosed { throw OutputError(action: "cannot write to", name: name, reason: "it is closed") }
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw OutputError(action: "cannot write to", name: name, code: errno)
            }
            offset += written
        }
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    func write(_ text: String) throws {
        var text = text
        try text.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    /// Closes a stream opened with ``open(path:)``; `close(2)` can report a write that failed late.
    func close() throws {
        guard descriptor > STDERR_FILENO else { return }
        guard systemClose(descriptor) == 0 else { throw OutputError(action: "cannot write to", name: name, code: errno) }
    }
}

/// A write that failed: `cannot write to standard output: No space left on device`.
struct OutputError: Error, CustomStringConvertible {
    let action: String
    let name: String
    let reason: String

    init(action: String, name: String, reason: String) {
        self.action = action
        self.name = name
        self.reason = reason
    }

    /// An error from the system's `errno` value.
    init(action: String, name: String, code: Int32) {
        self.init(action: action, name: name, reason: String(cString: strerror(code)))
    }

    var description: String { "\(action) \(name): \(reason)" }
}

/// The state of the standard streams, fixed once at startup.
enum StandardStreams {
    /// The standard descriptors that were closed when the program started.
    static let closedAtStart: Set<Int32> = {
        Set([STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO].filter { fcntl($0, F_GETFD) == -1 && errno == EBADF })
    }()

    /// Makes writing to the standard streams safe; call it before anything else.
    ///
    /// - A closed pipe (`| head -1`) makes `write` fail with `EPIPE` instead of killing the process with
    ///   `SIGPIPE` in the middle of an import.
    /// - A closed standard descriptor (`2>&-`) gets `/dev/null` in its place, so that no file opened later (the
    ///   dump, the store) takes its number and receives progress lines.
    static func prepare() {
        signal(SIGPIPE, SIG_IGN)
        for descriptor in closedAtStart.sorted() {
            let placeholder = systemOpen("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
            if placeholder >= 0, placeholder != descriptor {
                dup2(placeholder, descriptor)
                _ = systemClose(placeholder)
            }
        }
    }
}

/// Writes a line to standard error. A message that cannot be written is dropped: there is nowhere else to say it.
func printError(_ text: String) {
    try? Output.standardError.write(text + "\n")
}

/// Writes `error: …` to standard error, in the words of the command line: one line, no SQL; for a store that
/// another process is writing, how long was waited (`waited`, in seconds) and the option that waits longer.
/// `explanation` follows the error on its line, after a semicolon.
func printError(_ error: any Error, waited: Double? = nil, explanation: String? = nil) {
    var text = describe(error, waited: waited)
    if let explanation {
        if text.hasSuffix(".") { text.removeLast() }
        text += "; " + explanation
    }
    printError("error: " + text)
}

private func describe(_ error: any Error, waited: Double?) -> String {
    switch error {
    case let error as ImportError:
        if let store = error.underlyingError as? StoreError, store.code == .storeBusy { return describe(store, waited: waited) }
        return "\(error)"
    case let error as StoreError where error.code == .storeBusy:
        let seconds = waited.map { $0 == $0.rounded() ? " \(Int($0)) s" : " \($0) s" } ?? ""
        return "store: the store is being written by another process; waited\(seconds) for it to finish "
            + "(wait longer with --wait SECONDS)"
    case let error as StoreError:
        return "store: \(error.message)"
    case let error as SQLiteError:
        return "store: \(error.message) (SQLite error \(error.resultCode.rawValue), \(error.resultCode.name))"
    case let error as PostgresError:
        return "store: \(error)"
    default:
        return "\(error)"
    }
}

// The system calls under names that the members above (`open`, `write`, `close`) do not shadow.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, bytes, count) }
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
