import CodableStore
import Foundation
import Testing

/// A randomized check of sync imports against an oracle in plain Swift.
///
/// Each iteration makes a random store of SyncIssue (with parents and comments), a random JSON Lines dump (records
/// of stored and new issues; parents as bare references or nested objects, to issues of the dump or only of the
/// store; sometimes one record that cannot be decoded), a random scope and random import options; then it compares
/// every issue (id, repository, title, parent), every comment's issue and the report with what the oracle expects.
///
/// Reproducible: iteration `i` runs with seed `base + i`. `SYNC_ORACLE_SEED` sets the base seed,
/// `SYNC_ORACLE_ITERATIONS` the number of iterations; every failure message names the seed of its iteration.
@Suite struct SyncOracleTests {
    /// The entities the store is opened with: SyncIssue and every destination of its relationships.
    static let entities: [any EntityObject.Type] = [SyncIssue.self, SyncLabel.self, SyncComment.self, SyncBlocker.self]

    static let defaultBaseSeed: UInt64 = 0x5EED_0000
    static let defaultIterations = 40

    /// SplitMix64: a small, seedable generator whose sequence does not depend on the platform.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    // MARK: - The oracle's model

    struct Issue: Equatable, CustomStringConvertible {
        var repository = ""
        var title = ""
        var parent: Int?
        var description: String { "\(repository)|\(title)|\(parent.map(String.init) ?? "NULL")" }
    }

    enum Parent {
        case omitted, null, reference(Int), nested(id: Int, title: String)
    }

    /// One line of the dump: a record of an issue, or the record that cannot be decoded.
    enum Line {
        case record(id: Int, repository: String?, title: String?, parent: Parent)
        case bad

        var json: String {
            switch self {
            case .bad:
                return #"{"id": "bad"}"#
            case .record(let id, let repository, let title, let parent):
                var fields = [#""id": \#(id)"#]
                if let repository { fields.append(#""repository": "\#(repository)""#) }
                if let title { fields.append(#""title": "\#(title)""#) }
                switch parent {
                case .omitted: break
                case .null: fields.append(#""parent": null"#)
                case .reference(let id): fields.append(#""parent": \#(id)"#)
                case .nested(let id, let title): fields.append(#""parent": {"id": \#(id), "title": "\#(title)"}"#)
                }
                return "{" + fields.joined(separator: ", ") + "}"
            }
        }

        /// The issue ids the line has: its own, and its parent's (reference or nested object).
        var ids: [Int] {
            guard case .record(let id, _, _, let parent) = self else { return [] }
            switch parent {
            case .reference(let other), .nested(let other, _): return [id, other]
            case .omitted, .null: return [id]
            }
        }
    }

    enum Scope: CustomStringConvertible {
        case all, repository(String)
        var description: String {
            switch self {
            case .all: ".all"
            case .repository(let name): ".matching(\\.repository == \"\(name)\")"
            }
        }
        func contains(_ issue: Issue) -> Bool {
            switch self {
            case .all: true
            case .repository(let name): issue.repository == name
            }
        }
        var syncScope: SyncScope<SyncIssue> {
            switch self {
            case .all: .all
            case .repository(let name): .matching(\.repository == name)
            }
        }
    }

    /// Applies `lines` to `issues` as an upsert import does: a record creates its issue with default values or
    /// changes the fields it has; a bare reference to an unknown issue creates a stub; a nested object is upserted.
    static func apply(_ lines: some Sequence<Line>, to issues: inout [Int: Issue]) {
        for line in lines {
            guard case .record(let id, let repository, let title, let parent) = line else { continue }
            var issue = issues[id] ?? Issue()
            if let repository { issue.repository = repository }
            if let title { issue.title = title }
            issues[id] = issue
            switch parent {
            case .omitted:
                break
            case .null:
                issues[id]!.parent = nil
            case .reference(let other):
                if issues[other] == nil { issues[other] = Issue() }  // a stub
                issues[id]!.parent = other
            case .nested(let other, let nestedTitle):
                issues[other, default: Issue()].title = nestedTitle
                issues[id]!.parent = other
            }
        }
    }

    // MARK: - The test

    @Test func syncImportsMatchTheOracle() throws {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["SYNC_ORACLE_SEED"].flatMap { UInt64($0) } ?? Self.defaultBaseSeed
        let iterations = environment["SYNC_ORACLE_ITERATIONS"].flatMap { Int($0) } ?? Self.defaultIterations
        for iteration in 0..<iterations {
            try Self.runIteration(seed: base &+ UInt64(iteration))
        }
    }

    static func runIteration(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }

        // The initial store: issues of repositories a and b among ids 1–40, random parents, random comments.
        let storedIDs = Array((1...40).shuffled(using: &random).prefix(Int.random(in: 0...30, using: &random))).sorted()
        var before: [Int: Issue] = [:]
        for id in storedIDs {
            before[id] = Issue(repository: chance(0.5) ? "a" : "b", title: "issue \(id)", parent: nil)
        }
        for id in storedIDs where chance(0.4) { before[id]!.parent = storedIDs.randomElement(using: &random) }
        var commentsBefore: [Int: Int?] = [:]  // comment id → issue id
        var nextComment = 1
        for id in storedIDs {
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                commentsBefore[nextComment] = id
                nextComment += 1
            }
        }
        for _ in 0..<Int.random(in: 0...2, using: &random) {  // comments of no issue
            commentsBefore[nextComment] = .some(nil)
            nextComment += 1
        }

        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: entities)
        try store.write { context in
            var objects: [Int: SyncIssue] = [:]
            for id in storedIDs {
                let issue = SyncIssue(id: id)
                issue.repository = before[id]!.repository
                issue.title = before[id]!.title
                try context.insert(issue)
                objects[id] = issue
            }
            for id in storedIDs { objects[id]!.parent = before[id]!.parent.map { objects[$0]! } }
            for (commentID, issueID) in commentsBefore.sorted(by: { $0.key < $1.key }) {
                let comment = SyncComment(id: commentID)
                if let issueID {
                    objects[issueID]!.comments.append(comment)
                } else {
                    try context.insert(comment)
                }
            }
        }
        // The oracle's starting point is what is on disk (checked against what was meant to be written).
        let context = "seed \(seed)"
        #expect(try Self.issues(path) == before, "\(context): initial store")
        #expect(try Self.comments(path) == commentsBefore, "\(context): initial comments")

        // The dump: records of stored and new issues (ids up to 55), parents as references or nested objects.
        var lines: [Line] = []
        let allIDs = Array(1...55)
        func someID() -> Int {
            chance(0.6) && !storedIDs.isEmpty ? storedIDs.randomElement(using: &random)! : allIDs.randomElement(using: &random)!
        }
        for _ in 0..<Int.random(in: 0...20, using: &random) {
            let id = someID()
            let repository: String? = chance(0.8) ? (chance(0.5) ? "a" : "b") : nil
            let title: String? = chance(0.7) ? "t\(Int.random(in: 0...99, using: &random))" : nil
            let parent: Parent
            switch Double.random(in: 0..<1, using: &random) {
            case ..<0.35: parent = .omitted
            case ..<0.5: parent = .null
            case ..<0.9: parent = .reference(someID())
            default:
                var other = someID()
                if other == id { other = id % 55 + 1 }
                parent = .nested(id: other, title: "n\(Int.random(in: 0...99, using: &random))")
            }
            lines.append(.record(id: id, repository: repository, title: title, parent: parent))
        }
        let badIndex: Int? = chance(0.25) ? Int.random(in: 0...lines.count, using: &random) : nil
        if let badIndex { lines.insert(.bad, at: badIndex) }

        let scope: Scope = switch Int.random(in: 0..<4, using: &random) {
        case 0, 1: .all
        case 2: .repository("a")
        default: .repository("b")
        }
        let batchSize = [1, 2, 1_000].randomElement(using: &random)!
        let policy: ImportOptions.FailurePolicy = chance(0.5) ? .stop : .skip
        let commits = chance(0.5)
        let options = ImportOptions(layout: .jsonLines, batchSize: batchSize, failurePolicy: policy, commitEveryBatch: commits)
        let dumpText = lines.map(\.json).joined(separator: "\n")
        let context2 = """
            \(context): scope \(scope), batchSize \(batchSize), \(policy), commitEveryBatch \(commits)
            store: \(before.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            dump:
            \(dumpText)
            """
        let dump = TestStore.temporaryPath("sync.jsonl")
        try (dumpText + "\n").write(toFile: dump, atomically: true, encoding: .utf8)

        // The oracle.
        var expected = before
        let failed = badIndex != nil && policy == .stop
        let skipped = badIndex != nil && policy == .skip
        var expectedDeleted: Set<Int> = []
        if failed {
            // Nothing is deleted; with a commit per batch, the batches before the bad record's stay.
            if commits { apply(lines.prefix(badIndex! / batchSize * batchSize), to: &expected) }
        } else {
            apply(lines, to: &expected)
            let present = Set(lines.flatMap(\.ids))
            // The scope as the implementation takes it: over the rows stored before the import, with the values
            // they have once the payload is written. Here a row the dump does not have is not changed by it, so this
            // is also the scope as it was before the import (checked below). That is not so in general: a record that
            // replaces a to-many (`"children": []`) clears the foreign key of rows the dump lacks, which can put them
            // in a scope such as `\.parent == nil` that they were not in before the import, and they are deleted.
            let candidates = Set(before.keys).subtracting(present)
            for id in candidates { #expect(scope.contains(before[id]!) == scope.contains(expected[id]!), "\(context2)") }
            if !skipped { expectedDeleted = candidates.filter { scope.contains(expected[$0]!) } }
            for id in expectedDeleted { expected[id] = nil }
            for id in expected.keys where expected[id]!.parent.map(expectedDeleted.contains) == true { expected[id]!.parent = nil }
        }
        var expectedComments = commentsBefore
        for (comment, issue) in commentsBefore where issue.map(expectedDeleted.contains) == true { expectedComments[comment] = nil }

        // The import.
        let report: ImportReport?
        do {
            report = try store.importJSON(SyncIssue.self, from: .file(dump), options: options, syncing: scope.syncScope)
            #expect(!failed, "\(context2)\nthe import succeeded but should have failed")
        } catch let error as ImportError {
            report = nil
            #expect(failed, "\(context2)\nthe import failed: \(error)")
        }

        let difference = try Self.difference(path, expected)
        #expect(difference.isEmpty, "\(context2)\n\(difference)")
        #expect(try Self.comments(path) == expectedComments, "\(context2)\ncomments")
        let raw = try RawDatabase(path)
        #expect(
            try raw.value("SELECT count(*) FROM SyncIssue i WHERE i.parent IS NOT NULL AND i.parent NOT IN (SELECT _pk FROM SyncIssue)") == "0",
            "\(context2)\ndangling parent")
        #expect(
            try raw.value("SELECT count(*) FROM SyncIssue_labels WHERE source NOT IN (SELECT _pk FROM SyncIssue)") == "0",
            "\(context2)\ndangling label links")

        guard let report else { return }
        let present = Set(lines.flatMap(\.ids)).intersection(before.keys)
        let deletedComments = commentsBefore.count - expectedComments.count
        #expect(report.recordsSkipped == (skipped ? 1 : 0), "\(context2)")
        #expect(report.sync?.entity == "SyncIssue", "\(context2)")
        #expect(report.sync?.deleted == expectedDeleted.count, "\(context2)\nexpected deleted \(expectedDeleted.sorted())")
        #expect(report.sync?.present == present.count, "\(context2)\nexpected present \(present.sorted())")
        #expect((report.sync?.withheldReason != nil) == skipped, "\(context2)\nwithheld: \(report.sync?.withheldReason ?? "nil")")
        #expect((report.entities["SyncIssue"]?.deleted ?? 0) == expectedDeleted.count, "\(context2)")
        #expect((report.entities["SyncComment"]?.deleted ?? 0) == deletedComments, "\(context2)")
    }

    // MARK: - Reading the store (plain SQL)

    /// Every issue on disk: id → repository, title, parent's id.
    static func issues(_ path: String) throws -> [Int: Issue] {
        let rows = try RawDatabase(path).rows(
            "SELECT i.id, i.repository, i.title, p.id FROM SyncIssue i LEFT JOIN SyncIssue p ON p._pk = i.parent")
        var issues: [Int: Issue] = [:]
        for row in rows {
            #expect(issues[Int(row[0])!] == nil, "issue \(row[0]) stored twice")
            issues[Int(row[0])!] = Issue(repository: row[1], title: row[2], parent: row[3] == "NULL" ? nil : Int(row[3])!)
        }
        return issues
    }

    /// Every comment on disk: id → its issue's id.
    static func comments(_ path: String) throws -> [Int: Int?] {
        let rows = try RawDatabase(path).rows("SELECT c.id, i.id FROM SyncComment c LEFT JOIN SyncIssue i ON i._pk = c.issue")
        var comments: [Int: Int?] = [:]
        for row in rows { comments[Int(row[0])!] = row[1] == "NULL" ? .some(nil) : Int(row[1])! }
        return comments
    }

    static func difference(_ path: String, _ expected: [Int: Issue]) throws -> String {
        let actual = try issues(path)
        return Set(actual.keys).union(expected.keys).sorted().compactMap { id in
            actual[id] == expected[id] ? nil : "issue \(id): stored \(actual[id].map(\.description) ?? "none"), expected \(expected[id].map(\.description) ?? "none")"
        }.joined(separator: "\n")
    }
}
