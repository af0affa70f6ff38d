@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore
import Testing

/// `CodingPathNode` keeps its last components inline and the rest in a linked list: every sequence of keys and
/// indexes must come back as it was appended, whichever parts ended up inline.
@Suite struct CodingPathTests {
    private enum Step: Equatable {
        case key(String)
        case index(Int)
    }

    private func rendered(_ steps: [Step]) -> String {
        CodingPathNode.render(steps.map { step -> any CodingKey in
            switch step {
            case .key(let key): CodingKeys(stringValue: key)
            case .index(let index): IndexKey(index: index)
            }
        })
    }

    private func appended(_ steps: [Step], to start: CodingPathNode = .root) -> CodingPathNode {
        steps.reduce(start) { path, step in
            switch step {
            case .key(let key): path.appending(key)
            case .index(let index): path.appending(index: index)
            }
        }
    }

    @Test func everySequenceOfUpToSixStepsComesBackInOrder() {
        // All 2^n shapes of keys and indexes for n up to 6, each step's value telling its position.
        for length in 0...6 {
            for shape in 0..<(1 << length) {
                let steps = (0..<length).map { position in
                    shape & (1 << position) == 0 ? Step.key("k\(position)") : Step.index(position)
                }
                let path = appended(steps)
                #expect(path.path.count == steps.count)
                #expect(CodingPathNode.render(path.path) == rendered(steps), "shape \(shape) of \(length)")
            }
        }
    }

    @Test func theRecordShapesAndWhatGoesDeeperRenderAsTheirKeys() {
        let record = CodingPathNode.root.appending(index: 41)
        #expect(record.rendered == "[41]")
        #expect(record.appending("user").rendered == "[41].user")
        #expect(record.appending("labels").appending(index: 2).rendered == "[41].labels[2]")
        #expect(record.appending("labels").appending(index: 2).appending("name").rendered == "[41].labels[2].name")
        #expect(record.appending(index: 3).rendered == "[41][3]")
        #expect(CodingPathNode.root.appending("a").appending("b").rendered == "a.b")
        #expect(CodingPathNode.root.rendered == "<root>")
        // Keys and indexes are typed as a synthesized conformance's would be.
        let keys = record.appending("labels").appending(index: 2).path
        #expect(keys.map(\.intValue) == [41, nil, 2])
        #expect(keys[1].stringValue == "labels")
        #expect(keys[0].stringValue == "Index 41")
    }

    @Test func aPathIsAValueThatLaterAppendsDoNotChange() {
        let base = appended([.index(1), .key("a"), .index(2), .key("b")])
        let left = base.appending("left")
        let right = base.appending(index: 9)
        #expect(base.rendered == "[1].a[2].b")
        #expect(left.rendered == "[1].a[2].b.left")
        #expect(right.rendered == "[1].a[2].b[9]")
        #expect(left.appending(index: 0).rendered == "[1].a[2].b.left[0]")
    }
}
