import CodableStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension CLI {
    /// Runs a shell command line in which `$CLI` is the built binary, so that a test can close or redirect the
    /// binary's standard streams (`2>&-`, `>/dev/full`) the way a user's shell does.
    static func shell(_ commandLine: String) throws -> (result: Result, reason: Process.TerminationReason) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", commandLine]
        process.environment = ProcessInfo.processInfo.environment.merging(["CLI": binary.path]) { $1 }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let result = Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
        return (result, process.terminationReason)
    }

    /// The number of issues in a store, read with the library's own connection.
    static func issueCount(_ store: String) throws -> Int64? {
        guard case .integer(let count)? = try Connection(path: store).scalar(sql: "SELECT count(*) FROM Issue") else {
            return nil
        }
        return count
    }

    static var fixture: String { fixtures.appendingPathComponent("issues-1k.json").path }
}

/// The CLI survives its own output: closed, full and broken streams are errors it reports (or progress it drops),
/// never a crash; and `-o` writes into what is at the path instead of replacing it.
@Suite(.serialized) struct CLIOutputTests {
    @Test(arguments: ["2>&-", "2>/dev/full"])
    func anImportWithAClosedOrFullStandardErrorDropsItsProgressAndCompletes(redirection: String) throws {
        let store = try CLI.temporaryDirectory().appendingPathComponent("s.sqlite").path
        let (result, reason) = try CLI.shell(#""$CLI" import issues "\#(CLI.fixture)" --store "\#(store)" \#(redirection)"#)
        #expect(reason == .exit)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("imported 1000, skipped 0"), "\(result.stdout)")
        #expect(try CLI.issueCount(store) == 897)
    }

    @Test func anImportWhoseProgressGoesToABrokenPipeCompletes() throws {
        let store = try CLI.temporaryDirectory().appendingPathComponent("s.sqlite").path
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["import", "issues", CLI.fixture, "--store", store]
        let output = Pipe()
        let error = Pipe()
        // Nobody reads standard error: its first write meets EPIPE (SIGPIPE killed the import here before).
        try error.fileHandleForReading.close()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        try error.fileHandleForWriting.close()
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        #expect(stdout.contains("imported 1000, skipped 0"), "\(stdout)")
        #expect(try CLI.issueCount(store) == 897)
    }

    @Test(arguments: [
        (">/dev/full", "cannot write to standard output: No space left on device"),
        (">&-", "cannot write to standard output: it is closed"),
    ])
    func aReportThatCannotBeWrittenIsAnErrorAfterTheImportCommitted(redirection: String, reason: String) throws {
        let store = try CLI.temporaryDirectory().appendingPathComponent("s.sqlite").path
        let (result, termination) = try CLI.shell(#""$CLI" import issues "\#(CLI.fixture)" --store "\#(store)" \#(redirection)"#)
        #expect(termination == .exit)
        #expect(result.status == 1)
        let lastLine = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(lastLine == "error: the import was committed (1000 records), but its report could not be written: \(reason)")
        #expect(try CLI.issueCount(store) == 897)
    }

    @Test func exportAndGenerateToAFullStandardOutputFailWithOneLine() throws {
        let store = try CLI.temporaryDirectory().appendingPathComponent("s.sqlite").path
        #expect(try CLI.run(["import", "issues", CLI.fixture, "--store", store]).status == 0)
        for commandLine in [#""$CLI" export issues --store "\#(store)" >/dev/full"#, #""$CLI" generate issues --count 20000 >/dev/full"#] {
            let (result, reason) = try CLI.shell(commandLine)
            #expect(reason == .exit, "\(commandLine)")
            #expect(result.status == 1, "\(commandLine)")
            #expect(result.stderr == "error: cannot write to standard output: No space left on device\n", "\(commandLine)")
        }
        // `-o` on a full device, a private one (major 1, minor 7) where the test may make it, so that a regression
        // that replaces the device with a file cannot harm the machine's /dev/full.
        let privateFull = try CLI.temporaryDirectory().appendingPathComponent("full").path
        let full = mknod(privateFull, S_IFCHR | 0o666, dev_t((1 << 8) | 7)) == 0 ? privateFull : "/dev/full"
        let generated = try CLI.run(["generate", "issues", "--count", "20000", "-o", full])
        #expect(generated.status == 1)
        #expect(generated.stderr == "error: cannot write to '\(full)': No space left on device\n")
    }

    @Test func generateWritesIntoAFIFOASymbolicLinkAndADeviceWithoutReplacingThem() throws {
        let directory = try CLI.temporaryDirectory()
        // A FIFO: the bytes reach its reader, and it is still a FIFO afterwards.
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        let copy = directory.appendingPathComponent("copy.json").path
        reader.arguments = ["-c", #"cat "\#(fifo)" > "\#(copy)""#]
        try reader.run()
        let generated = try CLI.run(["generate", "issues", "--count", "40", "-o", fifo])
        // A FIFO replaced by a file never gets a writer: end its reader rather than wait forever.
        if (try? fileType(fifo)) != S_IFIFO { reader.terminate() }
        reader.waitUntilExit()
        #expect(generated.status == 0, "\(generated.stderr)")
        #expect(try fileType(fifo) == S_IFIFO)
        let reference = try CLI.run(["generate", "issues", "--count", "40"])
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: copy)), as: UTF8.self) == reference.stdout)

        // A symbolic link: its target receives the dump, and the link stays a link.
        let target = directory.appendingPathComponent("target.json").path
        let link = directory.appendingPathComponent("link.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try CLI.run(["generate", "issues", "--count", "40", "-o", link]).status == 0)
        #expect(try fileType(link, followingLinks: false) == S_IFLNK)
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: target)), as: UTF8.self) == reference.stdout)

        // A character device (a private copy of /dev/null, major 1 minor 3, where the test may make one): still a device.
        let device = directory.appendingPathComponent("null").path
        if mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0 {
            #expect(try CLI.run(["generate", "issues", "--count", "40", "-o", device]).status == 0)
            #expect(try fileType(device) == S_IFCHR)
            #expect(try CLI.run(["export", "issues", "--store", directory.appendingPathComponent("none.sqlite").path, "-o", device]).status != 0)
            #expect(try fileType(device) == S_IFCHR)
        }
    }

    private func fileType(_ path: String, followingLinks: Bool = true) throws -> mode_t {
        var info = stat()
        let code = followingLinks ? stat(path, &info) : lstat(path, &info)
        guard code == 0 else { throw CocoaError(.fileNoSuchFile) }
        return info.st_mode & S_IFMT
    }
}
