@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore
import Testing

/// `FieldSet` holds field indexes 0..<128 in two words; both ways of listing them give each index once, ascending.
@Suite struct FieldSetTests {
    @Test(arguments: [[], [0], [63], [64], [127], [0, 1, 2, 63, 64, 65, 100, 127], Array(0..<128), [5, 70, 6, 71]])
    func theIndexesComeOutAscendingFromBothWords(_ inserted: [Int]) {
        var set = FieldSet()
        for index in inserted { set.insert(index) }
        var visited: [Int] = []
        set.forEachIndex { visited.append($0) }
        let expected = Array(Set(inserted)).sorted()
        #expect(visited == expected)
        #expect(set.indexes == expected)
        #expect(set.isEmpty == inserted.isEmpty)
        for index in 0..<FieldSet.capacity { #expect(set.contains(index) == expected.contains(index)) }
    }

    @Test func removingAnIndexLeavesTheOthers() {
        var set = FieldSet()
        for index in [3, 64, 90] { set.insert(index) }
        set.remove(64)
        var visited: [Int] = []
        set.forEachIndex { visited.append($0) }
        #expect(visited == [3, 90])
    }
}
