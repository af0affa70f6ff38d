/// What one save writes, as steps a storage backend executes: the seam between the context and the store's
/// database. Steps name entities, fields and join tables by index and carry row ids and values, never SQL and
/// never the context's objects, so they can cross threads and a backend says them in its own dialect
/// (``SQLStorage`` for SQLite).
///
/// The context turns its pending changes into steps, reading its objects on its own thread
/// (`Context.writeSteps(_:)`). A plain save runs each step as soon as it is made, so a large save never holds
/// all its values at once. An import under the stop policy collects a batch's steps into a plan and hands it
/// to a writer thread (a ``DeferredWriter``), so that SQLite writes one batch while the next one is decoded.
package struct WritePlan: Sendable {
    package enum Step: Sendable {
        /// Deletes a row.
        case delete(entity: Int, rowID: Int64)
        /// Inserts `rows` rows (1 or ``EntitySchema/insertBatchRows``): per row, the row id, then the
        /// insert columns (``EntitySchema/insertColumnCount`` values), then where the dialect stores them the stamp
        /// (``SQLStorage/insertWidth(_:)`` values a row).
        case insert(entity: Int, rows: Int, values: [DatabaseValue])
        /// Updates the changed columns of one stored row: `values` are the new values of `fields`, in order,
        /// then where the dialect stores them the stamp, then the row id. `fields` may be empty when only the stamp
        /// changes.
        case update(entity: Int, fields: [Int], values: [DatabaseValue])
        /// Clears the stamp of a row whose links changed without an update of it.
        case clearStamp(entity: Int, rowID: Int64)
        /// Clears the stamps of the rows of `entity` that refer to the row `rowID` of `destination`, by a foreign key
        /// or a link, before that row is deleted.
        case clearStampsReferring(entity: Int, destination: Int, rowID: Int64)
        /// Sets (or, with nil, clears) a row's position in an ordered one-to-many relationship stored by its
        /// foreign key: `orderColumn` of the entity's table.
        case setOrder(entity: Int, orderColumn: String, rowID: Int64, position: Int64?)
        /// Links `rows` pairs (1 or ``JoinTable/linkBatchRows``): source and target per row, and in a table with
        /// positions the position (``JoinTable/linkWidth`` values a row); a link that exists takes the new position.
        case link(table: Int, rows: Int, values: [DatabaseValue])
        /// Links a pair after the source's last link, when its place in the owner's list is unknown; a link that
        /// exists keeps its position.
        case appendLink(table: Int, source: Int64, target: Int64)
        /// Moves a link to another position in its owner's list.
        case setLinkPosition(table: Int, source: Int64, target: Int64, position: Int64)
        /// Removes one pair from a join table.
        case unlink(table: Int, source: Int64, target: Int64)
    }

    package var steps: [Step] = []
}

/// Writes a context's plans later, on a thread of its own, while the context goes on: an import's writer
/// thread. While a context has one (``Context/deferredWriter``), a save hands its plan over instead of
/// writing it. The writer decides which objects the context keeps meanwhile (it is told of every object the
/// context uses, and lets the others go with ``Context/evict(_:keeping:)``, see `ObjectRetention`): it must keep
/// every object a waiting plan writes, so that a key of such an object is answered from memory, never from a row
/// the writer has not written yet.
package protocol DeferredWriter: AnyObject {
    /// The context used `object` (whose state is `state`): looked it up, read it, linked it or saved it.
    func didUse(_ object: any EntityObject, _ state: EntityState)
    /// Whether a plan handed over may still change the join rows of the object of `state` (a membership load of
    /// it then waits until every plan is written). Objects the context used only since the writer's last
    /// eviction have none: a link change holds both objects, see ``didUse(_:)``.
    func mayHaveUnwrittenLinks(_ state: EntityState) -> Bool
    /// A save handed over a plan that adds or removes these join rows. Until the writer's next eviction, a membership
    /// load of an owner of one of them waits for the writer (see ``mayHaveUnwrittenLinks(table:owners:ownerIsSource:)``):
    /// objects first used in the current batch have no other unwritten links (those of earlier batches are written
    /// before the objects they concern are evicted).
    func didHandOver(links: [Context.LinkChange])
    /// Whether a plan handed over since the last eviction adds or removes join rows of `table` whose owner (their
    /// source when `ownerIsSource`, else their target) is one of the row ids `owners` gives (called only when some
    /// were handed over).
    func mayHaveUnwrittenLinks(table: Int, owners: () -> [Int64], ownerIsSource: Bool) -> Bool
    /// Hands a plan over. Throws the error of a plan that failed before.
    func enqueue(_ plan: WritePlan) throws
    /// Waits until every plan handed over is written, without throwing (the next ``enqueue(_:)`` throws).
    func waitUntilIdle()
    /// Runs `body` with the connection while the writer is between statements: for lookups and loads of rows
    /// no waiting plan writes.
    func withConnection<T>(_ body: () throws -> T) throws -> T
    /// Waits until the writer ran `lookup` (handed over with its plans); throws the error of a plan that failed.
    func waitForLookup(_ lookup: Lookahead) throws
}

/// Rows of a query, in one array (one allocation per query rather than per row: they are made on the writer
/// thread and let go on the context's, and many small blocks freed across threads fragment the heap).
package struct StoredRows: Sendable {
    package var values: [DatabaseValue] = []
    package var width: Int

    package init(values: [DatabaseValue] = [], width: Int) {
        self.values = values
        self.width = width
    }
    package var count: Int { width == 0 ? 0 : values.count / width }
    package subscript(row: Int) -> ArraySlice<DatabaseValue> { values[(row * width)..<((row + 1) * width)] }
}

/// Identity lookups run for a context ahead of time, by its ``DeferredWriter`` between two plans: per entity, the
/// keys, and once ``isDone``, the stored rows found (the row id then the columns of ``SQLStorage/selectSQL(_:)``).
/// ``Context/adoptLookup(_:)`` takes them.
package final class Lookahead: @unchecked Sendable {
    // @unchecked: `rows`, `membershipRows` and `isDone` are written by the writer thread under its monitor, and
    // read by the context only after it saw `isDone` under that monitor (``DeferredWriter/waitForLookup(_:)``).
    package let keys: [(entity: Int, keys: [Context.IdentityKey])]
    /// Memberships to load for the rows found for `keys[0]` (the batch's own entity): the fields of its to-many
    /// relationships stored in a join table, loaded by ``SQLStorage/loadMembers(_:of:statements:row:)``.
    package let memberships: [Int]
    package var rows: [StoredRows] = []
    /// Per entry of `memberships`: rows of the owner's row id, then the member's row id and columns.
    package var membershipRows: [StoredRows] = []
    /// Per key of `keys[0]` that a record of the batch writes alone, the stamp of that record (see ``RowStamps``):
    /// a stored row with that stamp is answered in ``unchangedKeys`` and ``unchangedRowIDs`` instead of `rows`.
    package let stamps: [Context.IdentityKey: Int64]
    package var unchangedKeys: [Context.IdentityKey] = []
    package var unchangedRowIDs: [Int64] = []
    /// With `stamps`, the `_digest` of each row of `rows[0]`, in order.
    package var rowStamps: [Int64?] = []
    package var isDone = false

    package init(keys: [(entity: Int, keys: [Context.IdentityKey])], memberships: [Int], stamps: [Context.IdentityKey: Int64] = [:]) {
        self.keys = keys
        self.memberships = memberships
        self.stamps = stamps
    }
}
