/// SipHash-1-3 with a 128-bit key over 64-bit words: a keyed hash whose outputs cannot be made to collide without the
/// key (the function Swift's `Hasher` uses, with a key the caller keeps).
package struct SipHasher13 {
    private var v0: UInt64
    private var v1: UInt64
    private var v2: UInt64
    private var v3: UInt64
    private var count: UInt64 = 0

    package init(key0: UInt64, key1: UInt64) {
        v0 = key0 ^ 0x736f_6d65_7073_6575
        v1 = key1 ^ 0x646f_7261_6e64_6f6d
        v2 = key0 ^ 0x6c79_6765_6e65_7261
        v3 = key1 ^ 0x7465_6462_7974_6573
    }

    @inline(__always)
    private mutating func round() { Self.round(&v0, &v1, &v2, &v3) }

    @inline(__always)
    private static func round(_ v0: inout UInt64, _ v1: inout UInt64, _ v2: inout UInt64, _ v3: inout UInt64) {
        v0 = v0 &+ v1
        v1 = v1.rotatedLeft(13)
        v1 ^= v0
        v0 = v0.rotatedLeft(32)
        v2 = v2 &+ v3
        v3 = v3.rotatedLeft(16)
        v3 ^= v2
        v0 = v0 &+ v3
        v3 = v3.rotatedLeft(21)
        v3 ^= v0
        v2 = v2 &+ v1
        v1 = v1.rotatedLeft(17)
        v1 ^= v2
        v2 = v2.rotatedLeft(32)
    }

    @inline(__always)
    package mutating func combine(_ word: UInt64) {
        v3 ^= word
        round()
        v0 ^= word
        count &+= 8
    }

    /// Adds bytes, eight at a time (little-endian), the last word padded with zeros; the length goes in at the end.
    ///
    /// The state is kept in locals for the loop: through `self` (an `inout`), every word loaded and stored the four
    /// words of state, 35 instructions a word instead of 21 (callgrind; a record's digest hashes 45 words).
    package mutating func combine(bytes: UnsafeRawBufferPointer) {
        let end = bytes.count
        var offset = 0
        if let base = bytes.baseAddress, end >= 8 {
            var (v0, v1, v2, v3) = (self.v0, self.v1, self.v2, self.v3)
            while offset &+ 8 <= end {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                v3 ^= word
                Self.round(&v0, &v1, &v2, &v3)
                v0 ^= word
                offset &+= 8
            }
            (self.v0, self.v1, self.v2, self.v3) = (v0, v1, v2, v3)
            count &+= UInt64(truncatingIfNeeded: offset)
            // The last 1 to 7 bytes are the high ones of the (overlapping) last eight: shifted down, the same word
            // as the bytes one by one.
            let rest = end &- offset
            let last =
                rest == 0
                ? 0 : UInt64(littleEndian: base.loadUnaligned(fromByteOffset: end &- 8, as: UInt64.self)) &>> UInt64(64 &- 8 &* rest)
            combine(last)
            combine(UInt64(end))
            return
        }
        var last: UInt64 = 0
        var shift: UInt64 = 0
        while offset < end {
            last |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        combine(last)
        combine(UInt64(end))
    }

    package consuming func finalize() -> UInt64 {
        let b = count << 56
        v3 ^= b
        round()
        v0 ^= b
        v2 ^= 0xFF
        round()
        round()
        round()
        return v0 ^ v1 ^ v2 ^ v3
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 { (self << count) | (self >> (64 - count)) }
}

extension JSONTape {
    /// A keyed hash of the value the tape holds: its structure (each value's kind, and a container's count, a
    /// string's or number's length, a Boolean's value), then the text of its strings, keys and numbers. The same JSON
    /// value written with other whitespace hashes the same; another value (another key order, number spelling or
    /// escape included) almost surely not. Nil for a tape that reads bytes it does not own (a whole-document parse).
    ///
    /// `hasher` comes keyed, with what else the digest depends on already combined.
    package func contentDigest(_ keyed: SipHasher13) -> UInt64? {
        guard input == nil else { return nil }
        var hasher = keyed
        nodes.withUnsafeBufferPointer { nodes in
            for node in nodes {
                let kind = node.info & 0xF
                let size = kind == NodeKind.bool.rawValue ? node.a : node.b
                hasher.combine(UInt64(node.info & 0xFF) | UInt64(size) << 8)
            }
        }
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }
}
