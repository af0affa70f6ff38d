/// The dense runs among a lookup's integer identities: keys looked up by range instead of one by one.
///
/// An API dump lists new records in id order, so most of a batch's identities are one run of nearly consecutive
/// integers, with the records that repeat or update older ids scattered around it. A run read with `BETWEEN`
/// descends the identity's index once and reads the rows in the order they were stored; a list of keys (an `IN`
/// list, PostgreSQL's `= ANY` array) descends it once per key. PostgreSQL (psql, 1M stored issues, 40 lookups of
/// 2,000 consecutive ids): 3.26 ms against 4.78 ms a lookup. SQLite (callgrind, re-import of 100k reference records):
/// the writer thread's instructions 1,921 M -> 1,625 M.
///
/// A run is at least ``minimumRun`` keys, no two consecutive ones more than ``maximumGap`` apart, and spans at most
/// twice its keys, so a range returns at most as many rows not asked for as asked (``Run/contains(sorted:)`` passes
/// over them).
package struct IdentityRanges {
    /// Keys of a run, ascending and distinct.
    package struct Run {
        package let keys: ArraySlice<Int64>
        package var first: Int64? { keys.first }
        package var last: Int64? { keys.last }

        /// Whether `key` is one of the run's (binary search).
        package func contains(sorted key: Int64) -> Bool {
            var low = keys.startIndex
            var high = keys.endIndex
            while low < high {
                let middle = low + (high - low) / 2
                if keys[middle] < key { low = middle + 1 } else { high = middle }
            }
            return low < keys.endIndex && keys[low] == key
        }
    }

    static let minimumRun = 64
    static let maximumGap: Int64 = 16

    /// The runs, each looked up by range.
    package let runs: [Run]
    /// The keys in no run, to look up one by one.
    package let others: [Context.IdentityKey]

    /// The runs of `keys`; nil when a key is not a single integer or no run is long enough.
    package init?(_ keys: [Context.IdentityKey]) {
        guard keys.count >= Self.minimumRun else { return nil }
        var integers: [Int64] = []
        integers.reserveCapacity(keys.count)
        for key in keys {
            guard let integer = key.singleInteger else { return nil }
            integers.append(integer)
        }
        integers.sort()
        // Distinct, in place.
        var distinctCount = 0
        for index in integers.indices where distinctCount == 0 || integers[distinctCount - 1] != integers[index] {
            integers[distinctCount] = integers[index]
            distinctCount += 1
        }
        integers.removeSubrange(distinctCount...)
        let distinct = integers
        var runs: [Run] = []
        var others: [Context.IdentityKey] = []
        var start = 0
        while start < distinct.count {
            var end = start + 1
            // Stops on a gap too wide, or when the span would exceed twice the keys (subtractions that overflow end
            // the run: keys at both ends of Int64).
            while end < distinct.count {
                let (gap, overflow) = distinct[end].subtractingReportingOverflow(distinct[end - 1])
                guard !overflow, gap <= Self.maximumGap else { break }
                let (span, spanOverflow) = distinct[end].subtractingReportingOverflow(distinct[start])
                guard !spanOverflow, span < 2 * Int64(end - start + 1) else { break }
                end += 1
            }
            if end - start >= Self.minimumRun {
                runs.append(Run(keys: distinct[start..<end]))
            } else {
                for integer in distinct[start..<end] { others.append(Context.IdentityKey(single: .integer(integer))) }
            }
            start = end
        }
        guard !runs.isEmpty else { return nil }
        self.runs = runs
        self.others = others
    }
}
