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
    do {
        let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        return (String(decoding: data, as: UTF8.self), path == "-" ? "<stdin>" : path)
    } catch {
        printError("error: cannot read \(path): \((error as NSError).localizedDescription)")
        throw ExitCode.failure
    }
}
