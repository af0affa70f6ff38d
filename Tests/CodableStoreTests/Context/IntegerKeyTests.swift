import Testing

@testable import CodableStore

/// `IntegerKey`: the key of the context's registries and integer identity index, hashed without SipHash.
@Suite struct IntegerKeyTests {
    @Test func aDictionaryOfIntegerKeysAgreesWithOneOfInt64() {
        var keyed: [IntegerKey: Int] = [:]
        var plain: [Int64: Int] = [:]
        var state: UInt64 = 7
        for step in 0..<50_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let key = Int64(bitPattern: state >> 50) - 4_000  // a narrow range: keys come back often
            if step % 3 == 0 {
                #expect(keyed.removeValue(forKey: IntegerKey(key)) == plain.removeValue(forKey: key))
            } else {
                #expect(keyed.updateValue(step, forKey: key) == plain.updateValue(step, forKey: key))
            }
            keyed[key, default: 0] += 1
            plain[key, default: 0] += 1
        }
        #expect(keyed.count == plain.count)
        #expect(Dictionary(uniqueKeysWithValues: keyed.map { ($0.key.value, $0.value) }) == plain)
        #expect(plain.keys.allSatisfy { keyed[$0] == plain[$0] })
    }

    /// Dictionaries take a hash's low bits for the bucket: keys that differ only in high bits (row ids of a
    /// stride, identities that are multiples of a power of two) must still spread over the buckets.
    @Test(arguments: [0, 20, 40, 53])
    func keysThatDifferOnlyInHighBitsSpreadOverTheLowBits(_ shift: Int) {
        let seed = 0x1234_5678
        let keys = (Int64(0)..<1_024).map { $0 << shift }  // 1023 << 53 still fits
        let buckets = Set(keys.map { IntegerKey($0)._rawHashValue(seed: seed) & 1_023 })
        // Random hashes would fill about 1 - 1/e of 1,024 buckets (647); a weak mix fills far fewer.
        #expect(buckets.count > 560, "\(buckets.count) of 1024 buckets")
        // Another seed gives other buckets: the seed is mixed in, not added after the fact.
        let other = keys.map { IntegerKey($0)._rawHashValue(seed: seed + 1) & 1_023 }
        #expect(zip(keys.map { IntegerKey($0)._rawHashValue(seed: seed) & 1_023 }, other).filter { $0 == $1 }.count < 16)
    }
}
