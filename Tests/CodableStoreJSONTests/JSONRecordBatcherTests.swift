import Foundation
import Testing

@testable import CodableStoreJSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one loop from input chunks to record batches (the importer's reader and the two-thread array decode).
@Suite struct JSONRecordBatcherTests {
    private static func read(
        _ text: String, mode: JSONRecordStream.Mode = .array, size: Int, span: Int = .max, chunkSize: Int = 7,
        skipping: Bool = false
    ) throws -> (batches: [JSONRecordBatcher.Batch], bytes: Int) {
        var batcher = JSONRecordBatcher(mode: mode, size: size)
        batcher.span = span
        batcher.chunkSize = chunkSize
        batcher.skipsMalformedLines = skipping
        var batches: [JSONRecordBatcher.Batch] = []
        let bytes = try Array(text.utf8).withUnsafeBytes { bytes in
            try batcher.read(.bytes(bytes)) { batches.append($0) }
        }
        return (batches, bytes)
    }

    @Test func batchesHoldAtMostSizeRecordsInOrderWithTheBytesReadWhenComplete() throws {
        let text = "[" + (0..<7).map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]"
        let (batches, bytes) = try Self.read(text, size: 3)
        #expect(batches.map { $0.records.map(\.index) } == [[0, 1, 2], [3, 4, 5], [6]])
        #expect(bytes == text.utf8.count)
        // A batch is handed out when its last record ends: the bytes read grow, and never pass the input.
        let offsets = batches.map(\.bytesRead)
        #expect(offsets == offsets.sorted() && offsets.allSatisfy { $0 <= bytes })
        #expect(batches[0].records[2].byteOffset < offsets[0])
        #expect(batches.allSatisfy { $0.malformed.isEmpty })
    }

    @Test func aBatchEndsOnceItSpansTheGivenBytes() throws {
        let big = String(repeating: "x", count: 100)
        let text = #"[{"a":"\#(big)"},{"a":1},{"a":"\#(big)"},{"a":2},{"a":3}]"#
        let (batches, _) = try Self.read(text, size: 100, span: 50)
        // The span is measured from a batch's first record to the start of its newest one.
        #expect(batches.map { $0.records.map(\.index) } == [[0, 1], [2, 3], [4]])
    }

    @Test func anEmptyArrayHandsOutNoBatch() throws {
        let (batches, bytes) = try Self.read(" [ ] ", size: 2)
        #expect(batches.isEmpty)
        #expect(bytes == 5)
    }

    @Test func malformedJSONLinesTravelWithTheNextBatchOrOnTheirOwn() throws {
        let text = "{\"id\":0}\n{bad\n{\"id\":2}\n{\"id\":3}\n[1,\n{worse\n{\"id\":6}\n"
        let (batches, _) = try Self.read(text, mode: .jsonLines, size: 2, skipping: true)
        // Two bad lines (a batch's worth) hand over the batch so far with them.
        #expect(batches.map { $0.records.map(\.index) } == [[0, 2], [3], [6]])
        #expect(batches.map { $0.malformed.map(\.recordIndex) } == [[1], [4, 5], []])
        #expect(batches[1].malformed.map(\.line) == [5, 6])

        // A file of only bad lines still moves on a batch's worth at a time.
        let bad = try Self.read(String(repeating: "{x\n", count: 5), mode: .jsonLines, size: 2, skipping: true)
        #expect(bad.batches.map(\.records.count) == [0, 0, 0])
        #expect(bad.batches.map(\.malformed.count) == [2, 2, 1])
    }

    @Test func aSyntaxErrorEndsTheReadWithoutTheRecordsBeforeItInItsBatch() throws {
        let text = #"[{"id":0},{"id":1},{"id":2},{"id":3} {"id":4}]"#
        var handed: [[Int]] = []
        let error = try #require(throws: JSONSyntaxError.self) {
            _ = try Array(text.utf8).withUnsafeBytes { bytes in
                try JSONRecordBatcher(mode: .array, size: 3).read(.bytes(bytes)) { handed.append($0.records.map(\.index)) }
            }
        }
        #expect(handed == [[0, 1, 2]])
        #expect(error.byteOffset == 37)
        #expect(error.recordIndex == 4)
    }

    @Test func aFileDescriptorIsReadInChunksAndItsSizeIsKnown() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("batcher-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: url) }
        let text = (0..<1000).map { #"{"id":\#($0)}"# }.joined(separator: "\n")
        try Data(text.utf8).write(to: url)
        let descriptor = try JSONInput.open(url.path)
        defer { JSONInput.close(descriptor) }
        let input = JSONInput.fileDescriptor(descriptor, path: url.path)
        #expect(input.totalBytes == text.utf8.count)
        var batcher = JSONRecordBatcher(mode: .jsonLines, size: 400)
        batcher.chunkSize = 100
        var counts: [Int] = []
        let bytes = try batcher.read(input) { counts.append($0.records.count) }
        #expect(counts == [400, 400, 200])
        #expect(bytes == text.utf8.count)

        let missing = try #require(throws: JSONRecordStream.ReadError.self) { try JSONInput.open(url.path + ".missing") }
        #expect(missing.operation == "open" && missing.code == ENOENT)
        #expect(missing.description == "cannot open '\(url.path).missing': No such file or directory (errno \(ENOENT))")
    }

    /// A reader blocked on a pipe that stays open gives up once it is told to stop.
    @Test func aReadWaitingOnAnOpenPipeEndsWhenCancelled() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        #expect(write(ends[1], "{\"id\":1}\n", 9) == 9)
        let input = JSONInput.fileDescriptor(ends[0], path: nil)
        #expect(input.totalBytes == nil)
        var batches = 0
        let started = ContinuousClock.now
        #expect(throws: JSONInput.Cancelled.self) {
            _ = try JSONRecordBatcher(mode: .jsonLines, size: 1).read(input, isCancelled: { batches > 0 }) { _ in batches += 1 }
        }
        #expect(batches == 1)
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
