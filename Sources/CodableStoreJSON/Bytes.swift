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

extension String {
    /// A string of UTF-8 that is known to be valid: the bytes of a tape, which the reader validated strictly
    /// (`JSONTextValidator`) and whose escapes were decoded into valid UTF-8 (surrogates paired). Made without the
    /// validation `String(decoding:as:)` repeats: about 2.4x faster for a 450-byte string, and strings are most of
    /// what decoding a record makes. Debug builds check the promise. (`UTF8Span` needs the Swift 6.2 runtime: on
    /// older Apple systems the string is validated as before.)
    @inline(__always)
    init(validatedUTF8 bytes: UnsafeRawBufferPointer) {
        let buffer = bytes.assumingMemoryBound(to: UInt8.self)
        assert(String(decoding: buffer, as: UTF8.self).utf8.elementsEqual(buffer), "tape bytes are not valid UTF-8")
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            self = String(copying: unsafe UTF8Span(unchecked: buffer.span))
        } else {
            self = String(decoding: buffer, as: UTF8.self)
        }
    }
}
