import Testing

@testable import CodableStoreJSON

@Suite("JSON syntax errors")
struct JSONSyntaxErrorTests {
    @Test func descriptionAndSnippet() throws {
        let document = "{\n  \"name\": \"x\",\n  \"tags\": [1, 2,}\n"
        let error = try #require(syntaxError(document))
        #expect(error.byteOffset == 33)
        #expect(error.line == 3)
        #expect(error.column == 17)
        #expect(error.reason == "unexpected character '}', expected a value")
        #expect(
            error.description
                == "JSON syntax error at line 3, column 17 (byte 33): unexpected character '}', expected a value"
        )
        #expect(
            error.detailedDescription() == """
                error: unexpected character '}', expected a value
                 --> line 3:17 (byte 33)
                  |
                3 |   "tags": [1, 2,}
                  |                 ^
                """
        )
    }

    @Test func errorInALaterChunkHasTheAbsoluteOffset() throws {
        let record = #"{"id": 1, "name": "abc"}"#
        let document = "[" + Array(repeating: record, count: 100).joined(separator: ",\n") + ",\n{\"id\": 2 \"x\": 1}]"
        let bytes = Array(document.utf8)
        let expectedOffset = document.utf8.count - 8  // the quote of "x"
        for chunking in [Chunking.whole, .bytes(64), .bytes(1), .random(seed: 9, maximum: 100)] {
            let error = try #require(syntaxError(bytes, chunking: chunking))
            #expect(error.byteOffset == expectedOffset, "\(chunking)")
            #expect(error.line == 101, "\(chunking)")
            #expect(error.column == 10, "\(chunking)")
            #expect(error.reason == "unexpected character '\"', expected ',' or '}'", "\(chunking)")
            // The excerpt always shows the line up to the error.
            #expect(error.sourceExcerpt.hasPrefix(#"{"id": 2 "#), "\(chunking)")
        }
        let whole = try #require(syntaxError(bytes))
        #expect(whole.sourceExcerpt == #"{"id": 2 "x": 1}]"#)
        #expect(whole.caretPosition == 9)
    }

    @Test func longLinesAreTruncatedAroundTheError() throws {
        let document = "[" + String(repeating: "1, ", count: 100) + "x" + String(repeating: ", 1", count: 100) + "]"
        let error = try #require(syntaxError(document))
        #expect(error.byteOffset == 301)
        #expect(error.column == 302)
        #expect(error.sourceExcerpt.hasPrefix("…"))
        #expect(error.sourceExcerpt.hasSuffix("…"))
        #expect(error.sourceExcerpt.count < 80)
        let caretIndex = error.sourceExcerpt.index(error.sourceExcerpt.startIndex, offsetBy: error.caretPosition)
        #expect(error.sourceExcerpt[caretIndex] == "x")
    }

    @Test func excerptEscapesControlCharactersAndInvalidUTF8() throws {
        let bytes: [UInt8] = Array(#"["ok", "é", ""#.utf8) + [0xC0, 0x80] + Array(#""]"#.utf8)
        let error = try #require(syntaxError(bytes))
        #expect(error.reason == "invalid UTF-8 byte 0xC0 (overlong encoding)")
        #expect(error.byteOffset == 14)
        #expect(error.column == 15)
        #expect(error.sourceExcerpt == #"["ok", "é", "\xC0\x80"]"#)
        #expect(error.caretPosition == 13)

        let tab = try #require(syntaxError("[1,\t\u{C}]"))
        #expect(tab.sourceExcerpt == "[1,\\t\\u{C}]")
        #expect(tab.caretPosition == 5)
    }

    @Test func columnsCountBytes() throws {
        // "é" is two bytes: the column counts them; the caret is under the character.
        let error = try #require(syntaxError(#"["é" x]"#))
        #expect(error.byteOffset == 6)
        #expect(error.column == 7)
        #expect(error.caretPosition == 5)
    }

    @Test func endOfInputIsReportedAfterTheLastByte() throws {
        let error = try #require(syntaxError("{\"a\": [1, 2\n"))
        #expect(ErrorSummary(error) == .init(12, 2, 1, "unexpected end of input, expected ',' or ']'"))
        #expect(error.detailedDescription().hasSuffix("2 | \n  | ^"))
    }

    @Test func lineAndColumnAfterALineFeedInAnEarlierChunk() throws {
        let document = "[\n1,\n2,\n3 4]"
        for chunking in Chunking.all {
            let error = try #require(syntaxError(Array(document.utf8), chunking: chunking))
            #expect(
                ErrorSummary(error) == .init(10, 4, 3, "unexpected character '4', expected ',' or ']'"),
                "\(chunking)"
            )
        }
    }

    @Test func readerStaysFailed() throws {
        let builder = JSONTapeBuilder()
        let reader = JSONReader(handler: builder)
        let first = try #require(throws: JSONSyntaxError.self) {
            try Array("[1 }".utf8).withUnsafeBytes { try reader.parse($0) }
        }
        let second = try #require(throws: JSONSyntaxError.self) {
            try Array("]".utf8).withUnsafeBytes { try reader.parse($0) }
        }
        #expect(first == second)
        #expect(throws: JSONSyntaxError.self) { try reader.finish() }
    }

    @Test func handlerErrorsAreRethrownUnchanged() throws {
        struct Stop: Error, Equatable {}
        final class Stopper: JSONEventHandler {
            func startObject(at offset: Int) throws {}
            func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {}
            func endObject(at offset: Int) throws {}
            func startArray(at offset: Int) throws {}
            func endArray(at offset: Int) throws {}
            func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws { throw Stop() }
            func number(_ text: UnsafeRawBufferPointer, at offset: Int) throws {}
            func bool(_ value: Bool, at offset: Int) throws {}
            func null(at offset: Int) throws {}
        }
        let reader = JSONReader(handler: Stopper())
        #expect(throws: Stop()) { try Array(#"[1, "a"]"#.utf8).withUnsafeBytes { try reader.parse($0) } }
    }

    @Test func eventsCarryTheOffsetOfTheirToken() throws {
        final class Recorder: JSONEventHandler {
            var events: [String] = []
            func startObject(at offset: Int) throws { events.append("{@\(offset)") }
            func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
                events.append("k\(String(decoding: utf8, as: UTF8.self))@\(offset)")
            }
            func endObject(at offset: Int) throws { events.append("}@\(offset)") }
            func startArray(at offset: Int) throws { events.append("[@\(offset)") }
            func endArray(at offset: Int) throws { events.append("]@\(offset)") }
            func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
                events.append("s\(String(decoding: utf8, as: UTF8.self))@\(offset)")
            }
            func number(_ text: UnsafeRawBufferPointer, at offset: Int) throws {
                events.append("n\(String(decoding: text, as: UTF8.self))@\(offset)")
            }
            func bool(_ value: Bool, at offset: Int) throws { events.append("\(value)@\(offset)") }
            func null(at offset: Int) throws { events.append("null@\(offset)") }
        }
        let document = #"{"a\"b": [12, "x\ny", true, false, null, -0.5e3, "plain"], "c": {}}"#
        let expected = [
            "{@0", "ka\"b@1", "[@9", "n12@10", "sx\ny@14", "true@22", "false@28", "null@35", "n-0.5e3@41",
            "splain@49", "]@56", "kc@59", "{@64", "}@65", "}@66",
        ]
        for chunking in Chunking.all {
            let recorder = Recorder()
            let reader = JSONReader(handler: recorder)
            for range in chunking.ranges(document.utf8.count) {
                try Array(Array(document.utf8)[range]).withUnsafeBytes { try reader.parse($0) }
            }
            try reader.finish()
            #expect(recorder.events == expected, "\(chunking)")
        }
    }
}
