import Foundation
import Testing

@testable import CodableStoreJSON

@Suite("JSON tape")
struct JSONTapeTests {
    /// The decoder's test for an unchanged string: bytes, not Unicode equivalence, escapes decoded first.
    @Test func stringsCompareByteForByteWithoutMakingAString() throws {
        let tape = try JSONTape.parse(#"{"plain": "caf\u00e9", "nfd": "cafe\u0301", "empty": "", "n": 1, "esc": "a\"b\n"}"#)
        func value(_ key: String) throws -> JSONTape.Index { try #require(tape.value(forKey: JSONKey(key), in: tape.root)) }
        #expect(try tape.isString(at: value("plain"), equalTo: "caf\u{e9}"))
        #expect(try !tape.isString(at: value("plain"), equalTo: "cafe\u{301}"))  // == on String says equal
        #expect("caf\u{e9}" == "cafe\u{301}")
        #expect(try tape.isString(at: value("nfd"), equalTo: "cafe\u{301}"))
        #expect(try tape.isString(at: value("empty"), equalTo: ""))
        #expect(try !tape.isString(at: value("empty"), equalTo: "x"))
        #expect(try tape.isString(at: value("esc"), equalTo: "a\"b\n"))
        #expect(try !tape.isString(at: value("n"), equalTo: "1"))
        #expect(!tape.isString(at: tape.root, equalTo: ""))
        // A document parse borrows unescaped strings from the input; a record's tape copies them: same answers.
        var found: [Bool] = []
        let stream = JSONRecordStream(mode: .array)
        func check(_ record: borrowing JSONRecord) {
            found.append(record.tape.value(forKey: "k", in: record.root).map { record.tape.isString(at: $0, equalTo: "abc") } ?? false)
        }
        try Array(#"[{"k": "caf\u00e9"}, {"k": "abc"}]"#.utf8).withUnsafeBytes { try stream.feed($0, check) }
        try stream.finish(check)
        #expect(found == [false, true])
    }

    static let issue = #"""
        {"id": 41, "title": "Crash on \"save\"", "user": {"login": "ada", "id": 7},
         "labels": [{"name": "bug"}, {"name": "ui"}], "closed": false, "milestone": null, "score": 2.5}
        """#

    @Test func kindsAndScalars() throws {
        let tape = try JSONTape.parse(Self.issue)
        let root = tape.root
        #expect(tape.kind(of: root) == .object)
        #expect(tape.count(of: root) == 7)
        let title = try #require(tape.value(forKey: "title", in: root))
        #expect(tape.kind(of: title) == .string)
        #expect(tape.string(at: title) == #"Crash on "save""#)
        #expect(try tape.value(forKey: "id", in: root).flatMap(tape.number(at:))?.int64() == 41)
        #expect(tape.value(forKey: "closed", in: root).flatMap(tape.bool(at:)) == false)
        #expect(tape.value(forKey: "milestone", in: root).map(tape.isNull) == true)
        #expect(tape.value(forKey: "missing", in: root) == nil)
        #expect(tape.string(at: root) == nil)
        #expect(tape.bool(at: title) == nil)
        // Lookups on something else than an object find nothing.
        #expect(tape.value(forKey: "id", in: title) == nil)
    }

    @Test func nestedValuesAndPaths() throws {
        let tape = try JSONTape.parse(Self.issue)
        let user = try #require(tape.value(forKey: "user", in: tape.root))
        let login = try #require(tape.value(forKey: JSONKey("login"), in: user))
        #expect(tape.string(at: login) == "ada")
        let labels = try #require(tape.value(forKey: "labels", in: tape.root))
        #expect(tape.count(of: labels) == 2)
        let names = tape.elements(of: labels).compactMap {
            tape.value(forKey: "name", in: $0).flatMap(tape.string(at:))
        }
        #expect(names == ["bug", "ui"])
        let second = try #require(tape.element(1, of: labels))
        let name = try #require(tape.value(forKey: "name", in: second))
        #expect(tape.path(to: name) == [.key("labels"), .index(1), .key("name")])
        #expect(tape.pathDescription(to: name) == "labels[1].name")
        #expect(tape.pathDescription(to: tape.root) == "")
        #expect(tape.element(2, of: labels) == nil)
    }

    @Test func membersInDocumentOrder() throws {
        let tape = try JSONTape.parse(#"{"z": 1, "a": [1, {"x": 2}], "m": {}, "b": "s"}"#)
        let keys = tape.members(of: tape.root).map { tape.string(at: $0.key)! }
        #expect(keys == ["z", "a", "m", "b"])
        let kinds = tape.members(of: tape.root).map { tape.kind(of: $0.value) }
        #expect(kinds == [.number, .array, .object, .string])
        #expect(Array(tape.members(of: tape.value(forKey: "m", in: tape.root)!)).isEmpty)
        #expect(Array(tape.elements(of: tape.root)).isEmpty)
    }

    @Test func duplicateKeysLastWins() throws {
        let tape = try JSONTape.parse(#"{"a": 1, "b": {"c": 1}, "a": [2], "c": 3, "a": "last"}"#)
        #expect(tape.count(of: tape.root) == 5)
        // All are kept, in order.
        #expect(tape.members(of: tape.root).map { tape.string(at: $0.key)! } == ["a", "b", "a", "c", "a"])
        #expect(tape.value(forKey: "a", in: tape.root).flatMap(tape.string(at:)) == "last")
        var hint = JSONTape.LookupHint()
        #expect(tape.value(forKey: "c", in: tape.root, hint: &hint).flatMap(tape.number(at:))?.text == "3")
        #expect(tape.value(forKey: "a", in: tape.root, hint: &hint).flatMap(tape.string(at:)) == "last")
        #expect(tape.jsonText(of: tape.root) == #"{"a":1,"b":{"c":1},"a":[2],"c":3,"a":"last"}"#)
    }

    @Test func duplicatesInLargeObjects() throws {
        var members = (0..<100).map { "\"k\($0)\": \($0)" }
        members.append(#""k3": "again""#)
        let tape = try JSONTape.parse("{" + members.joined(separator: ",") + "}")
        #expect(tape.value(forKey: "k3", in: tape.root).flatMap(tape.string(at:)) == "again")
        #expect(tape.value(forKey: "k99", in: tape.root).flatMap(tape.number(at:))?.text == "99")
    }

    @Test func hintedLookupsFindTheSameValues() throws {
        let keys = ["id", "title", "user", "labels", "closed", "milestone", "score", "nope"]
        let tape = try JSONTape.parse(Self.issue)
        var generator = SplitMix64(seed: 4)
        for order in [keys, keys.reversed(), keys.shuffled(using: &generator)] {
            var hint = JSONTape.LookupHint()
            for key in order {
                let jsonKey = JSONKey(key)
                #expect(
                    tape.value(forKey: jsonKey, in: tape.root, hint: &hint) == tape.value(forKey: key, in: tape.root)
                )
            }
        }
        // A hint from another object is ignored.
        var hint = JSONTape.LookupHint()
        let user = try #require(tape.value(forKey: "user", in: tape.root))
        _ = tape.value(forKey: "login", in: user, hint: &hint)
        #expect(tape.value(forKey: "id", in: tape.root, hint: &hint).flatMap(tape.number(at:))?.text == "41")
    }

    /// Hinted lookups in document order compare the key at the hint word by word (keys of up to 16 bytes): keys of
    /// every length up to 20 bytes, each next to keys of its length that differ in one byte only, must match
    /// exactly, in a tape that owns its bytes and in one that borrows the document's.
    @Test func hintedLookupsInDocumentOrderTellNearlyEqualKeysApart() throws {
        var members: [(key: String, value: Int)] = []
        for length in 0...20 {
            let base = String((0..<length).map { Character(UnicodeScalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
            members.append((base, length * 100))
            for position in 0..<length {
                var bytes = Array(base.utf8)
                bytes[position] = UInt8(ascii: "Z")
                members.append((String(decoding: bytes, as: UTF8.self), length * 100 + position + 1))
            }
        }
        let document = "{" + members.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ",") + "}"
        func check(_ tape: JSONTape) {
            // In document order, each key found at the hint.
            var hint = JSONTape.LookupHint()
            for member in members {
                let found = tape.value(forKey: JSONKey(member.key), in: tape.root, hint: &hint)
                #expect(found.flatMap(tape.number(at:))?.text == "\(member.value)", "\(member.key)")
            }
            // Each key asked for when the hint is at its neighbour of the same length (one byte apart).
            for (index, member) in members.enumerated().dropFirst() where members[index - 1].key.utf8.count == member.key.utf8.count {
                var hint = JSONTape.LookupHint()
                _ = tape.value(forKey: JSONKey(members[index - 2 >= 0 ? index - 2 : 0].key), in: tape.root, hint: &hint)
                let previous = tape.value(forKey: JSONKey(members[index - 1].key), in: tape.root, hint: &hint)
                #expect(previous.flatMap(tape.number(at:))?.text == "\(members[index - 1].value)")
                let found = tape.value(forKey: JSONKey(member.key), in: tape.root, hint: &hint)
                #expect(found.flatMap(tape.number(at:))?.text == "\(member.value)", "\(member.key)")
            }
            // A key one byte away from the one at the hint, and absent from the object, is not found there.
            var missHint = JSONTape.LookupHint()
            _ = tape.value(forKey: JSONKey(members[0].key), in: tape.root, hint: &missHint)
            #expect(tape.value(forKey: "Q", in: tape.root, hint: &missHint) == nil)
            #expect(tape.value(forKey: "abcdefghijklmnoY", in: tape.root, hint: &missHint) == nil)
        }
        check(try JSONTape.parse(document))
        try JSONTape.withDocumentTape(Data(document.utf8)) { check($0) }
    }

    /// Two keys of the same length whose 24-bit hashes collide (found by search), sharing their first 8 bytes: the
    /// one at the hint is not taken for the other.
    @Test func aHashCollisionAtTheHintIsNotAMatch() throws {
        var seen: [UInt32: String] = [:]
        var collision: (String, String)?
        for number in 0..<1_000_000 where collision == nil {
            let key = "abcdefgh" + String(number, radix: 16).leftPadded(to: 5)
            let hash = Array(key.utf8).withUnsafeBytes { JSONKey.hash($0) }
            if let other = seen[hash] { collision = (other, key) } else { seen[hash] = key }
        }
        let (first, second) = try #require(collision)
        let tape = try JSONTape.parse(#"{"start": 0, ""# + first + #"": 1, ""# + second + #"": 2}"#)
        var hint = JSONTape.LookupHint()
        _ = tape.value(forKey: "start", in: tape.root, hint: &hint)
        #expect(tape.value(forKey: JSONKey(second), in: tape.root, hint: &hint).flatMap(tape.number(at:))?.text == "2")
        var other = JSONTape.LookupHint()
        _ = tape.value(forKey: "start", in: tape.root, hint: &other)
        #expect(tape.value(forKey: JSONKey(first), in: tape.root, hint: &other).flatMap(tape.number(at:))?.text == "1")
    }

    /// A key that is not at the hint is searched member by member, by its hash and length first (keys of up to 16
    /// bytes): keys one byte apart, a 24-bit hash collision, keys written with escapes, members whose values are
    /// containers, and absent keys, asked for in every order, find what the search without a hint finds.
    @Test func lookupsAwayFromTheHintFindWhatTheFullSearchFinds() throws {
        var seen: [UInt32: String] = [:]
        var collision: (String, String)?
        for number in 0..<1_000_000 where collision == nil {
            let key = "k" + String(number, radix: 16)
            let hash = Array(key.utf8).withUnsafeBytes { JSONKey.hash($0) }
            if let other = seen[hash] { collision = (other, key) } else { seen[hash] = key }
        }
        let (first, second) = try #require(collision)
        let document = #"{"id": 1, "iD": 2, "nested": {"id": 3}, "list": [{"id": 4}], "title": 5, "#
            + #""sixteen-bytes-16": 6, "seventeen-bytes17": 7, ""# + first + #"": 8, "end": 9}"#
        let keys = ["id", "iD", "nested", "list", "title", "sixteen-bytes-16", "seventeen-bytes17", first, "end",
            second, "Id", "titlf", "absent", "sixteen-bytes-1X", ""]
        func check(_ tape: JSONTape) {
            var generator = SplitMix64(seed: 11)
            for order in [keys, keys.reversed()] + (0..<20).map({ _ in keys.shuffled(using: &generator) }) {
                var hint = JSONTape.LookupHint()
                for key in order {
                    let found = tape.value(forKey: JSONKey(key), in: tape.root, hint: &hint)
                    #expect(found == tape.value(forKey: key, in: tape.root), "\(key) in \(order)")
                }
            }
            #expect(tape.value(forKey: "title", in: tape.root).flatMap(tape.number(at:))?.text == "5")
            #expect(tape.value(forKey: second, in: tape.root) == nil)
            var hint = JSONTape.LookupHint()
            _ = tape.value(forKey: "end", in: tape.root, hint: &hint)
            #expect(tape.value(forKey: JSONKey(first), in: tape.root, hint: &hint).flatMap(tape.number(at:))?.text == "8")
            #expect(tape.value(forKey: JSONKey(second), in: tape.root, hint: &hint) == nil)
            #expect(tape.value(forKey: JSONKey("iD"), in: tape.root, hint: &hint).flatMap(tape.number(at:))?.text == "2")
        }
        check(try JSONTape.parse(document))
        try JSONTape.withDocumentTape(Data(document.utf8)) { check($0) }
    }

    @Test func keyComparisonsWithoutStrings() throws {
        let tape = try JSONTape.parse(#"{"name": 1, "naïve": 2, "": 3}"#)
        let keys = tape.members(of: tape.root).map(\.key)
        #expect(tape.key(keys[0], equals: "name"))
        #expect(!tape.key(keys[0], equals: "names"))
        #expect(tape.key(keys[1], equals: "naïve" as String))
        #expect(tape.key(keys[1], equals: "naïve" as StaticString))
        #expect(tape.key(keys[2], equals: ""))
        #expect(tape.value(forKey: "", in: tape.root).flatMap(tape.number(at:))?.text == "3")
        #expect(!tape.key(Array(tape.members(of: tape.root))[0].value, equals: "1"))
    }

    @Test func byteOffsets() throws {
        let document = #"  {"a": [10, "x"], "b": null}"#
        let tape = try JSONTape.parse(document)
        #expect(tape.byteOffset(of: tape.root) == 2)
        let array = try #require(tape.value(forKey: "a", in: tape.root))
        #expect(tape.byteOffset(of: array) == 8)
        #expect(tape.elements(of: array).map(tape.byteOffset(of:)) == [9, 13])
        #expect(tape.members(of: tape.root).map { tape.byteOffset(of: $0.key) } == [3, 19])
        #expect(tape.byteOffset(of: tape.value(forKey: "b", in: tape.root)!) == 24)
    }

    @Test func withUTF8GivesTheBytesWithoutCopying() throws {
        let tape = try JSONTape.parse(#"["abc", 12.5e3, true]"#)
        let elements = Array(tape.elements(of: tape.root))
        #expect(tape.withUTF8(at: elements[0]) { Array($0) } == Array("abc".utf8))
        #expect(tape.withUTF8(at: elements[1]) { String(decoding: $0, as: UTF8.self) } == "12.5e3")
        #expect(tape.withUTF8(at: elements[2]) { _ in 1 } == nil)
        #expect(tape.parseUTF8(at: elements[1]) { Double(String(decoding: $0, as: UTF8.self)) } == 12_500)
        #expect(tape.parseUTF8(at: elements[0]) { Double(String(decoding: $0, as: UTF8.self)) } == nil)
        #expect(tape.parseUTF8(at: elements[2]) { _ in 1 } == nil)
    }

    @Test func jsonTextRoundTrips() throws {
        let document = #"{"s":"a\"b\\c\n\u0001é😀","n":[-0.5e3,1,{}],"t":true,"f":false,"z":null,"e":[],"o":{"k":[[]]}}"#
        let tape = try JSONTape.parse(document)
        let text = tape.jsonText(of: tape.root)
        #expect(
            text == #"{"s":"a\"b\\c\n\u0001é😀","n":[-0.5e3,1,{}],"t":true,"f":false,"z":null,"e":[],"o":{"k":[[]]}}"#
        )
        #expect(try JSONTape.parse(text) == tape)
        let scalar = try JSONTape.parse(" 12 ")
        #expect(scalar.jsonText(of: scalar.root) == "12")
        // Foundation agrees that it is JSON.
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil)
    }

    @Test func reuseKeepsCapacityBounded() throws {
        let builder = JSONTapeBuilder()
        let reader = { () -> JSONReader in JSONReader(handler: builder) }
        var nodeCapacity = 0
        var byteCapacity = 0
        for index in 0..<2_000 {
            builder.reset(baseOffset: 0)
            let record = #"{"id": \#(index), "name": "record \#(index)", "tags": ["a", "b", "c"], "n": null}"#
            let parser = reader()
            try Array(record.utf8).withUnsafeBytes { try parser.parse($0) }
            try parser.finish()
            #expect(
                builder.tape.value(forKey: "id", in: builder.tape.root).flatMap(builder.tape.number(at:))?.text
                    == "\(index)"
            )
            let capacities = (builder.tape.nodes.capacity, builder.tape.bytes.capacity)
            if index == 10 {
                nodeCapacity = capacities.0
                byteCapacity = capacities.1
            } else if index > 10 {
                #expect(capacities.0 == nodeCapacity)
                #expect(capacities.1 == byteCapacity)
            }
        }
        #expect(nodeCapacity < 64)
        #expect(byteCapacity < 256)
    }

    @Test func aCopyKeptByTheCallerIsNotOverwritten() throws {
        let builder = JSONTapeBuilder()
        func build(_ text: String) throws {
            builder.reset(baseOffset: 0)
            let reader = JSONReader(handler: builder)
            try Array(text.utf8).withUnsafeBytes { try reader.parse($0) }
            try reader.finish()
        }
        try build(#"{"a": "first"}"#)
        let kept = builder.tape
        try build(#"{"a": "second"}"#)
        #expect(kept.value(forKey: "a", in: kept.root).flatMap(kept.string(at:)) == "first")
        #expect(builder.tape.value(forKey: "a", in: builder.tape.root).flatMap(builder.tape.string(at:)) == "second")
    }

    /// A whole document kept by the caller: plain strings, keys and numbers point into it, escaped strings are
    /// copied; reads, lookups, numbers, text and equality do not tell the difference.
    @Test func aDocumentTapeBorrowsPlainScalarsFromItsInput() throws {
        let text = #"{"plain": "abc", "esc\u0061ped": "line\nbreak \"q\"", "n": -12.5e1, "k": [true, null, "", {"x": 7}]}"#
        try JSONTape.withDocumentTape(Data(text.utf8)) { borrowed in try checkBorrowed(borrowed, text) }
    }

    private func checkBorrowed(_ borrowed: JSONTape, _ text: String) throws {
        let owned = try JSONTape.parse(Array(text.utf8))
        #expect(borrowed == owned)
        #expect(borrowed.bytes.count < owned.bytes.count)
        #expect(borrowed.bytes.count == "escaped".utf8.count)  // an escaped key; escaped strings stay in the input
        #expect(borrowed.nodes.contains { $0.info & JSONTape.escapedInInput != 0 })
        #expect(borrowed.nodes.contains { $0.info & JSONTape.bytesInInput != 0 })
        let root = borrowed.root
        #expect(borrowed.value(forKey: "plain", in: root).flatMap(borrowed.string(at:)) == "abc")
        #expect(borrowed.value(forKey: "escaped", in: root).flatMap(borrowed.string(at:)) == "line\nbreak \"q\"")
        #expect(try borrowed.value(forKey: "n", in: root).flatMap(borrowed.number(at:))?.double() == -125)
        let list = try #require(borrowed.value(forKey: "k", in: root))
        #expect(borrowed.elements(of: list).map { borrowed.kind(of: $0) } == [.bool, .null, .string, .object])
        #expect(borrowed.jsonText(of: root) == owned.jsonText(of: owned.root))
        // Comparisons see the decoded text of an escaped string, not its raw length.
        let escaped = try #require(borrowed.value(forKey: "escaped", in: root))
        #expect(borrowed.key(escaped, equals: "line\nbreak \"q\""))
        #expect(!borrowed.key(escaped, equals: #"line\nbreak \"q\""#))
        #expect(!borrowed.key(escaped, equals: "line\nbreak \"q\"abc"))  // as long as the raw text
        // Not equal when a value differs in content only.
        try JSONTape.withDocumentTape(Data(text.replacingOccurrences(of: "abc", with: "abd").utf8)) { other in
            #expect(other != owned)
        }
    }

    /// The yajl-decoded tape is the oracle for tapes that keep strings in the document and decode their escapes
    /// when read: every file of the conformance corpus, every string, same bytes and same text.
    @Test(arguments: JSONFixture.passNames)
    func borrowedTapesReadLikeCopiedOnes(_ name: String) throws {
        let bytes = try JSONFixture.bytes("json/pass/\(name)")
        let owned = try JSONTape.parse(bytes)
        try JSONTape.withDocumentTape(Data(bytes)) { borrowed in
            #expect(borrowed == owned)
            #expect(borrowed.jsonText(of: borrowed.root) == owned.jsonText(of: owned.root))
        }
    }

    @Test func escapesDecodeLikeYajl() throws {
        let text = #"["\u00e9\u4e2d\ud83d\ude00\u0000\/\b\f\n\r\t\\\"", "a\"b", "\ud834\udd1e tail", "plain"]"#
        let owned = try JSONTape.parse(text)
        try JSONTape.withDocumentTape(Data(text.utf8)) { borrowed in
            #expect(borrowed == owned)
            let strings = borrowed.elements(of: borrowed.root).compactMap(borrowed.string(at:))
            #expect(strings == ["é中😀\u{0}/\u{8}\u{C}\n\r\t\\\"", "a\"b", "𝄞 tail", "plain"])
        }
    }

    @Test func parseAcceptsContiguousBytes() throws {
        let data = Data(#"{"a": [1]}"#.utf8)
        let fromData = try JSONTape.parse(data)
        let fromArray = try JSONTape.parse(Array(data))
        #expect(fromData == fromArray)
        #expect(throws: JSONSyntaxError.self) { try JSONTape.parse(Data()) }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
}
