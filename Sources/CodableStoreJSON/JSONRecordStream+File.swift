#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension JSONRecordStream {
    /// The chunk size of the `read` methods: 64 KiB.
    public static let defaultChunkSize = 64 * 1024

    /// A file that cannot be opened or read.
    public struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The file, when known.
        public var path: String?
        /// `open` or `read`.
        public var operation: String
        /// The `errno` value.
        public var code: Int32

        package init(path: String?, operation: String, code: Int32) {
            self.path = path
            self.operation = operation
            self.code = code
        }

        public var description: String {
            "cannot \(operation) \(path.map { "'\($0)'" } ?? "input"): \(systemMessage) (errno \(code))"
        }

        /// The system's text for ``code`` (`strerror`).
        public var systemMessage: String { String(cString: strerror(code)) }
    }

    /// Reads a file to its end in chunks, calling `onRecord` for every record, then ``finish(_:)``.
    public func read(
        contentsOfFile path: String,
        chunkSize: Int = defaultChunkSize,
        _ onRecord: RecordHandler
    ) throws {
        let descriptor = try JSONInput.open(path)
        defer { close(descriptor) }
        try read(.fileDescriptor(descriptor, path: path), chunkSize: chunkSize, onRecord)
    }

    /// Reads a file to its end in chunks, calling `onRecord` for every record, then ``finish(_:)``.
    public func read(contentsOf url: URL, chunkSize: Int = defaultChunkSize, _ onRecord: RecordHandler) throws {
        try read(contentsOfFile: url.path(percentEncoded: false), chunkSize: chunkSize, onRecord)
    }

    /// Reads an open file descriptor (a file, a pipe, standard input) to its end in chunks, calling `onRecord` for
    /// every record, then ``finish(_:)``. The descriptor is not closed.
    public func read(
        fileDescriptor: Int32,
        chunkSize: Int = defaultChunkSize,
        _ onRecord: RecordHandler
    ) throws {
        try read(.fileDescriptor(fileDescriptor, path: nil), chunkSize: chunkSize, onRecord)
    }

    /// Reads `input` to its end in chunks, calling `onRecord` for every record, then ``finish(_:)``.
    package func read(
        _ input: JSONInput, chunkSize: Int = defaultChunkSize, isCancelled: () -> Bool = { false },
        _ onRecord: RecordHandler
    ) throws {
        try input.forEachChunk(size: chunkSize, isCancelled: isCancelled) { chunk in try feed(chunk, onRecord) }
        try finish(onRecord)
    }
}

/// Where a record stream's bytes come from: memory, or a file descriptor read in chunks. The one place where
/// input is read (the importer's reader thread, the two-thread array decode and ``JSONRecordStream``'s `read`
/// methods all come here).
package enum JSONInput {
    /// Bytes in memory; the caller keeps them alive while they are read.
    case bytes(UnsafeRawBufferPointer)
    /// An open descriptor (a file, a pipe, standard input), not closed here; `path` names it in errors.
    case fileDescriptor(Int32, path: String?)

    /// How long a read waits for input before asking `isCancelled`, in milliseconds: a reader blocked on a pipe
    /// that stays open (`tail -f dump.jsonl | codable-store import …`) still ends when its consumer stops.
    package static let pollInterval: Int32 = 100

    /// Opens a file for reading.
    package static func open(_ path: String) throws(JSONRecordStream.ReadError) -> Int32 {
        let descriptor = systemOpen(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw JSONRecordStream.ReadError(path: path, operation: "open", code: errno) }
        return descriptor
    }

    /// Closes a descriptor made by ``open(_:)``.
    package static func close(_ descriptor: Int32) { _ = systemClose(descriptor) }

    /// The size of the input when it is known in advance (memory, a regular file).
    package var totalBytes: Int? {
        switch self {
        case .bytes(let bytes):
            return bytes.count
        case .fileDescriptor(let descriptor, _):
            var status = stat()
            guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
            return Int(status.st_size)
        }
    }

    /// Calls `body` with consecutive chunks of at most `size` bytes until the input ends. While waiting for input
    /// on a descriptor it asks `isCancelled` every ``pollInterval`` and throws ``Cancelled`` when it says so.
    package func forEachChunk(
        size: Int, isCancelled: () -> Bool = { false }, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        precondition(size > 0, "chunkSize must be positive")
        switch self {
        case .bytes(let bytes):
            var start = 0
            while start < bytes.count {
                let end = min(start + size, bytes.count)
                try body(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                start = end
            }
        case .fileDescriptor(let descriptor, let path):
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                while true {
                    let ready = poll(&waiting, 1, Self.pollInterval)
                    if ready > 0 || (ready < 0 && errno != EINTR) { break }  // input, end, or an error read reports
                    if isCancelled() { throw Cancelled() }
                }
                let count = systemRead(descriptor, buffer.baseAddress, size)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw JSONRecordStream.ReadError(path: path, operation: "read", code: errno)
                }
                if count == 0 { return }
                try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }

    /// Thrown by a read that was told to stop.
    package struct Cancelled: Error {
        package init() {}
    }
}

/// `open(2)`, `close(2)` and `read(2)`, out of reach by those names inside types that have their own.
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
