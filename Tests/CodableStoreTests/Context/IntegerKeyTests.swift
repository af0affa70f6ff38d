import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

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

    /// `IdentityKey` hashes a single integer as `IntegerKey` does and anything else with SipHash: sets of mixed keys
    /// must still find each key, equal keys in either form meet, and a single integer spreads like an `IntegerKey`.
    @Test func identityKeysOfEveryShapeInASet() {
        let integers = (Int64(0)..<2_000).map { Context.IdentityKey(single: .integer($0 * 1_000_003)) }
        let texts = (0..<2_000).map { Context.IdentityKey(single: .text("login-\($0)")) }
        let composite = (0..<2_000).map { Context.IdentityKey([.text("team-\($0 % 7)"), .integer(Int64($0))]) }
        let reals = (0..<2_000).map { Context.IdentityKey(single: .real(Double($0))) }  // 5.0 is not 5
        var set = Set<Context.IdentityKey>()
        for key in integers + texts + composite + reals { #expect(set.insert(key).inserted) }
        #expect(set.count == 8_000)
        #expect(integers.allSatisfy { set.contains($0) } && texts.allSatisfy { set.contains($0) })
        #expect(composite.allSatisfy { set.contains($0) } && reals.allSatisfy { set.contains($0) })
        // Built from one value or from an array of one, a key is the same key.
        #expect(set.contains(Context.IdentityKey([.integer(7 * 1_000_003)])))
        #expect(!set.insert(Context.IdentityKey([.text("login-3")])).inserted)
        #expect(Context.IdentityKey(single: .integer(42))._rawHashValue(seed: 9) == IntegerKey(42)._rawHashValue(seed: 9))
    }
}
