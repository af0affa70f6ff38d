import CodableStoreCore

/// The identity keys an import inserted into a table that was empty: `mayContain` is false only for keys never
/// inserted. The importer gives it to the context as the entity's ``Context/StoredKeys`` (every stored key is one it
/// inserted), and it survives the evictions that make the context's identity index incomplete.
///
/// While every key is a single integer and they are dense (the range from the lowest to the highest takes no more
/// bits than the Bloom filter below would for the keys expected), a bitmap of that range, one bit an integer: exact,
/// and a tenth of the filter's size (125 KB for the ids of a million records numbered from 1, in any order). It is
/// kept in chunks of 4,096 integers (512 bytes), made when a key first falls in one: widening it to a new lowest or
/// highest key copies the list of chunks, never the bits, so a dump in no order does not allocate, copy and free
/// ever larger arrays (which left the heap in pieces: 69 MiB peak at 3M shuffled records against 63 MiB in order).
/// A key that does not fit it (another kind of key, or an integer that would make the range too sparse) turns it
/// into the filter, its keys included.
///
/// The Bloom filter: about 1% false positives at 10 bits per key (1.2 MB for a million); past its capacity it adds
/// a layer twice as large (each layer adds its ~1%), so it never needs to know the final count. A false positive
/// only costs a query. Blocked: all the probes of a key fall in one 64-byte block (one cache line), so a lookup in a
/// filter far larger than the CPU caches costs one memory access instead of one per probe.
///
/// Bounded: the bitmap (its chunks and their list) and the filter each take at most ``maximumBytes``
/// (``defaultMaximumBytes``, 2 MiB: 16.5 million integers, or 1.7 million keys at 1%), whatever the number of keys. Past it, the filter's last layer takes
/// the keys beyond its capacity, and its false positives rise with them (about 7% at 2.7 million keys in 2 MiB).
/// Single integer keys outside the range of those inserted are ruled out without a bit: a dump in the order of its
/// integer identities (or the reverse) has no false positive for its new keys, whatever its size.
final class IdentityFilter: Context.StoredKeys {
    typealias IdentityKey = Context.IdentityKey

    // Unchecked: read for every key a batch mentions; the filter belongs to its context's thread.
    @exclusivity(unchecked) private var layers: [(words: [UInt64], capacity: Int, count: Int)] = []
    /// The bitmap, used while `layers` is empty: chunk `c` holds the integers from `base + c * chunkBits` on (bit `i`
    /// of its word `w`: `base + c * chunkBits + 64 * w + i`), nil while no key fell in it. `base` is a multiple of
    /// `chunkBits`.
    @exclusivity(unchecked) private var chunks: [[UInt64]?] = []
    @exclusivity(unchecked) private var base: Int64 = 0
    /// The chunks made.
    @exclusivity(unchecked) private var chunksMade = 0
    private static let chunkShift: Int64 = 12
    private static let chunkBits: Int64 = 1 << chunkShift
    private static let chunkWords = Int(chunkBits / 64)
    /// What a chunk takes: its words, and its place in the list.
    private static let chunkBytes = chunkWords * 8 + 8
    /// The smallest and the largest single integer key inserted (`lowest > highest` while there is none).
    @exclusivity(unchecked) private var lowest = Int64.max
    @exclusivity(unchecked) private var highest = Int64.min
    /// The keys inserted.
    @exclusivity(unchecked) private var count = 0
    private let expectedCount: Int
    private static let hashes = 7
    private static let wordsPerBlock = 8
    /// The most bytes the bitmap, and then the filter's layers, take.
    let maximumBytes: Int
    /// The default of ``maximumBytes``: 2 MiB, 16.5 million integers in the bitmap or 1.7 million keys at about 1%
    /// false positives in the filter.
    static let defaultMaximumBytes = 2 << 20

    init(expectedCount: Int, maximumBytes: Int = defaultMaximumBytes) {
        self.expectedCount = min(max(expectedCount, 0), 1 << 40)
        self.maximumBytes = max(maximumBytes, Self.wordsPerBlock * 8)
    }

    /// The bytes the bitmap (its chunks, and their list) or the layers take.
    var byteCount: Int {
        chunksMade * Self.chunkWords * 8 + chunks.count * 8 + layers.reduce(0) { $0 + $1.words.count * 8 }
    }

    /// Whether the keys are in a bitmap (exact) rather than a Bloom filter.
    var isExact: Bool { layers.isEmpty }

    /// How many keys `bytes` hold at ~10 bits each, in whole blocks (at least one).
    private static func capacity(bytes: Int) -> Int { max(bytes / (wordsPerBlock * 8), 1) * 512 / 10 }

    private func addLayer(capacity: Int) {
        // ~10 bits per key, in whole blocks of 512 bits.
        let blocks = (capacity * 10 + 511) / 512
        layers.append((Array(repeating: 0, count: blocks * Self.wordsPerBlock), capacity, 0))
    }

    /// Past the last layer's capacity: a layer twice as large, or as large as what ``maximumBytes`` leaves if that
    /// is less, but never smaller than the last layer. When that does not fit, the last layer takes every key from
    /// now on (its capacity is then unbounded).
    private func grow() {
        let last = layers[layers.count - 1].capacity
        let left = maximumBytes - byteCount
        let capacity = left >= Self.wordsPerBlock * 8 ? min(2 * last, Self.capacity(bytes: left)) : 0
        if capacity >= last {
            addLayer(capacity: capacity)
        } else {
            layers[layers.count - 1].capacity = .max
        }
    }

    private static func hash(_ key: IdentityKey) -> UInt64 {
        // A single integer through a 64-bit finalizer, anything else through SipHash (see IdentityKey).
        UInt64(bitPattern: Int64(key._rawHashValue(seed: 0)))
    }

    /// The first word of the key's block, and seven 9-bit positions in the block (a second, remixed hash), from
    /// the key's hash. The bits are set and tested in place, one word each: building them in a SIMD8 first cost
    /// a store and a load per lane written (about 230 instructions a probe).
    @inline(__always)
    private static func probes(_ hash: UInt64, words: Int) -> (block: Int, positions: UInt64) {
        let block = Int((hash >> 32) % UInt64(words / wordsPerBlock)) * wordsPerBlock
        var positions = hash &* 0x9E37_79B9_7F4A_7C15
        positions ^= positions >> 29
        return (block, positions)
    }

    func insert(_ key: IdentityKey) {
        count += 1
        if let integer = key.singleInteger {
            lowest = min(lowest, integer)
            highest = max(highest, integer)
            if layers.isEmpty {
                if setBit(integer) { return }
                makeLayers()
            }
        } else if layers.isEmpty {
            makeLayers()
        }
        insertInLayers(key)
    }

    /// Sets the bit of `integer` (within `lowest...highest` already), widening the bitmap to reach it; false when
    /// that range would take more bits than the layers would for the keys expected (or than ``maximumBytes``).
    private func setBit(_ integer: Int64) -> Bool {
        // The offset from the bitmap's first key can overflow (a key near Int64.max after one near Int64.min): then
        // the key is outside the bitmap, and the range too large for one.
        var (offset, overflow) = integer.subtractingReportingOverflow(base)
        if chunks.isEmpty || overflow || offset < 0 || offset >> Self.chunkShift >= Int64(chunks.count) {
            guard widenBitmap() else { return false }
            offset = integer &- base  // within the widened bitmap's span
        }
        let chunk = Int(offset >> Self.chunkShift)
        let bit = Int(offset & (Self.chunkBits - 1))
        if chunks[chunk] == nil {
            chunks[chunk] = Array(repeating: 0, count: Self.chunkWords)
            chunksMade += 1
        }
        chunks[chunk]![bit >> 6] |= 1 << UInt64(bit & 63)
        return true
    }

    /// Makes the list of chunks cover `lowest...highest` (the chunks made keep their bits); false, changing nothing,
    /// when that range is too large.
    private func widenBitmap() -> Bool {
        let limit = min(maximumBytes / Self.chunkBytes, 10 * max(expectedCount, count, 1 << 16) / Int(Self.chunkBits))
        // Chunk numbers (an arithmetic shift rounds down): every bit set is of a key within `first...last`.
        let first = lowest >> Self.chunkShift
        let last = highest >> Self.chunkShift
        let (span, overflow) = last.subtractingReportingOverflow(first)
        guard !overflow, span < Int64(limit) else { return false }
        let shift = chunks.isEmpty ? 0 : Int((base >> Self.chunkShift) - first)
        var widened = [[UInt64]?](repeating: nil, count: Int(span + 1))
        for index in chunks.indices where chunks[index] != nil { swap(&widened[shift + index], &chunks[index]) }
        chunks = widened
        base = first << Self.chunkShift
        return true
    }

    /// Turns the bitmap into the Bloom filter: layers for the keys expected, within ``maximumBytes``, holding
    /// every key the bitmap held.
    private func makeLayers() {
        let bits = chunks
        chunks = []
        chunksMade = 0
        addLayer(capacity: min(max(expectedCount, count, 1 << 16), Self.capacity(bytes: maximumBytes)))
        for (chunk, words) in bits.enumerated() {
            guard let words else { continue }
            let start = base &+ Int64(chunk) << Self.chunkShift
            for (index, word) in words.enumerated() where word != 0 {
                var word = word
                while word != 0 {
                    insertInLayers(IdentityKey(single: .integer(start &+ Int64(index * 64 + word.trailingZeroBitCount))))
                    word &= word - 1
                }
            }
        }
    }

    private func insertInLayers(_ key: IdentityKey) {
        if layers[layers.count - 1].count >= layers[layers.count - 1].capacity { grow() }
        let last = layers.count - 1
        let (block, first) = Self.probes(Self.hash(key), words: layers[last].words.count)
        var positions = first
        layers[last].words.withUnsafeMutableBufferPointer { words in
            for _ in 0..<Self.hashes {
                let position = Int(positions & 511)
                words[block + (position >> 6)] |= 1 << UInt64(position & 63)
                positions >>= 9
            }
        }
        layers[last].count += 1
    }

    func mayContain(_ key: IdentityKey) -> Bool {
        if let integer = key.singleInteger {
            // Outside the range of the integers inserted (all of it while none was): not inserted, no bit read.
            if integer < lowest || integer > highest { return false }
            if layers.isEmpty {
                let offset = integer &- base
                let bit = Int(offset & (Self.chunkBits - 1))
                guard let word = chunks[Int(offset >> Self.chunkShift)]?[bit >> 6] else { return false }
                return word & (1 << UInt64(bit & 63)) != 0
            }
        } else if layers.isEmpty {
            return false  // only integers were inserted
        }
        // One hash for every layer (a key not stored is looked for in all of them: 5 at 1M keys).
        let hash = Self.hash(key)
        return layers.contains { layer in
            let (block, first) = Self.probes(hash, words: layer.words.count)
            var positions = first
            return layer.words.withUnsafeBufferPointer { words in
                for _ in 0..<Self.hashes {
                    let position = Int(positions & 511)
                    // Most keys that were never inserted miss at the first or second bit.
                    if words[block + (position >> 6)] & (1 << UInt64(position & 63)) == 0 { return false }
                    positions >>= 9
                }
                return true
            }
        }
    }
}
