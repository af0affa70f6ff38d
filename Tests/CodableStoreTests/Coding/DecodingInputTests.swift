import CodableStore
import Foundation
import Testing

@Suite struct DecodingInputTests {
    @Test func malformedJSONIsASyntaxErrorWithLineAndColumnAndChangesNothing() throws {
        let store = try Store.inMemory(entities: issueEntities)
        let json = "[\n  {\"id\": 1, \"number\": 1, \"title\": \"a\"},\n  {\"id\": 2, \"number\": 2, \"title\": \"b\",}\n]"
        let changed = try store.write { context -> Bool in
            let error = try #require(throws: JSONSyntaxError.self) {
                _ = try StoreDecoder().decode([GitIssue].self, from: Data(json.utf8), into: context)
            }
            #expect(error.line == 3)
            #expect(error.byteOffset == json.utf8.count - 3)  // the "}" after the trailing comma
            #expect(error.description.contains("line 3"))
            return context.hasChanges
        }
        #expect(changed == false)
        #expect(try store.read { try $0.count(GitIssue.self) } == 0)
    }

    @Test func everyAttributeTypeDecodesFromJSON() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Sample.self])
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        try store.write { context in
            _ = try decoder.decode(
                Sample.self,
                from: Data(#"""
                    {"id": 1, "flag": true, "int8": -8, "int16": -16, "int32": -32, "int64": -9223372036854775808,
                     "uint8": 255, "uint16": 65535, "uint32": 4294967295, "uint64": 18446744073709551615, "uint": 42,
                     "double": 3.25, "float": 1.5, "decimal": 12345678901234567890.123456789, "text": "h\u00e9llo \ud83c\udf0d",
                     "date": "2023-11-14T22:13:20.25Z", "data": "AAEC/w==", "uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
                     "url": "https://example.com/a?b=c", "priority": "high", "level": 2, "words": ["a", "b"],
                     "counts": {"z": 1, "a": 2}, "money": {"amount": 9.99, "currency": "EUR"}, "optionalText": null}
                    """#.utf8),
                into: context)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("""
            SELECT flag, int8, int16, int32, int64, uint8, uint16, uint32, quote(uint64), uint, double, float, decimal, text, date,
              hex(data), uuid, url, priority, level, words, counts, money, optionalText FROM Sample
            """) == [[
            "1", "-8", "-16", "-32", "-9223372036854775808", "255", "65535", "4294967295", "X'FFFFFFFFFFFFFFFF'", "42", "3.25", "1.5",
            "12345678901234567890.123456789", "héllo 🌍", "1700000000.25", "000102FF", "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
            "https://example.com/a?b=c", "high", "2", "[\"a\",\"b\"]", "{\"a\":2,\"z\":1}", "{\"amount\":9.99,\"currency\":\"EUR\"}", "NULL",
        ]])
    }

    @Test(arguments: [
        ("flag", "1", "Bool"), ("int8", "128", ""), ("uint8", "-1", ""), ("int32", "\"7\"", "Int32"), ("double", "\"x\"", "Double"),
        ("text", "7", "String"), ("date", "7", "String"), ("uuid", "\"nope\"", ""), ("priority", "\"low2\"", ""),
        ("words", "\"a\"", "Array<Any>"), ("level", "9", ""),
    ])
    func wrongTypesAreErrorsAtTheFieldPath(field: String, value: String, expectedType: String) throws {
        let store = try Store.inMemory(entities: [Sample.self])
        let decoder = StoreDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let error = try #require(throws: DecodingError.self) {
            try store.write { context in
                _ = try decoder.decode(Sample.self, from: Data(#"{"id": 1, "\#(field)": \#(value)}"#.utf8), into: context)
            }
        }
        switch error {
        case .typeMismatch(let type, let context):
            #expect(context.codingPath.map(\.stringValue) == [field])
            #expect("\(type)" == expectedType)
        case .dataCorrupted(let context):
            #expect(context.codingPath.map(\.stringValue).first == field)
            #expect(expectedType.isEmpty)
        default:
            Testing.Issue.record("unexpected \(error)")
        }
    }

    /// Random byte mutations of a valid payload: every outcome is a value or a thrown error, never a crash.
    @Test func mutatedInputNeverCrashes() throws {
        let original = Array(try SharedFixtures.data("decoding/issues.json"))
        var state: UInt64 = 0x1234_5678
        func random(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let interesting: [UInt8] = Array("{}[]\",:0-1e.\\nulltruefalse \u{0}\u{7f}\u{ff}".utf8)
        var outcomes = [true: 0, false: 0]
        for _ in 0..<300 {
            var bytes = original
            for _ in 0..<(1 + random(4)) {
                switch random(3) {
                case 0: bytes[random(bytes.count)] = interesting[random(interesting.count)]
                case 1: bytes.remove(at: random(bytes.count))
                default: bytes.insert(interesting[random(interesting.count)], at: random(bytes.count))
                }
            }
            let store = try Store.inMemory(entities: issueEntities)
            do {
                try store.write { _ = try issueDecoder().decode([GitIssue].self, from: Data(bytes), into: $0) }
                outcomes[true, default: 0] += 1
            } catch {
                outcomes[false, default: 0] += 1
            }
        }
        #expect(outcomes[false]! > 0)
        #expect(outcomes[true]! + outcomes[false]! == 300)
    }
}
