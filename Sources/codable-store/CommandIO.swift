import ArgumentParser
import Foundation

/// Writes a command's whole text to `-o PATH` or standard output; on failure, says why and exits with 1.
func writeResult(_ text: String, to path: String?) throws {
    do {
        let destination = try path.map { try Output.open(path: $0) } ?? .standardOutput
        try destination.write(text)
        try destination.close()
    } catch {
        printError(error)
        throw ExitCode.failure
    }
}

/// The text of a file the command reads (`-` for standard input), and the name messages give it; on failure, says
/// why and exits with 1.
func readInput(_ path: String) throws -> (text: String, name: String) {
    // With the system's calls rather than Foundation's `Data(contentsOf:)`: a model file is read before an import
    // whose peak memory is measured, and the URL, FileManager and ProcessInfo code that reading pulls in costs the
    // process 0.7 MiB of resident pages for a file of a few hundred bytes.
    let descriptor = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw inputError(path, errno) }
    defer { if descriptor != STDIN_FILENO { close(descriptor) } }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count == 0 { break }
        if count < 0 {
            if errno == EINTR { continue }
            throw inputError(path, errno)
        }
        bytes.append(contentsOf: chunk[..<count])
    }
    return (String(decoding: bytes, as: UTF8.self), path == "-" ? "<stdin>" : path)
}

private func inputError(_ path: String, _ code: Int32) -> ExitCode {
    printError("error: cannot read \(path): \(String(cString: strerror(code)))")
    return ExitCode.failure
}
