import CodableStore
import Foundation
import Testing

@Entity final class Event {
    var id: Int
    var startsAt: Date?
    var payload: Data?
    var ratio: Double?
    var userId: Int?
    static let identity = Identity(\Event.id)
    init(id: Int) { self.id = id }
}

@Suite struct DecodingStrategyTests {
    private func decode(_ json: String, _ configure: (StoreDecoder) -> Void) throws -> (Date?, Data?, Double?, Int?) {
        let store = try Store.inMemory(entities: [Event.self])
        let decoder = StoreDecoder()
        configure(decoder)
        return try store.write { context in
            let event = try decoder.decode(Event.self, from: Data(json.utf8), into: context)
            return (event.startsAt, event.payload, event.ratio, event.userId)
        }
    }

    @Test(arguments: [
        ("2015-06-05T09:52:26Z", 1_433_497_946.0),
        ("2015-06-05T09:52:26.5Z", 1_433_497_946.5),
        ("2015-06-05T11:52:26+02:00", 1_433_497_946.0),
        ("2015-06-05T04:52:26.125-05:00", 1_433_497_946.125),
        ("1969-12-31T23:59:59Z", -1.0),
        ("2000-02-29T00:00:00Z", 951_782_400.0),
    ])
    func iso8601WithAndWithoutFractionsAndOffsets(text: String, seconds: Double) throws {
        let (date, _, _, _) = try decode(#"{"id": 1, "startsAt": "\#(text)"}"#) { $0.dateDecodingStrategy = .iso8601 }
        #expect(date?.timeIntervalSince1970 == seconds)
    }

    @Test(arguments: ["2015-02-29T00:00:00Z", "2015-06-05 09:52", "2015-06-05T09:52:26", "2015-13-01T00:00:00Z", "x"])
    func invalidISO8601IsDataCorrupted(text: String) throws {
        #expect(throws: DecodingError.self) {
            _ = try decode(#"{"id": 1, "startsAt": "\#(text)"}"#) { $0.dateDecodingStrategy = .iso8601 }
        }
    }

    @Test func numericDateStrategies() throws {
        let (seconds, _, _, _) = try decode(#"{"id": 1, "startsAt": 1433497946.5}"#) { $0.dateDecodingStrategy = .secondsSince1970 }
        #expect(seconds?.timeIntervalSince1970 == 1_433_497_946.5)
        let (milliseconds, _, _, _) = try decode(#"{"id": 1, "startsAt": 1433497946500}"#) { $0.dateDecodingStrategy = .millisecondsSince1970 }
        #expect(milliseconds?.timeIntervalSince1970 == 1_433_497_946.5)
        let (deferred, _, _, _) = try decode(#"{"id": 1, "startsAt": 10}"#) { $0.dateDecodingStrategy = .deferredToDate }
        #expect(deferred == Date(timeIntervalSinceReferenceDate: 10))
        let (custom, _, _, _) = try decode(#"{"id": 1, "startsAt": "day 2"}"#) { decoder in
            decoder.dateDecodingStrategy = .custom { decoder in
                let text = try decoder.singleValueContainer().decode(String.self)
                return Date(timeIntervalSince1970: Double(text.dropFirst(4))! * 86_400)
            }
        }
        #expect(custom?.timeIntervalSince1970 == 172_800)
    }

    @Test func base64DataAndNonConformingFloats() throws {
        let (_, data, ratio, _) = try decode(#"{"id": 1, "payload": "AAEC/w==", "ratio": "+inf"}"#) {
            $0.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        }
        #expect(data == Data([0, 1, 2, 255]))
        #expect(ratio == .infinity)
        let error = try #require(throws: DecodingError.self) { _ = try decode(#"{"id": 1, "payload": "%%%"}"#) { _ in } }
        guard case .dataCorrupted(let context) = error else { Testing.Issue.record("\(error)"); return }
        #expect(context.codingPath.map(\.stringValue) == ["payload"])
        #expect(context.debugDescription == "Encountered Data is not valid Base64.")
    }

    @Test func snakeCaseKeysMatchCamelCaseFields() throws {
        let (date, _, _, user) = try decode(#"{"id": 1, "starts_at": 5, "user_id": 42}"#) {
            $0.keyDecodingStrategy = .convertFromSnakeCase
            $0.dateDecodingStrategy = .secondsSince1970
        }
        #expect(date?.timeIntervalSince1970 == 5)
        #expect(user == 42)
    }
}
