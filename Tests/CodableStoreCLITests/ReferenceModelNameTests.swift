import CodableStore
import Foundation
import IssuesModel
import Testing

// Swift Testing's `Issue` and the reference model's: the file names the model's (see "Entity names and Swift
// Testing" in the storage mapping article), which shadows the imported one.
private typealias Issue = IssuesModel.Issue

/// The documented way to use an entity named `Issue` next to Swift Testing compiles and works.
@Suite struct ReferenceModelNameTests {
    @Test func anEntityNamedIssueWorksInATestFile() throws {
        let store = try Store.inMemory(entities: ReferenceModel.entities)
        let data = try Data(contentsOf: URL(fileURLWithPath: CLI.fixture))
        try store.write { context in
            let issues = try ReferenceModel.decoder().decode([Issue].self, from: data, into: context)
            #expect(issues.count == 1_000)
        }
        let (count, titled) = try store.read { context in
            (try context.count(Issue.self), try context.fetch(Issue.self, where: \.title != "", limit: 3).count)
        }
        #expect(count > 0)
        #expect(titled == 3)
        if count == 0 { Testing.Issue.record("the fixture imported nothing") }
    }
}
