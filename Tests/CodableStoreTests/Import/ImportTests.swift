import CodableStore
import Foundation
import IssuesModel
import Testing

@Suite struct ImportTests {
    static func dump(count: Int, jsonLines: Bool = false, wrapped: Bool = false, duplicates: Double = 0.1) throws -> String {
        var generator = IssueDumpGenerator(seed: 7, duplicateFraction: duplicates)
        var bytes: [UInt8] = []
        if wrapped { bytes += #"{"meta": {"page": 1, "ignored": [1, {"a": null}]}, "data": {"items": "#.utf8 }
        if jsonLines {
            generator.writeLines(count: count) { bytes += $0 }
        } else {
            generator.writeArray(count: count) { bytes += $0 }
        }
        if wrapped { bytes += #"}, "next": "https://example.com/page/2"}"#.utf8 }
        let path = TestStore.temporaryPath(jsonLines ? "dump.jsonl" : "dump.json")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The reference dump of `count` good records, then a record that is not JSON (`{"id": }`).
    static func dumpWithASyntaxError(after count: Int) throws -> String {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: try dump(count: count)))
        while bytes.last != UInt8(ascii: "]") { bytes.removeLast() }
        bytes.removeLast()
        bytes += Data(#", {"id": }]"#.utf8)
        let path = TestStore.temporaryPath("broken.json")
        try bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    static func options(_ layout: ImportOptions.Layout = .array, batchSize: Int = 100, policy: ImportOptions.FailurePolicy = .stop) -> ImportOptions {
        ImportOptions(layout: layout, batchSize: batchSize, failurePolicy: policy, decoder: issueDecoder())
    }

    /// Everything the store holds, as text, for comparing stores.
    static func contents(_ path: String) throws -> [[String]] {
        let raw = try RawDatabase(path)
        return try raw.rows("SELECT id, number, title, state, createdAt, comments, score, body FROM GitIssue ORDER BY id")
            + raw.rows("SELECT i.id, u.id, u.login FROM GitIssue i JOIN User u ON u._pk = i.user ORDER BY i.id")
            + raw.rows("SELECT id, name FROM Topic ORDER BY id")
            + raw.rows("SELECT i.id, t.id, j.position FROM GitIssue_labels j JOIN GitIssue i ON i._pk = j.source JOIN Topic t ON t._pk = j.target ORDER BY i.id, t.id")
    }

    @Test func sameContentsWholeInBatchesOfOneWithAPathOrAsJSONLines() throws {
        let count = 300
        var results: [[[String]]] = []
        for (dump, layout, batchSize) in [
            (try Self.dump(count: count), ImportOptions.Layout.array, 1_000),
            (try Self.dump(count: count), .array, 1),
            (try Self.dump(count: count, wrapped: true), .arrayAt("data.items"), 37),
            (try Self.dump(count: count, jsonLines: true), .jsonLines, 100),
        ] {
            let path = TestStore.temporaryPath()
            let store = try Store(path: path, entities: issueEntities)
            let report = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(layout, batchSize: batchSize))
            #expect(report.recordsRead == count)
            #expect(report.recordsImported == count)
            results.append(try Self.contents(path))
        }
        #expect(results[0].count > count)
        for result in results.dropFirst() { #expect(result == results[0]) }
    }

    /// The report says where the CPU time went, per thread: each part is one thread's time, so none exceeds the
    /// import's wall time (the process's CPU time could, on two cores).
    @Test(arguments: [ImportOptions.FailurePolicy.stop, .skip])
    func theReportSplitsTheCPUTimeByThread(policy: ImportOptions.FailurePolicy) throws {
        let dump = try Self.dump(count: 2_000)
        let store = try Store(path: TestStore.temporaryPath(), entities: issueEntities)
        let report = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(policy: policy))
        let cpu = try #require(report.cpu)
        #expect(cpu.reading > 0)
        #expect(cpu.decoding > 0)
        // Only the stop policy in one transaction writes on a thread of its own.
        if policy == .stop { #expect(cpu.writing > 0) } else { #expect(cpu.writing == 0) }
        for part in [cpu.reading, cpu.decoding, cpu.writing] { #expect(part <= report.duration + 0.01) }
        #expect(report.summary.contains("CPU: reading "))
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any]
        let encoded = try #require(json?["cpu"] as? [String: Double])
        #expect(Set(encoded.keys) == ["reading", "decoding", "writing"])
        // A report written before the field existed still decodes.
        var old = try #require(json)
        old["cpu"] = nil
        let decoded = try JSONDecoder().decode(ImportReport.self, from: JSONSerialization.data(withJSONObject: old))
        #expect(decoded.cpu == nil)
        #expect(decoded.recordsRead == report.recordsRead)
    }

    /// The report says where the decoding thread waited: for input from a feed that pauses, at least most of the
    /// pause; for index builds, only when tables were empty at the start (their indexes are built at the end).
    @Test(.timeLimit(.minutes(1))) func theReportSaysWhereDecodingWaited() throws {
        let lines = try Data(contentsOf: URL(fileURLWithPath: try Self.dump(count: 400, jsonLines: true)))
        let half = try #require(lines[(lines.count / 2)...].firstIndex(of: UInt8(ascii: "\n"))) + 1
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let input = ends[0]
        defer { close(input) }
        let feed = Thread { [output = ends[1]] in
            func send(_ part: Data) {
                part.withUnsafeBytes { bytes in
                    var sent = 0
                    while sent < bytes.count {
                        let written = write(output, bytes.baseAddress! + sent, bytes.count - sent)
                        if written <= 0 { return }
                        sent += written
                    }
                }
            }
            send(lines[..<half])
            Thread.sleep(forTimeInterval: 1)
            send(lines[half...])
            close(output)
        }
        feed.start()
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let report = try store.importJSON(GitIssue.self, from: .fileDescriptor(input), options: Self.options(.jsonLines))
        #expect(report.recordsImported == 400)
        let waits = try #require(report.waits)
        #expect(waits.input >= 0.5)
        #expect(waits.indexBuilds > 0)
        for part in [waits.input, waits.lookups, waits.writing, waits.indexBuilds] { #expect(part >= 0) }
        #expect(waits.input + waits.lookups + waits.writing + waits.indexBuilds <= report.duration + 0.01)
        #expect(report.summary.contains("decoding waited \(String(format: "%.2f", waits.input)) s for input"))

        // A commit per batch defers no index and writes on the decoding thread: those parts are 0.
        var perBatch = Self.options()
        perBatch.commitEveryBatch = true
        let again = try #require(try store.importJSON(GitIssue.self, from: .file(try Self.dump(count: 400)), options: perBatch).waits)
        #expect(again.indexBuilds == 0)
        #expect(again.lookups == 0)
        #expect(again.writing == 0)
        #expect(again.input < waits.input)

        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(Set(try #require(json["waits"] as? [String: Double]).keys) == ["input", "lookups", "writing", "indexBuilds"])
        var old = json
        old["waits"] = nil
        #expect(try JSONDecoder().decode(ImportReport.self, from: JSONSerialization.data(withJSONObject: old)).waits == nil)
    }

    /// A dump without repeated ids: a repeated id carries other values, which a re-import writes again
    /// when its occurrences fall in different batches (see the next test).
    @Test func reImportChangesNothingAndReportsEverythingUnchanged() throws {
        let dump = try Self.dump(count: 200, duplicates: 0)
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let first = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options())
        let issues = Int(try RawDatabase(path).value("SELECT count(*) FROM GitIssue"))!
        #expect(first.entities["GitIssue"]?.inserted == issues)
        let before = try Self.contents(path)
        log.reset()
        let second = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options())
        #expect(log.writes.isEmpty, "\(log.writes.prefix(3))")
        #expect(try Self.contents(path) == before)
        #expect(second.entities["GitIssue"]?.inserted == 0)
        #expect(second.entities["GitIssue"]?.updated == 0)
        #expect((second.entities["GitIssue"]?.unchanged ?? 0) >= issues)
    }

    /// Into an empty table, the importer knows which identities it inserted: new records need no lookup,
    /// and an id repeated in a later batch is still found (one row per id).
    @Test func anImportIntoAnEmptyStoreLooksUpOnlyRepeatedIdentities() throws {
        let path = TestStore.temporaryPath()
        let log = StatementLog()
        let store = try Store(path: path, entities: issueEntities, options: .init(statementObserver: log.observer))
        let fresh = try Self.dump(count: 300, duplicates: 0)
        log.reset()
        _ = try store.importJSON(GitIssue.self, from: .file(fresh), options: Self.options(batchSize: 50))
        let issueLookups = { log.all.filter { $0.contains("FROM \"GitIssue\" WHERE") && ($0.contains(" IN (") || $0.contains(" BETWEEN ")) } }
        #expect(issueLookups().isEmpty, "\(issueLookups().prefix(2))")

        let repeated = try Self.dump(count: 300)  // 10% of records repeat an earlier id, across batches
        let otherPath = TestStore.temporaryPath()
        let other = try Store(path: otherPath, entities: issueEntities, options: .init(statementObserver: log.observer))
        log.reset()
        _ = try other.importJSON(GitIssue.self, from: .file(repeated), options: Self.options(batchSize: 50))
        #expect(!issueLookups().isEmpty)
        let raw = try RawDatabase(otherPath)
        #expect(try raw.value("SELECT count(*) FROM GitIssue") == raw.value("SELECT count(DISTINCT id) FROM GitIssue"))
        #expect(Int(try raw.value("SELECT count(*) FROM GitIssue"))! < 300)
    }

    @Test func reImportOfADumpWithRepeatedIdsEndsInTheSameStore() throws {
        let dump = try Self.dump(count: 300)
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(batchSize: 50))
        let before = try Self.contents(path)
        #expect(Int(try RawDatabase(path).value("SELECT count(*) FROM GitIssue"))! < 300)
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(batchSize: 50))
        #expect(try Self.contents(path) == before)
    }

    @Test(arguments: [
        ("truncated", #"[{"id": 1, "number": 1, "title": "a"}, {"id": 2, "num"#, 1, "unexpected end"),
        ("malformed", "[{\"id\": 1, \"number\": 1, \"title\": \"a\"},\n {\"id\": 2, \"number\": 2 \"title\": \"b\"}]", 2, ""),
        ("wrong type", "[{\"id\": 1, \"number\": 1, \"title\": \"a\"},\n {\"id\": 2, \"number\": \"two\", \"title\": \"b\"}]", 2, "Expected to decode Int but found a string instead."),
    ])
    func badInputIsAClearErrorAndLeavesTheStoreAsBefore(name: String, json: String, line: Int, reason: String) throws {
        let dump = TestStore.temporaryPath("bad.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: dump))
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        try store.write { try $0.insert(GitIssue(id: 99, number: 99, title: "kept")) }
        let error = try #require(throws: ImportError.self) {
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(batchSize: 1))
        }
        #expect(error.line == line, "\(error)")
        #expect(error.column != nil)
        if !reason.isEmpty { #expect(error.reason.contains(reason), "\(error)") }
        if name == "wrong type" {
            #expect(error.recordIndex == 1)
            #expect(error.codingPath == "[1].number")
            #expect(error.description == "record 1 (line 2, column 2, byte 40) at [1].number: Expected to decode Int but found a string instead.")
        }
        #expect(try RawDatabase(path).rows("SELECT id, title FROM GitIssue") == [["99", "kept"]])
    }

    @Test func theSkipPolicyImportsTheRestAndListsTheBadRecords() throws {
        let json = """
            [{"id": 1, "number": 1, "title": "a"},
             {"id": 2, "number": "two", "title": "b"},
             {"id": 3, "number": 3, "title": "c", "user": {"login": "no id"}},
             {"id": 4, "number": 4, "title": "d"}]
            """
        let dump = TestStore.temporaryPath("skip.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: dump))
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let report = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(batchSize: 10, policy: .skip))
        #expect(report.recordsRead == 4)
        #expect(report.recordsImported == 2)
        #expect(report.recordsSkipped == 2)
        #expect(report.skippedRecords.map(\.index) == [1, 2])
        #expect(report.skippedRecords[0].codingPath == "[1].number")
        #expect(report.skippedRecords[0].line == 2)
        #expect(report.skippedRecords[1].reason.contains("has no identity"))
        #expect(try RawDatabase(path).rows("SELECT id FROM GitIssue ORDER BY id") == [["1"], ["4"]])
        #expect(try RawDatabase(path).value("SELECT count(*) FROM User") == "0")
    }

    @Test(arguments: [1, 2, 10])
    func theSkipPolicySkipsJSONLinesThatAreNotJSON(batchSize: Int) throws {
        let lines = """
            {"id": 1, "number": 1, "title": "a"}
            {"id": 2, "number": 2, "title": "b",}
            {"id": 3, "number": "three", "title": "c"}

            {"id": 4, "number": 4, "title": "d"} {"id": 5}
            {"id": 6, "number": 6, "title": "f"}
            {"id": 7, "number": 7, "title": "g
            {"id": 8, "number": 8, "title": "h"}
            {"id": 9, "number": 9
            """
        let dump = TestStore.temporaryPath("skip.jsonl")
        try Data(lines.utf8).write(to: URL(fileURLWithPath: dump))
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let report = try store.importJSON(
            GitIssue.self, from: .file(dump), options: Self.options(.jsonLines, batchSize: batchSize, policy: .skip))
        #expect(report.recordsRead == 8)
        #expect(report.recordsImported == 3)
        #expect(report.recordsSkipped == 5)
        // In record order, syntax errors (at the error) and decoding errors (at the record) alike.
        #expect(report.skippedRecords.map(\.index) == [1, 2, 3, 5, 7])
        #expect(report.skippedRecords.map(\.line) == [2, 3, 5, 7, 9])
        #expect(report.skippedRecords[0].column == 37)
        #expect(report.skippedRecords[0].reason.hasPrefix("invalid JSON: "), "\(report.skippedRecords[0])")
        #expect(report.skippedRecords[0].codingPath == nil)
        #expect(report.skippedRecords[1].codingPath == "[2].number")
        #expect(report.skippedRecords[2].column == 38, "\(report.skippedRecords[2])")
        #expect(report.skippedRecords[4].reason.contains("end of"), "\(report.skippedRecords[4])")
        #expect(report.bytesRead == lines.utf8.count)
        #expect(try RawDatabase(path).rows("SELECT id FROM GitIssue ORDER BY id") == [["1"], ["6"], ["8"]])

        // The stop policy still stops at the first bad line, keeping nothing.
        let other = TestStore.temporaryPath()
        let error = try #require(throws: ImportError.self) {
            _ = try Store(path: other, entities: issueEntities).importJSON(
                GitIssue.self, from: .file(dump), options: Self.options(.jsonLines, batchSize: batchSize))
        }
        #expect(error.recordIndex == 1 && error.line == 2 && error.column == 37, "\(error)")
        #expect(try RawDatabase(other).value("SELECT count(*) FROM GitIssue") == "0")
    }

    @Test func aJSONLinesFileOfMostlyBadLinesMovesOnInBatches() throws {
        let lines = (0..<25).map { "not json \($0)" } + [#"{"id": 1, "number": 1, "title": "a"}"#]
        let dump = TestStore.temporaryPath("bad.jsonl")
        let text = lines.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: dump))
        let store = try Store.inMemory(entities: issueEntities)
        let progress = StatementLog()
        var options = Self.options(.jsonLines, batchSize: 10, policy: .skip)
        options.progress = { progress.observer("\($0.recordsRead) \($0.bytesRead)") }
        let report = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
        #expect(report.recordsRead == 26 && report.recordsSkipped == 25 && report.recordsImported == 1)
        #expect(report.skippedRecords.map(\.index) == Array(0..<25))
        #expect(report.skippedRecords.map(\.line) == Array(1...25))
        #expect(report.bytesRead == text.utf8.count)
        // Bad lines are handed over ten at a time, not all at the end: progress moves on with them.
        let reported = progress.all.compactMap { Int($0.split(separator: " ")[0]) }
        #expect(Array(reported.prefix(2)) == [10, 20], "\(progress.all)")
        #expect(reported.last == 26)
    }

    /// More skipped records than `maximumSkippedRecords` fail the import, naming the one over the limit; bad
    /// JSON Lines lines and records that do not decode both count.
    @Test(arguments: [1, 4])
    func tooManySkippedRecordsFailTheImportAndKeepNothing(batchSize: Int) throws {
        let lines = """
            {"id": 1, "number": 1, "title": "a"}
            not json
            {"id": 2, "number": "two", "title": "b"}
            {"id": 3, "number": 3, "title": "c"}
            {oops}
            {"id": 4, "number": 4, "title": "d"}
            """
        let dump = TestStore.temporaryPath("limit.jsonl")
        try Data(lines.utf8).write(to: URL(fileURLWithPath: dump))
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        var options = Self.options(.jsonLines, batchSize: batchSize, policy: .skip)
        options.maximumSkippedRecords = 2
        let error = try #require(throws: ImportError.self) {
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
        }
        #expect(error.recordIndex == 4 && error.line == 5, "\(error)")
        #expect(error.reason.hasPrefix("more than 2 records skipped (the limit); the next: invalid JSON: "), "\(error)")
        #expect(error.underlyingError is JSONSyntaxError)
        #expect(try RawDatabase(path).value("SELECT count(*) FROM GitIssue") == "0")

        options.maximumSkippedRecords = 3
        let report = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
        #expect(report.recordsSkipped == 3 && report.recordsImported == 3)
        #expect(try RawDatabase(path).rows("SELECT id FROM GitIssue ORDER BY id") == [["1"], ["3"], ["4"]])

        // A decoding failure over the limit is named with its coding path.
        options.maximumSkippedRecords = 1
        let second = try #require(throws: ImportError.self) {
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
        }
        #expect(second.recordIndex == 2 && second.codingPath == "[2].number", "\(second)")
        #expect(second.underlyingError is DecodingError)
    }

    @Test func aSyntaxErrorInAnArrayEndsTheImportUnderTheSkipPolicyToo() throws {
        // Where the next record of an array would start cannot be known, so nothing after the error is guessed.
        let json = "[{\"id\": 1, \"number\": 1, \"title\": \"a\"},\n {\"id\": 2, \"number\": 2,, \"title\": \"b\"},\n {\"id\": 3, \"number\": 3, \"title\": \"c\"}]"
        let dump = TestStore.temporaryPath("skip-array.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: dump))
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        let error = try #require(throws: ImportError.self) {
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: Self.options(batchSize: 1, policy: .skip))
        }
        #expect(error.recordIndex == 1 && error.line == 2, "\(error)")
        #expect(try RawDatabase(path).value("SELECT count(*) FROM GitIssue") == "0")
    }

    @Test func progressIsReportedPerBatch() throws {
        let dump = try Self.dump(count: 250)
        let store = try Store.inMemory(entities: issueEntities)
        let seen = StatementLog()
        var options = Self.options(batchSize: 100)
        options.progress = { progress in seen.observer("\(progress.recordsRead) \(progress.bytesRead) \(progress.totalBytes ?? -1)") }
        _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
        let lines = seen.all
        #expect(lines.count == 4)  // after each of the 3 batches, and at the end
        #expect(lines.last?.hasPrefix("250 ") == true)
        let size = try FileManager.default.attributesOfItem(atPath: dump)[.size] as! Int
        #expect(lines.last == "250 \(size) \(size)")
    }

    /// Records `{"id": i, "number": i, "title": "t"}` for i in `range`, some replaced by other text.
    static func plainDump(_ range: Range<Int>, replacing replacements: [Int: String]) throws -> String {
        let records = range.map { replacements[$0] ?? #"{"id": \#($0), "number": \#($0), "title": "t"}"# }
        let path = TestStore.temporaryPath("plain.json")
        try Data(("[" + records.joined(separator: ",\n") + "]").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The input is read on another thread, ahead of decoding: its errors must still come in record order,
    /// after every batch before them, and a failure while decoding must stop the reader.
    @Test func errorsComeInRecordOrderWhileTheInputIsReadAhead() throws {
        // A wrong type in record 150 (batch 1) and a syntax error in record 4000 that the reader may reach
        // first: the import reports record 150, keeping batch 0 (committed), and returns.
        let dump = try Self.plainDump(0..<5_000, replacing: [
            150: #"{"id": 150, "number": "150", "title": "t"}"#, 4_000: #"{"id": 4000, "number": 4000 "title": "t"}"#,
        ])
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: issueEntities)
        var options = Self.options(batchSize: 100)
        options.commitEveryBatch = true
        let error = try #require(throws: ImportError.self) {
            _ = try store.importJSON(GitIssue.self, from: .file(dump), options: options)
        }
        #expect(error.recordIndex == 150)
        #expect(error.codingPath == "[150].number")
        #expect(try RawDatabase(path).value("SELECT count(*) FROM GitIssue") == "100")
        #expect(try RawDatabase(path).value("SELECT max(id) FROM GitIssue") == "99")

        // Only the syntax error: the batches before the one it cuts short are kept, that batch is not.
        let syntax = try Self.plainDump(0..<5_000, replacing: [4_000: #"{"id": 4000, "number": 4000 "title": "t"}"#])
        let second = TestStore.temporaryPath()
        let error2 = try #require(throws: ImportError.self) {
            _ = try Store(path: second, entities: issueEntities).importJSON(GitIssue.self, from: .file(syntax), options: options)
        }
        #expect(error2.recordIndex == 4_000)
        #expect(error2.line == 4_001)
        #expect(error2.underlyingError is JSONSyntaxError)
        #expect(try RawDatabase(second).value("SELECT count(*) FROM GitIssue") == "4000")

        // In one transaction (the default), neither leaves anything.
        let third = TestStore.temporaryPath()
        #expect(throws: ImportError.self) {
            _ = try Store(path: third, entities: issueEntities).importJSON(GitIssue.self, from: .file(syntax), options: Self.options(batchSize: 100))
        }
        #expect(try RawDatabase(third).value("SELECT count(*) FROM GitIssue") == "0")
    }

    /// The input is read on another thread; when decoding fails while that thread waits on a pipe that stays
    /// open (a live feed), the import must still end with the error.
    @Test(.timeLimit(.minutes(1))) func aFailedImportFromAPipeThatStaysOpenEnds() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let text = #"[{"id": 1, "number": "one", "title": "a"},"#
        #expect(text.utf8.withContiguousStorageIfAvailable { write(ends[1], $0.baseAddress, $0.count) } == text.utf8.count)
        let store = try Store.inMemory(entities: issueEntities)
        let error = try #require(throws: ImportError.self) {
            _ = try store.importJSON(GitIssue.self, from: .fileDescriptor(ends[0]), options: Self.options(batchSize: 1))
        }
        #expect(error.codingPath == "[0].number")
    }
}
