import CodableStore
import CodableStoreTesting
import XCTest

/// The library from XCTest: the same calls, failing by throwing.
final class XCTestUsageTests: XCTestCase {
    func testSeedingABudgetAndAGoldenFileFromXCTest() throws {
        let fixture = try FixtureStore(entities: entities, fixtures: [.records(Author.self, "authors.json")])
        let logins = try fixture.statements.expectQueries(atMost: 1) {
            try fixture.store.read { context in try context.fetch(Author.self, orderBy: [.ascending(\.id)]).map(\.login) }
        }
        XCTAssertEqual(logins, ["ada", "bob"])
        XCTAssertThrowsError(try fixture.statements.expectQueries(atMost: 0) { try fixture.store.read { try $0.count(Author.self) } }) { error in
            XCTAssertEqual((error as? FixtureError)?.kind, .budgetExceeded)
        }
        try fixture.expectMatchesGolden("authors.json", entities: [Author.self])
    }
}
