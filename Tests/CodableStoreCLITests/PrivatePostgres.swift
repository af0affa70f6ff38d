import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of one test's own, which the test stops, starts, kills sessions of, or fills the disk of (the
/// shared server of `Scripts/with-postgres` must stay up for the other tests): initdb into a temporary folder (on a
/// tmpfs of its own when asked), a free local port. As root, the cluster belongs to the `postgres` user, which the
/// server requires.
final class PrivatePostgres: @unchecked Sendable {  // used by one test at a time (serialized suites)
    /// The folder of PostgreSQL's programs (`/usr/lib/postgresql/15/bin`), nil when it is not installed.
    static let programs: String? = {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.sorted { $0.compare($1, options: .numeric) == .orderedAscending }
            .map { "\(root)/\($0)/bin" }
            .last { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") }
    }()

    static var isAvailable: Bool { programs != nil }
    /// Whether a tmpfs can be mounted here (root, in a machine or container that allows it): for a server whose disk
    /// fills up. Tried once.
    static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        let folder = "/tmp/codablestore-mount-probe-\(UUID().uuidString.prefix(8))"
        guard (try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        guard (try? shell("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", folder])) != nil else { return false }
        return (try? shell("/bin/umount", [folder])) != nil
    }()

    let folder: String
    let port: Int
    private let mounted: Bool
    var url: String { "postgres://codablestore@127.0.0.1:\(port)/postgres" }

    /// Creates and starts the cluster; with `diskMiB`, its data directory is on a tmpfs of that size.
    init(diskMiB: Int? = nil) throws {
        folder = "/tmp/codablestore-private-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        mounted = diskMiB != nil
        if let diskMiB { try Self.shell("/bin/mount", ["-t", "tmpfs", "-o", "size=\(diskMiB)m", "tmpfs", folder]) }
        chmod(folder, 0o755)
        if getuid() == 0 { try Self.shell("/bin/chown", ["postgres:", folder]) }
        port = try Self.freePort()
        try asOwner("initdb", ["-D", "\(folder)/data", "-U", "codablestore", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"])
        try start()
    }

    deinit { try? shutDown() }

    /// Stops the server and removes its folder (what the deinitializer does; a shared server is never deinitialized).
    func shutDown() throws {
        guard FileManager.default.fileExists(atPath: folder) else { return }
        _ = try? asOwner("pg_ctl", ["-D", "\(folder)/data", "-m", "immediate", "stop"])
        if mounted { try Self.shell("/bin/umount", [folder]) }
        try FileManager.default.removeItem(atPath: folder)
    }

    func start() throws {
        try asOwner(
            "pg_ctl",
            ["-D", "\(folder)/data", "-l", "\(folder)/server.log", "-w", "-t", "60",
             "-o", "-p \(port) -k \(folder) -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
    }

    /// Stops the server at once, as a crash or `pg_ctl stop -m immediate` would: sessions end without a word.
    func stopImmediately() throws {
        try asOwner("pg_ctl", ["-D", "\(folder)/data", "-m", "immediate", "stop"])
    }

    var isRunning: Bool { (try? asOwner("pg_ctl", ["-D", "\(folder)/data", "status"])) != nil }

    /// Waits (up to a minute) until the server accepts connections: after it restarted by itself (a crash), it
    /// recovers first; a server that stopped (out of room for its write-ahead log, it shuts down, which takes a
    /// moment after the failed import has ended) is started again.
    func waitUntilReady() throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while (try? sql("SELECT 1")) == nil, ContinuousClock.now < deadline {
            if !isRunning { try start() }
            Thread.sleep(forTimeInterval: 0.1)
        }
        try sql("SELECT 1")
    }

    /// Runs SQL with psql, returning its unaligned output.
    @discardableResult
    func sql(_ statement: String) throws -> String {
        try Self.shell("\(Self.programs!)/psql", ["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", statement])
    }

    /// Gives the tmpfs of the data directory `diskMiB`.
    func resizeDisk(toMiB diskMiB: Int) throws {
        try Self.shell("/bin/mount", ["-o", "remount,size=\(diskMiB)m", folder])
    }

    /// Runs one of PostgreSQL's programs, as the `postgres` user when this process is root.
    @discardableResult
    private func asOwner(_ program: String, _ arguments: [String]) throws -> String {
        let path = "\(Self.programs!)/\(program)"
        return getuid() == 0
            ? try Self.shell("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments) : try Self.shell(path, arguments)
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let command: String
        let output: String
        var description: String { "\(command) failed: \(output)" }
    }

    /// Runs a program and returns its output (standard output and error), with posix_spawn and waitpid:
    /// Foundation's `Process` missed the exit of `runuser` when the program it ran left a daemon behind
    /// (`pg_ctl start`), and waited for ever.
    @discardableResult
    static func shell(_ executable: String, _ arguments: [String]) throws -> String {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw CommandFailed(command: executable, output: String(cString: strerror(errno))) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 2)
        // Nothing else of this process's (the pipes of other tests' processes, run meanwhile) reaches the program,
        // nor the server it may leave running.
        let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
        for descriptor in open where descriptor > 2 && descriptor != pipe[1] {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        posix_spawn_file_actions_addclose(&actions, pipe[1])
        var pid: pid_t = 0
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(pipe[1])
        defer { close(pipe[0]) }
        guard spawned == 0 else { throw CommandFailed(command: executable, output: String(cString: strerror(spawned))) }
        // The server pg_ctl starts keeps no end of the pipe (its output goes to its log): the read ends.
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 14)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(pipe[0], $0.baseAddress, $0.count) }
            if count > 0 { data.append(contentsOf: buffer[0..<count]) } else if count == 0 || errno != EINTR { break }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // Exited normally with 0 (WIFEXITED and WEXITSTATUS, by hand: they are macros).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw CommandFailed(command: ([executable] + arguments).joined(separator: " "), output: text)
        }
        return text
    }

    /// A port nobody listens on: the kernel's pick for a socket closed again at once.
    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
            }
        }
        guard bound else { throw CommandFailed(command: "bind", output: String(cString: strerror(errno))) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
