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
            let message = String(cString: strerror(code))
            return "cannot \(operation) \(path.map { "'\($0)'" } ?? "input"): \(message) (errno \(code))"
        }
    }

    /// Reads a file to its end in chunks, calling `onRecord` for every record, then ``finish(_:)``.
    public func read(
        contentsOfFile path: String,
        chunkSize: Int = defaultChunkSize,
        _ onRecord: RecordHandler
    ) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ReadError(path: path, operation: "open", code: errno) }
        defer { close(descriptor) }
        try read(fileDescriptor: descriptor, path: path, chunkSize: chunkSize, onRecord)
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
        try read(fileDescriptor: fileDescriptor, path: nil, chunkSize: chunkSize, onRecord)
    }

    private func read(
        fileDescriptor: Int32,
        path: String?,
        chunkSize: Int,
        _ onRecord: RecordHandler
    ) throws {
        precondition(chunkSize > 0, "chunkSize must be positive")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = systemRead(fileDescriptor, buffer.baseAddress, chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(path: path, operation: "read", code: errno)
            }
            if count == 0 { break }
            try feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), onRecord)
        }
        try finish(onRecord)
    }
}

/// `read(2)`, out of reach by that name inside `JSONRecordStream`.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
