import Testing

@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore

@Suite struct ForeignKeysTests {
    /// Random sets and clears over a few fields (more than the two stored inline) agree with a dictionary.
    @Test func behavesAsADictionaryOfFieldsToRowIDs() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            var keys = ForeignKeys()
            var oracle: [Int: Int64] = [:]
            for step in 0..<60 {
                let field = Int.random(in: 0..<5, using: &generator)
                let value: Int64? = Bool.random(using: &generator) ? Int64(step * 10 + field) : nil
                keys[field] = value
                oracle[field] = value
                for field in 0..<5 {
                    #expect(keys[field] == oracle[field], "round \(round), step \(step), field \(field)")
                }
            }
        }
    }
}
