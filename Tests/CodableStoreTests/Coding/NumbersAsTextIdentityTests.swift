import CodableStore
import Foundation
import Testing

/// Owners whose ids an API sends as numbers in some payloads and as strings in others.
@Entity final class LooseOwner {
    var id: String
    var name: String = ""
    var tasks: [LooseTask] = []
    static let identity = Identity(\LooseOwner.id, numbersAsText: true)
    static let inverses = [Inverse(\LooseOwner.tasks, \LooseTask.owner)]
    init(id: String) { self.id = id }
}

/// A composite identity: only its `String` part reads numbers as text; the number stays a number.
@Entity final class LooseTask {
    var board: String
    var number: Int
    var title: String = ""
    var owner: LooseOwner?
    static let identity = Identity(\LooseTask.board, \LooseTask.number, numbersAsText: true)
    init(board: String, number: Int) {
        self.board = board
        self.number = number
    }
}

/// The same shape without the option: a number where a `String` is declared is a type mismatch.
@Entity final class StrictOwner {
    var id: String
    static let identity = Identity(\StrictOwner.id)
    init(id: String) { self.id = id }
}

/// The option on an identity with no `String` attribute: a model problem, not silently ignored.
@Entity final class NumericLooseOwner {
    var id: Int
    static let identity = Identity(\NumericLooseOwner.id, numbersAsText: true)
    init(id: Int) { self.id = id }
}

/// `Identity(…, numbersAsText: true)`: compiled entities take the mixed ids a model file takes.
@Suite struct NumbersAsTextIdentityTests {
    @Test func anIdGivenAsANumberOrAsAStringIsOneObjectStoredAsText() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [LooseOwner.self, LooseTask.self])
        let json = """
            [{"board": 7, "number": 1, "title": "a", "owner": {"id": 10, "name": "Ann"}},
             {"board": "7", "number": 2, "title": "b", "owner": "10"},
             {"board": "x", "number": 1, "title": "c", "owner": 1.50},
             {"board": 7, "number": 1, "title": "a again", "owner": {"id": "11", "name": "Bob"}}]
            """
        let tasks = try store.write { context in
            try StoreDecoder().decode([LooseTask].self, from: Data(json.utf8), into: context).map { "\($0.board)/\($0.number)" }
        }
        #expect(tasks == ["7/1", "7/2", "x/1", "7/1"])
        let raw = try RawDatabase(path)
        // A number keeps its text: 1.50 is "1.50", not "1.5".
        #expect(
            try raw.rows("SELECT t.board, typeof(t.board), t.number, typeof(t.number), t.title, o.id FROM LooseTask t LEFT JOIN LooseOwner o ON o._pk = t.owner ORDER BY t.board, t.number")
                == [["7", "text", "1", "integer", "a again", "11"], ["7", "text", "2", "integer", "b", "10"], ["x", "text", "1", "integer", "c", "1.50"]])
        #expect(try raw.rows("SELECT id, typeof(id), name FROM LooseOwner ORDER BY id") == [["1.50", "text", ""], ["10", "text", "Ann"], ["11", "text", "Bob"]])
    }

    @Test func theImporterReadsThemAsTextToo() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [LooseOwner.self, LooseTask.self])
        let json = #"[{"id": 10, "name": "Ann"}, {"id": "10", "name": "Ann B."}, {"id": 12, "name": "Cy"}]"#
        let dump = TestStore.temporaryPath("owners.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: dump))
        let report = try store.importJSON(LooseOwner.self, from: .file(dump))
        #expect(report.recordsImported == 3)
        #expect(report.entities["LooseOwner"]?.inserted == 2)
        #expect(try RawDatabase(path).rows("SELECT id, name FROM LooseOwner ORDER BY id") == [["10", "Ann B."], ["12", "Cy"]])
    }

    @Test func withoutTheOptionANumberIsATypeMismatchAtItsPath() throws {
        let store = try Store.inMemory(entities: [StrictOwner.self])
        let error = try #require(throws: DecodingError.self) {
            try store.write { context in
                _ = try StoreDecoder().decode([StrictOwner].self, from: Data(#"[{"id": "a"}, {"id": 10}]"#.utf8), into: context)
            }
        }
        guard case .typeMismatch(let type, let context) = error else {
            Issue.record("expected a type mismatch, got \(error)")
            return
        }
        #expect(ObjectIdentifier(type) == ObjectIdentifier(String.self))
        #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["1", "id"])
    }

    @Test func theOptionOnAnIdentityWithoutAStringIsAModelProblem() throws {
        let error = try #require(throws: StoreError.self) { _ = try Store.inMemory(entities: [NumericLooseOwner.self]) }
        #expect(error.code == .invalidModel)
        #expect(error.message.contains("NumericLooseOwner: the identity reads numbers as text, but none of its attributes is a String"), "\(error)")
    }
}
