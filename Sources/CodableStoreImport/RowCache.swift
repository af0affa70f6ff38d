import CodableStoreCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Stored rows of the entities an import's records refer to (users, labels: every entity with an identity but the
/// records' own), kept by the writer thread so that a key looked up again is answered from memory instead of a query.
///
/// A dump mentions the same users over and over. When there are more of them than the context retains as objects
/// (``ImportOptions/retainedObjectLimit``), every batch looked up most of its users again: on a million records
/// mentioning 50,000 users, 2,000 queries and a quarter of SQLite's time. A row costs far less memory than an
/// object (its values, packed: about 50 bytes for a user's id and login, with its entry), so this cache holds all of
/// them in a few MiB.
///
/// **What keeps it right.** The rows are those the writer's lookups read; the writer tells the cache of every step it
/// writes (``willWrite(_:)``), before writing it:
/// - an update of a cached entity's row makes that row stale (by row id): a stale row is read again;
/// - an update of identity values forgets the entity's rows (its keys no longer name the same rows);
/// - a delete forgets everything (without enforced foreign keys, it also clears other tables' references);
/// - inserts need nothing: a new row has a new identity, or the import fails on the conflict.
///
/// Whatever else changes rows runs on the connection only after the writer is idle (`Context.connection`), and
/// ``WriteBehind`` then forgets the cache (``clear()``). Stores with triggers, which change rows no step names, do
/// not use one (see `Importer`).
///
/// Used by the writer thread only.
final class RowCache {
    /// The most bytes the rows and their entries may take (an estimate: the packed values, and a fixed cost an
    /// entry); past it, everything is forgotten and the cache fills again.
    let budget: Int
    /// The bytes counted so far.
    private(set) var usedBytes = 0
    /// Per entity index; nil for an entity not cached.
    private var tables: [Table?]
    /// Rows answered, and rows that had to be read, since the cache was made (for tests and reports).
    private(set) var hits = 0
    private(set) var misses = 0

    /// Bytes counted per entry besides its packed values: a dictionary slot (key, offset and spare capacity).
    static let entryCost = 24
    static let compositeEntryCost = 56

    private final class Table {
        /// Positions of the identity values in a row (0 is the row id).
        let identityColumns: [Int]
        /// The identity attributes' fields.
        let identityFields: [Int]
        /// Values a row: the row id, then the insert columns.
        let width: Int
        /// Offset of each row's packed values in `bytes`: single integer identities, and the others.
        var integerRows: [Int64: UInt32] = [:]
        var otherRows: [Context.IdentityKey: UInt32] = [:]
        var bytes: [UInt8] = []
        /// Row ids of rows updated since they were cached.
        var stale: Set<Int64> = []
        /// What the table's rows count in ``RowCache/usedBytes``.
        var countedBytes = 0

        init(identityColumns: [Int], identityFields: [Int], width: Int) {
            self.identityColumns = identityColumns
            self.identityFields = identityFields
            self.width = width
        }

        func offset(of key: Context.IdentityKey) -> UInt32? {
            if let integer = key.singleInteger { return integerRows[integer] }
            return otherRows[key]
        }

        func setOffset(_ offset: UInt32?, of key: Context.IdentityKey) {
            if let integer = key.singleInteger { integerRows[integer] = offset } else { otherRows[key] = offset }
        }

        var isEmpty: Bool { integerRows.isEmpty && otherRows.isEmpty }

        /// Forgets every row; keeping the room they took unless told otherwise (see ``RowCache/clear(keepingCapacity:)``).
        func reset(keepingCapacity: Bool = true) {
            integerRows.removeAll(keepingCapacity: keepingCapacity)
            otherRows.removeAll(keepingCapacity: keepingCapacity)
            bytes.removeAll(keepingCapacity: keepingCapacity)
            stale.removeAll(keepingCapacity: keepingCapacity)
            countedBytes = 0
        }
    }

    /// A cache of the rows of every entity of `model` with identity attributes, except `excluded` (the records' own:
    /// their rows seldom come back, and there are many).
    init(model: Schema, excluding excluded: Int?, budget: Int) {
        self.budget = budget
        tables = model.mappings.map { mapping in
            guard mapping.index != excluded, !mapping.description.identity.isEmpty else { return nil }
            let columns = mapping.description.identity.map { Int(mapping.columnOfField[$0]) }
            guard columns.allSatisfy({ $0 > 0 && $0 <= mapping.insertColumnCount }) else { return nil }
            return Table(identityColumns: columns, identityFields: mapping.description.identity, width: mapping.insertColumnCount + 1)
        }
    }

    /// Whether rows of `entity` are cached.
    func caches(_ entity: Int) -> Bool {
        entity < tables.count && tables[entity] != nil
    }

    /// Appends the cached row of `key` (its ``Table/width`` values) to `values`; false when it is not cached, or
    /// changed since.
    func appendRow(entity: Int, key: Context.IdentityKey, to values: inout [DatabaseValue]) -> Bool {
        guard let table = tables[entity], let offset = table.offset(of: key) else {
            misses += 1
            return false
        }
        let fresh = table.bytes.withUnsafeBufferPointer { bytes in
            var reader = Reader(bytes: bytes, position: Int(offset))
            // The row id comes first: a stale row is read again from the store, so its other values are not unpacked.
            let rowID = reader.value()
            if !table.stale.isEmpty, case .integer(let id) = rowID, table.stale.contains(id) { return false }
            values.append(rowID)
            for _ in 1..<table.width { values.append(reader.value()) }
            return true
        }
        if fresh { hits += 1 } else { misses += 1 }
        return fresh
    }

    /// Caches rows a lookup read (each ``Table/width`` values: the row id, then the insert columns).
    func store(entity: Int, rows: ArraySlice<DatabaseValue>) {
        guard let table = tables[entity], !rows.isEmpty else { return }
        let entryCost = table.identityColumns.count == 1 ? Self.entryCost : Self.compositeEntryCost
        var start = rows.startIndex
        while start + table.width <= rows.endIndex {
            let row = rows[start..<(start + table.width)]
            start += table.width
            let key: Context.IdentityKey
            if table.identityColumns.count == 1 {
                key = Context.IdentityKey(single: row[row.startIndex + table.identityColumns[0]])
            } else {
                key = Context.IdentityKey(table.identityColumns.map { row[row.startIndex + $0] })
            }
            var offset = table.bytes.count
            for value in row { Self.pack(value, into: &table.bytes) }
            let added = table.bytes.count - offset + entryCost
            if usedBytes + added > budget || table.bytes.count > Int(UInt32.max) {
                // Full: everything is forgotten, and the cache starts again with this row.
                let packed = Array(table.bytes[offset...])
                clear()
                table.bytes.append(contentsOf: packed)
                offset = 0
            }
            usedBytes += added
            table.countedBytes += added
            table.setOffset(UInt32(offset), of: key)
            if !table.stale.isEmpty, case .integer(let rowID) = row[row.startIndex] { table.stale.remove(rowID) }
        }
    }

    /// Tells the cache of a step the writer is about to write.
    func willWrite(_ step: WritePlan.Step) {
        switch step {
        case .update(let entity, let fields, let values):
            guard entity < tables.count, let table = tables[entity], !table.isEmpty else { return }
            if fields.contains(where: table.identityFields.contains) {
                forget(entity)
            } else if case .integer(let rowID)? = values.last {
                markStale(rowID, entity)
            }
        case .setOrder(let entity, _, let rowID, _):
            guard entity < tables.count, let table = tables[entity], !table.isEmpty else { return }
            markStale(rowID, entity)
        case .delete:
            clear()
        case .insert, .link, .appendLink, .setLinkPosition, .unlink, .clearStamp, .clearStampsReferring:
            break
        }
    }

    /// The most stale row ids an entity keeps; past it, its rows are forgotten.
    static let staleLimit = 4_096

    private func markStale(_ rowID: Int64, _ entity: Int) {
        guard let table = tables[entity] else { return }
        if table.stale.count >= Self.staleLimit {
            forget(entity)
        } else {
            table.stale.insert(rowID)
        }
    }

    /// Forgets every row. The room they took is kept by default: a cache forgotten when full fills again to about as
    /// much, and that memory, given back and taken again at every refill, stayed with the writer thread's malloc arena
    /// in pieces (3M reference records, 150,000 users: the cache cost 6.1 MiB of peak RSS, 3 MiB of it held by malloc
    /// unused, against 3.1 MiB at 1M records, where the 50,000 users fit and nothing is forgotten). Without
    /// `keepingCapacity`, the memory is given back (when the import no longer needs the rows).
    func clear(keepingCapacity: Bool = true) {
        for entity in tables.indices where tables[entity] != nil { forget(entity, keepingCapacity: keepingCapacity) }
    }

    /// Forgets the rows of `entity`.
    private func forget(_ entity: Int, keepingCapacity: Bool = true) {
        guard let table = tables[entity] else { return }
        usedBytes -= table.countedBytes
        table.reset(keepingCapacity: keepingCapacity)
    }

    // MARK: Packing

    /// Appends a value: a tag byte, then a zigzag varint (integers), 8 bytes (reals) or a varint length and the bytes
    /// (text, blobs).
    static func pack(_ value: DatabaseValue, into bytes: inout [UInt8]) {
        switch value {
        case .null:
            bytes.append(0)
        case .integer(let integer):
            bytes.append(1)
            appendVarint(UInt64(bitPattern: (integer << 1) ^ (integer >> 63)), to: &bytes)
        case .real(let real):
            bytes.append(2)
            withUnsafeBytes(of: real.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case .text(var text):
            bytes.append(3)
            text.withUTF8 { utf8 in
                appendVarint(UInt64(utf8.count), to: &bytes)
                bytes.append(contentsOf: utf8)
            }
        case .blob(let data):
            bytes.append(4)
            appendVarint(UInt64(data.count), to: &bytes)
            bytes.append(contentsOf: data)
        }
    }

    private static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Reads packed values in order.
    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position: Int

        mutating func value() -> DatabaseValue {
            let tag = bytes[position]
            position += 1
            switch tag {
            case 0:
                return .null
            case 1:
                let zigzag = varint()
                return .integer(Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
            case 2:
                var pattern: UInt64 = 0
                for index in 0..<8 { pattern |= UInt64(bytes[position + index]) << (8 * index) }
                position += 8
                return .real(Double(bitPattern: pattern))
            case 3:
                let length = Int(varint())
                defer { position += length }
                return .text(String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<(position + length)]), as: UTF8.self))
            default:
                let length = Int(varint())
                defer { position += length }
                return .blob(Data(UnsafeBufferPointer(rebasing: bytes[position..<(position + length)])))
            }
        }

        private mutating func varint() -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = bytes[position]
                position += 1
                result |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return result }
                shift += 7
            }
        }
    }
}
