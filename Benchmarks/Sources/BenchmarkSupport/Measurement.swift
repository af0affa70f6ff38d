import Foundation

/// The value of `--name value` on the command line.
public func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// This process's peak resident memory (`VmHWM`), in MiB.
public func peakRSSMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    return (Double(line.split(separator: " ").dropFirst().first.map(String.init) ?? "0") ?? 0) / 1024
}

/// The CPU time (user and system, all threads) this process has used so far, in seconds.
public func processCPUSeconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Runs `body`, returning its result with the wall time and the CPU time (all threads) it took, in seconds.
public func measured<T>(_ body: () throws -> T) rethrows -> (value: T, seconds: Double, cpu: Double) {
    let clock = ContinuousClock()
    let (start, cpu) = (clock.now, processCPUSeconds())
    let value = try body()
    return (value, seconds(clock.now - start), processCPUSeconds() - cpu)
}

/// A duration in seconds.
public func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `executable` with `arguments`, waits for it, and returns what it printed on standard output; a failure
/// stops the benchmark, with that output.
@discardableResult
public func runProcess(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { fatalError("\(executable) \(arguments) failed: \(output)") }
    return output
}

/// Runs this executable again as a child process with `arguments`, and returns the fields of the one line it
/// prints: each contender runs alone, so its peak memory is its own.
public func runChild(_ arguments: [String]) throws -> [String] {
    try runProcess(CommandLine.arguments[0], arguments)
        .split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
}
