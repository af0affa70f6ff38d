#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library's byte search and comparison (`memchr`, `memcmp`, vectorized there): the one place the JSON layer
/// reaches them.
enum Bytes {
    /// The offset of the first `byte` among `count` bytes at `start`, if there is one.
    @inline(__always)
    static func firstIndex(of byte: UInt8, in start: UnsafeRawPointer, count: Int) -> Int? {
        guard count > 0, let found = memchr(start, Int32(byte), count) else { return nil }
        return UnsafeRawPointer(found) - start
    }

    /// Whether the `count` bytes at `a` and at `b` are the same (true for no bytes, whatever the pointers).
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer?, _ b: UnsafeRawPointer?, count: Int) -> Bool {
        count == 0 || memcmp(a!, b!, count) == 0
    }
}
