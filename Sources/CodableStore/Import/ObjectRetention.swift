/// Which objects an import's context keeps from one batch to the next while a writer thread writes behind it
/// (see ``WriteBehind``): the objects used in the batch just decoded, and no others.
///
/// A plan the writer has not written yet must find its objects in memory: a lookup of one of their keys would
/// otherwise go to a table the writer has not reached. Every object a plan writes was used in the batch that
/// saved it (its save tells the writer, ``DeferredWriter/didUse(_:)``), and the importer waits for the plans of
/// the batch before the one ending first, so keeping the objects of the batch ending is enough. Keeping them also
/// keeps what every batch uses (a repository, its labels) in memory, while memory stays flat.
///
/// Used by the context's thread only. Objects are known by identity: the context holds every object it used
/// until the next eviction, so no identifier in ``used`` is reused meanwhile. One of ``kept`` may be, after its
/// object was deleted in the batch and let go at the eviction: ``wasKept(_:)`` then answers true for a new object,
/// which only makes a membership load of it wait for the writer.
final class ObjectRetention {
    /// The objects used since the last eviction.
    @exclusivity(unchecked) private var used = ObjectSet()
    /// The objects kept at the last eviction.
    @exclusivity(unchecked) private var kept = ObjectSet()

    /// Records that the context used the object of `state`.
    @inline(__always)
    func didUse(_ state: EntityState) {
        used.insert(state)
    }

    /// Whether the object of `state` was kept at the last eviction: a plan still waiting may write its links.
    /// (An object used only since then has none waiting: a link change uses both of its objects.)
    func wasKept(_ state: EntityState) -> Bool {
        kept.contains(state)
    }

    /// Ends a batch: the context lets go of every object not used since the last eviction.
    func evict(from context: Context) {
        let used = self.used
        context.evictObjects { used.contains($0) }
        kept = used
        // Room for as many as this batch used: the next one uses about as many, and growing a set rehashes it.
        self.used = ObjectSet(minimumCapacity: used.count)
    }
}
