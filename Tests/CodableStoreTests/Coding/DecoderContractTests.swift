import CodableStore
import Foundation
import Testing

/// A strict Decodable oracle: it walks every container API and records what it saw. Decoded by Foundation's
/// JSONDecoder and by StoreDecoder from the same bytes, both must see exactly the same thing.
private struct ContractProbe: Decodable, Equatable {
    var log: [String] = []

    enum Keys: String, CodingKey { case int, text, missing, null, nested, list, big, small, flag, double, superKey }
    enum NestedKeys: String, CodingKey { case a, b }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        log.append("path=\(decoder.codingPath.map(\.stringValue))")
        log.append("keys=\(container.allKeys.map(\.stringValue).sorted())")
        log.append("contains missing=\(container.contains(.missing)) null=\(container.contains(.null))")
        log.append("int=\(try container.decode(Int.self, forKey: .int))")
        log.append("text=\(try container.decode(String.self, forKey: .text))")
        log.append("decodeIfPresent missing=\(String(describing: try container.decodeIfPresent(Int.self, forKey: .missing)))")
        log.append("decodeIfPresent null=\(String(describing: try container.decodeIfPresent(Int.self, forKey: .null)))")
        log.append("decodeNil null=\(try container.decodeNil(forKey: .null))")
        log.append("int8 big=\((try? container.decode(Int8.self, forKey: .big)) == nil ? "error" : "ok")")
        log.append("uint small=\((try? container.decode(UInt.self, forKey: .small)) == nil ? "error" : "ok")")
        log.append("flag=\(try container.decode(Bool.self, forKey: .flag))")
        log.append("double=\(try container.decode(Double.self, forKey: .double))")
        log.append("float=\(try container.decode(Float.self, forKey: .double))")
        log.append("int from double=\((try? container.decode(Int.self, forKey: .double)) == nil ? "error" : "ok")")
        let nested = try container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
        log.append("nested path=\(nested.codingPath.map(\.stringValue)) a=\(try nested.decode(Int.self, forKey: .a))")
        var list = try container.nestedUnkeyedContainer(forKey: .list)
        log.append("list count=\(String(describing: list.count)) index=\(list.currentIndex)")
        log.append("list nil=\(try list.decodeNil()) index=\(list.currentIndex)")
        log.append("list first=\(try list.decode(Int.self)) index=\(list.currentIndex)")
        var inner = try list.nestedUnkeyedContainer()
        log.append("inner=\(try inner.decode(String.self)) atEnd=\(inner.isAtEnd) path=\(inner.codingPath.map(\.stringValue))")
        let object = try list.nestedContainer(keyedBy: NestedKeys.self)
        log.append("object b=\(try object.decode(String.self, forKey: .b)) path=\(object.codingPath.map(\.stringValue))")
        log.append("list atEnd=\(list.isAtEnd)")
        do {
            _ = try list.decode(Int.self)
        } catch let DecodingError.valueNotFound(_, context) {
            log.append("past end: \(context.debugDescription) at \(context.codingPath.map(\.stringValue))")
        }
        let superDecoder = try container.superDecoder(forKey: .superKey)
        log.append("super path=\(superDecoder.codingPath.map(\.stringValue)) value=\(try superDecoder.singleValueContainer().decode(String.self))")
        do {
            _ = try container.decode(String.self, forKey: .missing)
        } catch let DecodingError.keyNotFound(key, context) {
            log.append("keyNotFound \(key.stringValue) at \(context.codingPath.map(\.stringValue)): \(context.debugDescription)")
        }
        do {
            _ = try container.decode(String.self, forKey: .null)
        } catch let DecodingError.valueNotFound(type, context) {
            log.append("valueNotFound \(type) at \(context.codingPath.map(\.stringValue)): \(context.debugDescription)")
        }
        do {
            _ = try container.nestedContainer(keyedBy: NestedKeys.self, forKey: .list)
        } catch let DecodingError.typeMismatch(type, context) {
            log.append("typeMismatch \(type) at \(context.codingPath.map(\.stringValue)): \(context.debugDescription)")
        }
    }
}

private struct Wrapper: Decodable, Equatable {
    let probes: [ContractProbe]
}

@Suite struct DecoderContractTests {
    static let json = #"""
        {"probes": [{"int": 42, "text": "héllo\n", "null": null, "nested": {"a": 1}, "list": [null, 7, ["x"], {"b": "y"}],
          "big": 300, "small": -1, "flag": true, "double": 2.5, "superKey": "s"}]}
        """#

    @Test func storeDecoderSeesWhatJSONDecoderSees() throws {
        let expected = try JSONDecoder().decode(Wrapper.self, from: Data(Self.json.utf8))
        let store = try Store.inMemory(entities: [])
        let actual = try store.write { context in
            try StoreDecoder().decode(Wrapper.self, from: Data(Self.json.utf8), into: context).probes.map(\.log)
        }
        #expect(actual.count == 1)
        for (line, expectedLine) in zip(actual[0], expected.probes[0].log) {
            #expect(line == expectedLine)
        }
        #expect(actual[0].count == expected.probes[0].log.count)
    }
}
