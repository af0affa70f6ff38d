import CodableStore
import Foundation
import Testing

/// GitHub added "duplicate" to `state_reason` after clients were written against three values.
enum StateReason: String, AttributeValue, Codable, UnknownRawValueFallback {
    case completed, reopened, notPlanned = "not_planned", unknown
    static var unknownRawValueFallback: StateReason? { .unknown }
}

/// An optional attribute whose unknown values become nil.
enum LockReason: String, AttributeValue, UnknownRawValueFallback {
    case offTopic = "off-topic", tooHeated = "too heated", spam
    static var unknownRawValueFallback: LockReason? { nil }
}

/// No fallback declared: an unknown value stays an error.
enum Association: String, AttributeValue {
    case owner = "OWNER", member = "MEMBER", contributor = "CONTRIBUTOR", none = "NONE"
}

@Entity final class ClosedIssue {
    var id: Int
    var title: String = ""
    var stateReason: StateReason?
    var lockReason: LockReason?
    var association: Association?
    static let identity = Identity(\ClosedIssue.id)
    enum CodingKeys: String, EntityCodingKey {
        case id, title
        case stateReason = "state_reason"
        case lockReason = "active_lock_reason"
        case association = "author_association"
    }
    init(id: Int) { self.id = id }
}

/// The same enums in non-optional attributes.
@Entity final class Triage {
    var id: Int
    var reason: StateReason = .completed
    var lock: LockReason = .spam
    static let identity = Identity(\Triage.id)
    init(id: Int) { self.id = id }
}

@Suite struct UnknownEnumValueTests {
    @Test func aDeclaredFallbackTakesUnknownValuesAndUndeclaredOnesStillFail() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [ClosedIssue.self, Triage.self])
        let page = try SharedFixtures.data("github/issues-new-enum-values.json")
        // MANNEQUIN is not an Association, and Association has no fallback: the page fails there.
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode([ClosedIssue].self, from: page, into: $0) }
        }
        guard case .dataCorrupted(let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["Index 2", "author_association"])
        #expect(context.debugDescription == "Cannot initialize Association from invalid String value MANNEQUIN")

        // Without that record, the page decodes: "duplicate" is .unknown, "resolved" (not a LockReason) is nil.
        var records = try #require(try JSONSerialization.jsonObject(with: page) as? [[String: Any]])
        records[2]["author_association"] = "NONE"
        let fixed = try JSONSerialization.data(withJSONObject: records)
        try store.write { _ = try StoreDecoder().decode([ClosedIssue].self, from: fixed, into: $0) }
        #expect(
            try RawDatabase(path).rows("SELECT id, stateReason, lockReason, association FROM ClosedIssue ORDER BY id") == [
                ["9101", "unknown", "NULL", "CONTRIBUTOR"], ["9102", "completed", "NULL", "MEMBER"], ["9103", "NULL", "too heated", "NONE"],
            ])
        // The import takes the same way.
        let dump = TestStore.temporaryPath("page.json")
        try fixed.write(to: URL(fileURLWithPath: dump))
        let report = try store.importJSON(ClosedIssue.self, from: .file(dump))
        #expect(report.recordsImported == 3)
    }

    @Test func aNilFallbackCannotFillANonOptionalAttribute() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [ClosedIssue.self, Triage.self])
        try store.write { _ = try StoreDecoder().decode(Triage.self, from: Data(#"{"id": 1, "reason": "duplicate"}"#.utf8), into: $0) }
        #expect(try RawDatabase(path).rows("SELECT reason, lock FROM Triage") == [["unknown", "spam"]])
        let error = try #require(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode(Triage.self, from: Data(#"{"id": 1, "lock": "resolved"}"#.utf8), into: $0) }
        }
        guard case .dataCorrupted(let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["lock"])
        // A value of the wrong type is still a type mismatch, fallback or not.
        #expect(throws: DecodingError.self) {
            try store.write { _ = try StoreDecoder().decode(Triage.self, from: Data(#"{"id": 1, "reason": 5}"#.utf8), into: $0) }
        }
    }
}
