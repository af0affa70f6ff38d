import Foundation
import Testing

@testable import CodableStoreJSON

@Suite("JSON record stream")
struct JSONRecordStreamTests {
    /// What a stream produced: each record's position and compact text, or the error.
    struct Output: Equatable {
        var records: [Record] = []
        var error: ErrorSummary?

        struct Record: Equatable, CustomStringConvertible {
            var index: Int
            var byteOffset: Int
            var line: Int
            var column: Int
            var json: String

            var description: String { "#\(index)@\(byteOffset) \(line):\(column) \(json)" }
        }
    }

    func run(_ mode: JSONRecordStream.Mode, _ document: String, chunking: Chunking = .whole) -> Output {
        run(mode, Array(document.utf8), chunking: chunking)
    }

    func run(_ mode: JSONRecordStream.Mode, _ bytes: [UInt8], chunking: Chunking = .whole) -> Output {
        let stream = JSONRecordStream(mode: mode)
        var output = Output()
        let collect = { (record: borrowing JSONRecord) in
            output.records.append(
                .init(
                    index: record.index,
                    byteOffset: record.byteOffset,
                    line: record.line,
                    column: record.column,
                    json: record.tape.jsonText(of: record.root)
                )
            )
        }
        do {
            for range in chunking.ranges(bytes.count) {
                try Array(bytes[range]).withUnsafeBytes { try stream.feed($0, collect) }
            }
            try stream.finish(collect)
        } catch let error as JSONSyntaxError {
            output.error = ErrorSummary(error)
        } catch {
            Issue.record("unexpected error \(error)")
        }
        return output
    }

    /// Runs in every chunking and checks that the output never changes.
    func runAll(_ mode: JSONRecordStream.Mode, _ document: String) -> Output {
        let expected = run(mode, document)
        for chunking in Chunking.all.dropFirst() {
            #expect(run(mode, document, chunking: chunking) == expected, "\(chunking)")
        }
        return expected
    }

    @Test func topLevelArray() {
        let output = runAll(.array, "[\n  {\"id\": 1},\n  2,\n  \"three\", [4], null\n]\n")
        #expect(output.error == nil)
        #expect(
            output.records.map(\.description) == [
                #"#0@4 2:3 {"id":1}"#, "#1@17 3:3 2", #"#2@22 4:3 "three""#, "#3@31 4:12 [4]", "#4@36 4:17 null",
            ]
        )
    }

    @Test func emptyArrays() {
        #expect(runAll(.array, "[]") == Output())
        #expect(runAll(.array(atPath: "data.items"), #"{"data": {"items": []}}"#) == Output())
        #expect(runAll(.jsonLines, "") == Output())
        #expect(runAll(.jsonLines, "\n\n  \r\n") == Output())
    }

    @Test func arrayAtAPath() {
        let document = #"""
            {"meta": {"items": [99], "data": {"items": "no"}}, "data": {"count": 2, "items": [{"id": 1}, {"id": 2, "items": [3]}], "after": {"x": [1]}}, "next": "url"}
            """#
        let output = runAll(.array(atPath: "data.items"), document)
        #expect(output.error == nil)
        #expect(output.records.map(\.json) == [#"{"id":1}"#, #"{"id":2,"items":[3]}"#])
        #expect(output.records.map(\.index) == [0, 1])
        #expect(output.records[0].byteOffset == 82)

        let single = runAll(.array(atKeys: ["results"]), #"{"results": [1, 2, 3], "next": null}"#)
        #expect(single.records.map(\.json) == ["1", "2", "3"])
        let slashed = runAll(.array(atPath: "a/b.c", separator: "/"), #"{"a": {"b.c": [true]}}"#)
        #expect(slashed.records.map(\.json) == ["true"])
    }

    @Test func missingPath() {
        #expect(
            runAll(.array(atPath: "data.items"), #"{"data": {"count": 0}, "x": 1}"#).error
                == .init(20, 1, 21, "no key 'items' in 'data', expected the array of records at 'data.items'")
        )
        #expect(
            runAll(.array(atPath: "data.items"), #"{"items": []}"#).error
                == .init(
                    12,
                    1,
                    13,
                    "no key 'data' in the top-level object, expected the array of records at 'data.items'"
                )
        )
    }

    @Test func notAnArrayAtThePath() {
        #expect(
            runAll(.array(atPath: "data.items"), #"{"data": {"items": {"id": 1}}}"#).error
                == .init(19, 1, 20, "expected an array of records at 'data.items', found an object")
        )
        #expect(
            runAll(.array(atPath: "data.items"), #"{"data": [1]}"#).error
                == .init(9, 1, 10, "expected an object at 'data', found an array")
        )
        #expect(
            runAll(.array(atPath: "data.items"), #"{"data": {"items": null}}"#).error
                == .init(19, 1, 20, "expected an array of records at 'data.items', found null")
        )
        #expect(
            runAll(.array(atPath: "data"), #"[1]"#).error
                == .init(0, 1, 1, "expected a top-level object with the records at 'data', found an array")
        )
        #expect(
            runAll(.array, #"{"a": 1}"#).error
                == .init(0, 1, 1, "expected a top-level array of records, found an object")
        )
    }

    @Test func duplicateKeyOnThePath() {
        let output = runAll(.array(atPath: "data.items"), #"{"data": {"items": [1], "items": [2]}}"#)
        #expect(output.records.map(\.json) == ["1"])
        #expect(output.error == .init(24, 1, 25, "duplicate key 'items' on the path to the records ('data.items')"))
    }

    @Test func jsonLines() {
        let document = "{\"id\": 1}\n\n  \n[2]\r\n\"three\"\r\n\r\n4\nnull\n  {\"id\": 5}  "
        let output = runAll(.jsonLines, document)
        #expect(output.error == nil)
        #expect(
            output.records.map(\.description) == [
                #"#0@0 1:1 {"id":1}"#, "#1@14 4:1 [2]", #"#2@19 5:1 "three""#, "#3@30 7:1 4", "#4@32 8:1 null",
                #"#5@39 9:3 {"id":5}"#,
            ]
        )
        // A number on the last line, without a final line feed.
        #expect(runAll(.jsonLines, "1\n2").records.map(\.json) == ["1", "2"])
    }

    @Test func jsonLinesErrorsHaveTheRightLine() {
        #expect(
            runAll(.jsonLines, "{\"a\": 1}\n\n{\"a\": 2,}\n{\"a\": 3}\n").error
                == .init(18, 3, 9, "trailing comma before '}'", record: 1)
        )
        // A value cut by a line feed is incomplete at the end of its line.
        #expect(
            runAll(.jsonLines, "{\"a\": 1}\r\n{\"a\":\r\n 2}\n").error
                == .init(16, 2, 7, "unexpected end of line, expected a value", record: 1)
        )
        // Two values on a line.
        #expect(
            runAll(.jsonLines, "1\n2 3\n").error
                == .init(4, 2, 3, "unexpected character '3' after the value (one value per line)", record: 1)
        )
        #expect(runAll(.jsonLines, "\"abc\n").error == .init(4, 1, 5, "unexpected end of line in string", record: 0))
        // A bad line gives no record, even when its value is complete.
        #expect(runAll(.jsonLines, "1\n{} x\n3").records.map(\.json) == ["1"])
        #expect(
            runAll(.jsonLines, "[1,\n").error == .init(3, 1, 4, "unexpected end of line, expected a value", record: 0)
        )
        // The last line, without a line feed, ends at the end of the input: a file cut short.
        #expect(
            runAll(.jsonLines, "1\n[1,").error == .init(5, 2, 4, "unexpected end of input, expected a value", record: 1)
        )
        #expect(
            runAll(.jsonLines, "1\n-").error
                == .init(3, 2, 2, "unexpected end of input, expected a digit after '-'", record: 1)
        )
        #expect(runAll(.jsonLines, "1\n\"ab").error == .init(5, 2, 4, "unexpected end of input in string", record: 1))
    }

    @Test func jsonLinesWithAByteOrderMark() {
        let output = run(.jsonLines, [0xEF, 0xBB, 0xBF] + Array("{\"a\": 1}\n2\n".utf8), chunking: .bytes(1))
        #expect(output.records.map(\.description) == [#"#0@3 1:1 {"a":1}"#, "#1@12 2:1 2"])
    }

    @Test func syntaxErrorInRecordN() {
        let records = (0..<50).map { #"{"id": \#($0), "name": "n\#($0)"}"# }
        var document = "[\n" + records.joined(separator: ",\n")
        document += ",\n{\"id\": 50, \"name\": \"bad\\q\"}\n]"
        let output = runAll(.array, document)
        #expect(output.records.count == 50)
        #expect(output.error == .init(document.utf8.count - 6, 52, 24, "invalid escape '\\q'", record: 50))

        let wrapped = runAll(.array(atPath: "data"), #"{"data": [1, 2, tru], "x": 1}"#)
        #expect(wrapped.records.map(\.json) == ["1", "2"])
        #expect(wrapped.error == .init(16, 1, 17, "invalid literal 'tru', expected 'true'", record: 2))
        // After the records: no record index.
        #expect(runAll(.array, "[1] [").error == .init(4, 1, 5, "unexpected character '[' after the top-level value"))
        // Before them: no record index either.
        #expect(runAll(.array(atPath: "a"), #"{"x": [1,]}"#).error == .init(9, 1, 10, "trailing comma before ']'"))
    }

    @Test func callbackErrorsAreRethrownAndStop() throws {
        struct Rejected: Error, Equatable { var index: Int }
        let stream = JSONRecordStream(mode: .array)
        var seen: [Int] = []
        #expect(throws: Rejected(index: 1)) {
            try Array("[1, 2, 3]".utf8).withUnsafeBytes { bytes in
                try stream.feed(bytes) { record in
                    seen.append(record.index)
                    if record.index == 1 { throw Rejected(index: 1) }
                }
            }
        }
        #expect(seen == [0, 1])
        #expect(throws: Rejected(index: 1)) { try stream.finish { _ in } }
    }

    @Test func tapesAreReusedAndMemoryStaysFlat() throws {
        let record =
            #"{"id": 1, "title": "a title of some length", "labels": [{"name": "bug"}, {"name": "ui"}], "body": "\#(String(repeating: "x", count: 200))"}"#
        let chunk = Array(Array(repeating: record, count: 100).joined(separator: ",").utf8)
        let stream = JSONRecordStream(mode: .array)
        var capacities = Set<[Int]>()
        var count = 0
        let onRecord = { (record: borrowing JSONRecord) in
            count += 1
            capacities.insert([record.tape.nodes.capacity, record.tape.bytes.capacity])
        }
        try Array("[".utf8).withUnsafeBytes { try stream.feed($0, onRecord) }
        let comma = Array(",".utf8)
        for round in 0..<50 {
            if round > 0 { try comma.withUnsafeBytes { try stream.feed($0, onRecord) } }
            try chunk.withUnsafeBytes { try stream.feed($0, onRecord) }
        }
        try Array("]".utf8).withUnsafeBytes { try stream.feed($0, onRecord) }
        try stream.finish(onRecord)
        #expect(count == 5_000)
        #expect(stream.recordCount == 5_000)
        // Grown once for the first record, never again.
        #expect(capacities.count <= 2)
    }

    @Test func keepingARecordIsSafe() throws {
        let stream = JSONRecordStream(mode: .array)
        var kept: [JSONTape] = []
        try Array(#"[{"a": 1}, {"a": 2}, {"a": 3}]"#.utf8).withUnsafeBytes { bytes in
            try stream.feed(bytes) { record in kept.append(record.tape) }
        }
        try stream.finish { _ in }
        #expect(kept.map { $0.jsonText(of: $0.root) } == [#"{"a":1}"#, #"{"a":2}"#, #"{"a":3}"#])
        #expect(kept.map(\.baseOffset) == [1, 11, 21])
    }

    @Test func recordsKeptOrNotStayWhatTheyWereAcrossGrowingAndShrinkingRecords() throws {
        // The builder writes through pointers into buffers it reuses from record to record: a record kept by the
        // caller (sharing those buffers) must never see a later record's writes, and a record not kept must not
        // leave anything behind. Records grow and shrink (nodes and bytes both, escapes and nesting included), every
        // third one is kept, and the input comes in small chunks.
        var generator = SplitMix64(seed: 20)
        var texts: [String] = []
        for index in 0..<400 {
            let width = Int(generator.next() % 3 == 0 ? generator.next() % 300 : generator.next() % 6)
            let word = String(repeating: "ab\\\"é\\u00e9", count: Int(generator.next() % 8))
            let items = (0..<width).map { item in item % 4 == 0 ? "{\"k\(item)\": [\(item), \"\(word)\"]}" : "\(item)" }
            texts.append("{\"id\": \(index), \"name\": \"\(word)\(index)\", \"items\": [\(items.joined(separator: ", "))]}")
        }
        let expected = try texts.map { text in
            let tape = try JSONTape.parse(text)
            return tape.jsonText(of: tape.root)
        }
        let bytes = Array(("[" + texts.joined(separator: ",\n") + "]").utf8)
        let stream = JSONRecordStream(mode: .array)
        var kept: [(index: Int, tape: JSONTape)] = []
        var seen: [String] = []
        let onRecord = { (record: borrowing JSONRecord) in
            seen.append(record.tape.jsonText(of: record.root))
            if record.index % 3 == 0 { kept.append((record.index, record.tape)) }
        }
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 1 + Int(generator.next() % 700))
            try bytes[start..<end].withUnsafeBytes { try stream.feed($0, onRecord) }
            start = end
        }
        try stream.finish(onRecord)
        #expect(seen == expected)
        #expect(kept.count == 134)
        for (index, tape) in kept {
            #expect(tape.jsonText(of: tape.root) == expected[index], "record \(index)")
        }
    }

    @Test func readsFilesInChunks() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "json-stream-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("dump.json")
        let records = (0..<3_000).map { #"{"id": \#($0), "body": "\#(String(repeating: "é", count: $0 % 50))"}"# }
        try Data(("{\"data\": {\"items\": [" + records.joined(separator: ",\n") + "]}}").utf8).write(to: file)

        for chunkSize in [JSONRecordStream.defaultChunkSize, 1_000, 7] {
            let stream = JSONRecordStream(mode: .array(atPath: "data.items"))
            var ids: [Int64] = []
            try stream.read(contentsOf: file, chunkSize: chunkSize) { record in
                let id = record.tape.value(forKey: "id", in: record.root).flatMap(record.tape.number(at:))
                ids.append(try #require(id).int64())
            }
            #expect(ids == (0..<3_000).map(Int64.init))
            #expect(stream.byteOffset == (try Data(contentsOf: file)).count)
        }

        let missing = JSONRecordStream(mode: .array)
        let error = try #require(throws: JSONRecordStream.ReadError.self) {
            try missing.read(contentsOfFile: directory.appendingPathComponent("nope.json").path) { _ in }
        }
        #expect(error.operation == "open")
        #expect(error.code == ENOENT)
        #expect(error.description.hasPrefix("cannot open '"))
    }

    @Test func corpusInsideAnArrayGivesTheSameRecordsAsTheTape() throws {
        // Each pass file, as the only record of an array and as a JSON Lines line when it fits on one line.
        for name in JSONFixture.passNames where name != "bom.json" && name != "deep-512.json" {
            let bytes = try JSONFixture.bytes("json/pass/\(name)")
            let tape = try parseTape(bytes)
            let expected = tape.jsonText(of: tape.root)
            let array = run(.array, Array("[".utf8) + bytes + Array("]".utf8), chunking: .random(seed: 5, maximum: 9))
            #expect(array.records.map(\.json) == [expected], "\(name)")
            if !bytes.dropLast().contains(0x0A) {
                let lines = run(.jsonLines, bytes + Array("\n".utf8) + bytes, chunking: .random(seed: 6, maximum: 9))
                #expect(lines.records.map(\.json) == [expected, expected], "\(name)")
            }
        }
    }

    @Test func compactedRecordsDoNotKeepTheSlackOfEarlierRecords() throws {
        // A large record first grows the stream's buffers; a small record after it, kept as the importer keeps
        // records, must not hold buffers of the large one's size (a batch of 1,000 such copies did).
        let body = String(repeating: "x\\n", count: 20_000)
        let document = "[{\"id\": 1, \"body\": \"\(body)\", \"tags\": [\(Array(repeating: "1", count: 2_000).joined(separator: ","))]}, {\"id\": 2}]"
        let stream = JSONRecordStream(mode: .array)
        var plain: [JSONRecord] = []
        var compact: [JSONRecord] = []
        let keep = { (record: borrowing JSONRecord) in
            plain.append(copy record)
            compact.append(record.compacted())
        }
        try Array(document.utf8).withUnsafeBytes { try stream.feed($0, keep) }
        try stream.finish(keep)
        try #require(compact.count == 2)
        for (plain, compact) in zip(plain, compact) {
            #expect(compact.tape.jsonText(of: compact.root) == plain.tape.jsonText(of: plain.root))
            #expect(compact.index == plain.index && compact.byteOffset == plain.byteOffset)
        }
        // The plain copy of the small record shares the stream's grown buffers; the compact one is its own size.
        #expect(plain[1].tape.nodes.capacity >= 2_000)
        #expect(compact[1].tape.nodes.capacity < 16)
        #expect(compact[1].tape.bytes.capacity < 64)
        #expect(compact[0].tape.bytes.count >= 40_000)
    }

    /// Runs a JSON Lines document with a malformed-line handler: the records, and the errors it was given.
    func runSkippingMalformedLines(_ document: String, chunking: Chunking) -> (output: Output, malformed: [ErrorSummary]) {
        runSkippingMalformedLines(Array(document.utf8), chunking: chunking)
    }

    func runSkippingMalformedLines(_ bytes: [UInt8], chunking: Chunking) -> (output: Output, malformed: [ErrorSummary]) {
        let stream = JSONRecordStream(mode: .jsonLines)
        var malformed: [ErrorSummary] = []
        stream.malformedLineHandler = { malformed.append(ErrorSummary($0)) }
        var output = Output()
        let collect = { (record: borrowing JSONRecord) in
            output.records.append(
                .init(index: record.index, byteOffset: record.byteOffset, line: record.line, column: record.column,
                      json: record.tape.jsonText(of: record.root)))
        }
        do {
            for range in chunking.ranges(bytes.count) {
                try Array(bytes[range]).withUnsafeBytes { try stream.feed($0, collect) }
            }
            try stream.finish(collect)
            #expect(stream.byteOffset == bytes.count, "\(chunking)")
        } catch let error as JSONSyntaxError {
            output.error = ErrorSummary(error)
        } catch {
            Issue.record("unexpected error \(error)")
        }
        return (output, malformed)
    }

    @Test func jsonLinesWithAHandlerSkipMalformedLinesAndGoOn() {
        let document = """
            {"id": 1}
            {"id": 2, oops}
              {"id": 3}
            {"id": 4} trailing

            {"id": 5
            {"id": 6, "text": "caf\u{E9}"}
            "unterminated
            {"id": 7}
            {"id": 8
            """
        let expected = runSkippingMalformedLines(document, chunking: .whole)
        #expect(expected.output.error == nil)
        // Good lines keep the index, offset, line and column of their line; bad ones take an index each.
        #expect(expected.output.records.map(\.description) == [
            #"#0@0 1:1 {"id":1}"#,
            #"#2@28 3:3 {"id":3}"#,
            #"#5@67 7:1 {"id":6,"text":"café"}"#,
            #"#7@108 9:1 {"id":7}"#,
        ])
        #expect(expected.malformed.map(\.recordIndex) == [1, 3, 4, 6, 8])
        #expect(expected.malformed.map(\.line) == [2, 4, 6, 8, 10])
        #expect(expected.malformed[0] == ErrorSummary(20, 2, 11, "unexpected character 'o', expected a string key", record: 1))
        #expect(expected.malformed[1].reason.contains("trailing") || expected.malformed[1].reason.contains("after"), "\(expected.malformed[1])")
        #expect(expected.malformed[2].reason.contains("end of line"), "\(expected.malformed[2])")
        #expect(expected.malformed[4].reason.contains("end of input") || expected.malformed[4].reason.contains("end of line"), "\(expected.malformed[4])")
        for chunking in Chunking.all.dropFirst() {
            let run = runSkippingMalformedLines(document, chunking: chunking)
            #expect(run.output == expected.output, "\(chunking)")
            #expect(run.malformed == expected.malformed, "\(chunking)")
        }
        // Without a handler the first bad line still ends the stream.
        #expect(run(.jsonLines, document).error?.recordIndex == 1)
    }

    /// Bad first lines around a byte order mark (whole, cut short, alone), and CRLF lines: in every chunking
    /// (a mark split across chunks included) every byte is counted and later records keep their offsets.
    @Test func malformedLinesKeepOffsetsWithAByteOrderMarkAndCRLF() {
        let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
        let cases: [(name: String, bytes: [UInt8], records: [String], malformed: [Int])] = [
            ("mark, bad line", mark + Array("{x}\n{\"id\": 1}\n".utf8), [#"#1@7 2:1 {"id":1}"#], [0]),
            ("partial mark, garbage", Array(mark.prefix(2)) + Array("x\n{\"id\": 1}\n".utf8), [#"#1@4 2:1 {"id":1}"#], [0]),
            ("partial mark alone", Array(mark.prefix(2)) + Array("\n{\"id\": 1}\n".utf8), [#"#1@3 2:1 {"id":1}"#], [0]),
            ("one byte of a mark", Array(mark.prefix(1)), [], [0]),
            ("CRLF", Array("{\"id\": 1}\r\n{oops}\r\n{\"id\": 2}\r\n".utf8), [#"#0@0 1:1 {"id":1}"#, #"#2@19 3:1 {"id":2}"#], [1]),
        ]
        for (name, bytes, records, malformed) in cases {
            let expected = runSkippingMalformedLines(bytes, chunking: .whole)
            #expect(expected.output.error == nil, "\(name)")
            #expect(expected.output.records.map(\.description) == records, "\(name)")
            #expect(expected.malformed.map(\.recordIndex) == malformed.map { $0 }, "\(name)")
            for chunking in Chunking.all.dropFirst() {
                let run = runSkippingMalformedLines(bytes, chunking: chunking)
                #expect(run.output == expected.output, "\(name), \(chunking)")
                #expect(run.malformed == expected.malformed, "\(name), \(chunking)")
            }
        }
    }

    @Test func anErrorTheMalformedLineHandlerThrowsEndsTheStreamWithTheLinesIndex() throws {
        let stream = JSONRecordStream(mode: .jsonLines)
        stream.malformedLineHandler = { throw $0 }
        let error = try #require(throws: JSONSyntaxError.self) {
            try Array("{\"a\": 1}\n{oops}\n{\"a\": 2}\n".utf8).withUnsafeBytes { try stream.feed($0) { _ in } }
        }
        #expect(error.recordIndex == 1)
        #expect(error.line == 2)
    }
}
