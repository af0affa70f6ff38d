import CodableStoreCore

/// Which objects an import's context keeps from one batch to the next while a writer thread writes behind it
/// (see ``WriteBehind``).
///
/// **Kept:** the objects used in the batch just decoded. A plan the writer has not written yet must find its objects
/// in memory: a lookup of one of their keys would otherwise go to a table the writer has not reached. Every object a
/// plan writes was used in the batch that saved it (its save tells the writer, ``DeferredWriter/didUse(_:_:)``), and the
/// importer waits for the plans of the batch before the one ending first, so keeping the objects of the batch ending
/// is enough. Keeping them also keeps what every batch uses (a repository, its labels) in memory.
///
/// **Retained:** up to ``limit`` more objects, of the entities the records refer to (users, labels; not the records'
/// own entity, whose objects seldom come back), kept after a batch that did not use them, oldest let go first. A dump
/// mentions the same users again and again, and each time one was let go, the next record that mentions it cost a
/// lookup on the writer's connection and a new object. A retained object is kept with its relationships unloaded: it
/// reaches no other object, so letting others go never has to look at it, and an eviction costs what the batch used,
/// not what is retained. Its plans are all written (it was not used in the batch ending), so loads of its
/// memberships need not wait for the writer.
///
/// An entity whose retained objects are mostly let go before they are used again is no longer retained (see
/// `verdicts`).
///
/// Used by the context's thread only. Objects are known by identity: the lists here hold the objects (and the queue
/// their states) that the sets name by address, so no address is reused while it is in a set.
final class ObjectRetention {
    /// The most objects retained beyond the batches that used them (0: none).
    let limit: Int
    /// The entity whose objects are never retained (the records' own), if any.
    let excludedEntity: Int?

    // The stored properties below opt out of run-time exclusivity checks (see Context.registries): an import touches
    // them for every object it uses. Measured with callgrind without these opt-outs and the decoding session's:
    // the 100k import's decoding thread ran 6.2% more instructions.

    /// The objects used since the last eviction, by state, and in the order first used (their states read without
    /// reference counting: see `TrackedObjects`).
    @exclusivity(unchecked) private var used = ObjectSet()
    @exclusivity(unchecked) private var usedObjects = TrackedObjects()
    /// The objects kept at the last eviction, the same way.
    @exclusivity(unchecked) private var kept = ObjectSet()
    @exclusivity(unchecked) private var keptObjects = TrackedObjects()
    /// Retained objects in the order they were retained, each with its ticket: an entry whose state no longer has
    /// that ticket is stale (the object was let go, or retained again later).
    @exclusivity(unchecked) private var queue: [(state: EntityState, ticket: UInt32)] = []
    /// The ticket of each object with one, by its state (see ``retainedCount``). The queue holds every state here.
    @exclusivity(unchecked) private var tickets = Tickets()
    @exclusivity(unchecked) private var queueStart = 0
    @exclusivity(unchecked) private var nextTicket: UInt32 = 1
    /// The number of objects with a ticket: retained, or retained once and used again since (an object stays retained
    /// while it is used, so that a user mentioned every few batches is not retained anew each time).
    @exclusivity(unchecked) private(set) var retainedCount = 0

    init(limit: Int = 0, excluding excludedEntity: Int? = nil) {
        self.limit = max(0, limit)
        self.excludedEntity = excludedEntity
    }

    /// Records that the context used `object`, whose state is `state`.
    @inline(__always)
    func didUse(_ object: any EntityObject, _ state: EntityState) {
        if used.insert(state) { usedObjects.append(object, state) }
    }

    /// Whether the object of `state` was kept at the last eviction: a plan still waiting may write its links.
    /// (An object used only since then has none waiting: a link change uses both of its objects; a retained one
    /// was not used in the batch whose plans may wait.)
    func wasKept(_ state: EntityState) -> Bool {
        kept.contains(state)
    }

    /// What the verdicts count of one entity (see `verdicts`).
    private struct Tally {
        /// Retained objects used again after a batch that did not use them (hits), and retained objects let go at
        /// the limit (misses), since the last verdict.
        var hits = 0
        var misses = 0
        /// From when a quarter of the limit is retained until the early verdict: the objects used after a batch that
        /// did not use them, retained or not.
        var earlyHits = 0
        var earlyMisses = 0
        var earlyJudged = false
        /// Whether retention of the entity was given up.
        var givenUp = false
    }
    /// Per entity index, grown as entities are counted.
    @exclusivity(unchecked) private var tallies: [Tally] = []
    /// Hits and misses of an entity between two verdicts.
    static let verdictEvents = 2_048
    /// The smallest limit with an early verdict.
    static let earlyVerdictLimit = 1_024
    /// Returns an early verdict counts (fewer with a limit under 2,048): at a share of an eighth, 64 hits expected.
    static let earlyVerdictEvents = 512

    /// Whether objects of `entity` may be retained: lookups of their keys can then be left to memory.
    func mayRetain(_ entity: Int) -> Bool {
        limit > 0 && entity != excludedEntity && !hasGivenUp(entity)
    }

    /// Whether retention of `entity` was given up: its retained objects were mostly let go unused.
    func hasGivenUp(_ entity: Int) -> Bool {
        entity < tallies.count && tallies[entity].givenUp
    }

    private func count(_ entity: Int, hit: Bool) {
        track(entity)
        if hit { tallies[entity].hits += 1 } else { tallies[entity].misses += 1 }
    }

    /// Makes room for `entity` in ``tallies``.
    private func track(_ entity: Int) {
        if entity >= tallies.count { tallies += Array(repeating: Tally(), count: entity + 1 - tallies.count) }
    }

    /// Counts, for the early verdict, the used object of `state` if it was not used in the batch before: retained, or
    /// held only since this batch.
    @inline(__always)
    private func countReturn(_ state: EntityState, retained: Bool) {
        guard limit >= Self.earlyVerdictLimit, retainedCount >= limit / 4 else { return }
        let entity = state.entityOfObject
        if entity < tallies.count, tallies[entity].earlyJudged || tallies[entity].givenUp { return }
        // (A retained object used again was not used in the batch before.)
        guard retained || (!kept.contains(state) && mayRetain(entity)) else { return }
        track(entity)
        if retained { tallies[entity].earlyHits += 1 } else { tallies[entity].earlyMisses += 1 }
    }

    /// Gives up retaining an entity whose retained objects were let go unused more often than used again: the objects
    /// it mentions are too many for the limit, and retaining them costs more than it saves (each retained object is
    /// kept in memory, looked after at every eviction, and cold in the processor's caches when it is used again;
    /// measured on a million records mentioning 50,000 users at random, with 16,384 retained: 6% more CPU). Returns
    /// the retained objects of such entities, now let go.
    ///
    /// Misses are only counted once the limit is reached, so this verdict comes after the retained objects filled it.
    /// An early one comes sooner (with a limit of ``earlyVerdictLimit`` or more). Once `R`, a quarter of the limit `L`,
    /// is retained, it watches the objects used after a batch that did not use them: of an entity whose objects are
    /// mentioned at random among `N`, a share of about `R / N` are retained ones. Retention pays when `N` is under about
    /// twice the limit (a retained object is then used again more often than let go), so an entity whose share is under
    /// `R / 2L`, an eighth, over ``earlyVerdictEvents`` such uses (`R` with a smaller limit) is given up then. One whose
    /// mentions favour some objects, as real dumps' do, has a larger share and stays. On a million reference records
    /// (50,000 users, 4% of returns retained), this gives up users at about 2,900 retained instead of 8,192 and 2,048
    /// misses more; the 100k reference dump's 5,010 users (42% of returns retained) stay.
    private func verdicts(_ context: Context) -> TrackedObjects {
        var given: [Int] = []
        let window = min(Self.earlyVerdictEvents, limit / 4)
        for entity in tallies.indices where !tallies[entity].givenUp {
            var tally = tallies[entity]
            if !tally.earlyJudged, tally.earlyHits + tally.earlyMisses >= window {
                tally.earlyJudged = true
                tally.givenUp = tally.earlyHits * 8 < tally.earlyHits + tally.earlyMisses
            }
            if !tally.givenUp, tally.hits + tally.misses >= Self.verdictEvents {
                tally.givenUp = tally.misses > tally.hits
                (tally.hits, tally.misses) = (0, 0)
            }
            tallies[entity] = tally
            if tally.givenUp { given.append(entity) }
        }
        var evicted = TrackedObjects()
        guard !given.isEmpty else { return evicted }
        for (state, ticket) in queue[queueStart...]
        where tickets[state] == ticket && given.contains(state.entityOfObject) && !used.contains(state) && !kept.contains(state) {
            // (Those kept at the last eviction and not used since are let go by `evict` itself.)
            release(state)
            if let object = context.heldObject(state) { evicted.append(object, state) }
        }
        return evicted
    }

    /// Ends a batch: the context keeps the objects used since the last eviction, retains what it may of those kept
    /// at the last one and not used since, and lets go of every other object.
    func evict(from context: Context) {
        var evicted = verdicts(context)
        for position in keptObjects.states.indices {
            keptObjects.states[position]._withUnsafeGuaranteedRef { state in
                guard !used.contains(state), state.isLive(in: context) else { return }
                if mayRetain(state.entityOfObject), context.prepareForRetention(keptObjects.objects[position], state) {
                    if ticket(of: state) == 0 { retain(state) }
                } else {
                    if ticket(of: state) != 0 { release(state) }
                    evicted.append(keptObjects.objects[position], state)
                }
            }
        }
        // Over the limit, the objects retained first go, unless used in the batch ending (retained again instead).
        var looked = 0
        let queued = queue.count - queueStart
        while retainedCount > limit, looked < queued {
            let (state, ticket) = queue[queueStart]
            queueStart += 1
            looked += 1
            guard tickets[state] == ticket else { continue }
            if used.contains(state) {
                release(state)
                retain(state)
                continue
            }
            release(state)
            count(state.entityOfObject, hit: false)
            if let object = context.heldObject(state) { evicted.append(object, state) }
        }
        compactQueue()
        // What the context holds after the eviction: the objects used (less those deleted), and the retained ones.
        var expected = retainedCount
        for reference in usedObjects.states {
            reference._withUnsafeGuaranteedRef { state in
                if state.isLive(in: context) {
                    if ticket(of: state) == 0 {
                        expected += 1
                        countReturn(state, retained: false)
                    } else if !kept.contains(state) {
                        count(state.entityOfObject, hit: true)  // retained, and used again
                        countReturn(state, retained: true)
                    }
                } else if ticket(of: state) != 0 {
                    release(state)
                    expected -= 1
                }
            }
        }
        context.evict(evicted, keeping: usedObjects)
        if context.registeredObjectCount != expected {
            // An object registered without being noted as used (which no path does): let go of everything neither
            // used nor retained by looking at every object, as the context did before it retained any.
            let used = self.used
            let tickets = self.tickets
            context.evictObjects { used.contains($0) || tickets[$0] != 0 }
        }
        kept = used
        keptObjects = usedObjects
        // Room for as many as this batch used: the next one uses about as many, and growing a set rehashes it.
        used = ObjectSet(minimumCapacity: keptObjects.count)
        usedObjects = TrackedObjects(minimumCapacity: keptObjects.count)
    }

    /// The ticket of the object of `state` (0: none), without a lookup for the objects that never have one: those of
    /// the excluded entity (the records' own, about half of what a batch uses), and all while none is retained.
    @inline(__always)
    private func ticket(of state: EntityState) -> UInt32 {
        retainedCount == 0 || state.entityOfObject == excludedEntity ? 0 : tickets[state]
    }

    private func retain(_ state: EntityState) {
        tickets[state] = nextTicket
        queue.append((state, nextTicket))
        nextTicket = nextTicket == .max ? 1 : nextTicket + 1
        retainedCount += 1
    }

    private func release(_ state: EntityState) {
        tickets[state] = 0
        retainedCount -= 1
    }

    /// Drops the entries already taken or stale, once they are most of the queue.
    private func compactQueue() {
        if queueStart > 0, queueStart >= queue.count / 2 {
            queue.removeFirst(queueStart)
            queueStart = 0
        }
        if queue.count > 2 * retainedCount + 1_024 {
            queue = queue.filter { tickets[$0.state] == $0.ticket }
            queueStart = 0
        }
    }
}

extension ObjectRetention {
    /// Retention tickets by object state, kept here rather than in the state (which does change tracking only): a
    /// table of addresses with linear probing, hashed by one multiplication as ``ObjectSet`` is, read for every object
    /// an eviction looks at. 0 is "no ticket". It does not retain the states: the queue does, for every one here.
    struct Tickets {
        private var addresses: [UInt]
        private var values: [UInt32]
        private var shift: UInt64
        private var count = 0

        init() {
            addresses = Array(repeating: 0, count: 16)
            values = Array(repeating: 0, count: 16)
            shift = 60
        }

        @inline(__always)
        private func home(of address: UInt) -> Int {
            Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> shift)
        }

        /// The slot of `address`, or of the empty slot where it would go.
        @inline(__always)
        private func slot(of address: UInt) -> Int {
            let mask = addresses.count - 1
            var slot = home(of: address)
            while addresses[slot] != 0 && addresses[slot] != address { slot = (slot + 1) & mask }
            return slot
        }

        subscript(state: EntityState) -> UInt32 {
            get {
                let slot = slot(of: UInt(bitPattern: ObjectIdentifier(state)))
                return addresses[slot] == 0 ? 0 : values[slot]
            }
            set {
                let address = UInt(bitPattern: ObjectIdentifier(state))
                let slot = slot(of: address)
                if newValue == 0 {
                    if addresses[slot] != 0 { remove(at: slot) }
                } else if addresses[slot] == address {
                    values[slot] = newValue
                } else {
                    addresses[slot] = address
                    values[slot] = newValue
                    count += 1
                    if count > addresses.count / 4 * 3 { grow() }
                }
            }
        }

        /// Empties `slot` and moves back the entries after it that probed past it (no tombstones).
        private mutating func remove(at slot: Int) {
            let mask = addresses.count - 1
            var hole = slot
            var next = (slot + 1) & mask
            while addresses[next] != 0 {
                let home = home(of: addresses[next])
                // The entry at `next` may fill the hole when its home is not in (hole, next], cyclically.
                if (next > hole && (home <= hole || home > next)) || (next < hole && home <= hole && home > next) {
                    addresses[hole] = addresses[next]
                    values[hole] = values[next]
                    hole = next
                }
                next = (next + 1) & mask
            }
            addresses[hole] = 0
            values[hole] = 0
            count -= 1
        }

        private mutating func grow() {
            let (oldAddresses, oldValues) = (addresses, values)
            addresses = Array(repeating: 0, count: oldAddresses.count * 2)
            values = Array(repeating: 0, count: oldAddresses.count * 2)
            shift -= 1
            for index in oldAddresses.indices where oldAddresses[index] != 0 {
                let slot = slot(of: oldAddresses[index])
                addresses[slot] = oldAddresses[index]
                values[slot] = oldValues[index]
            }
        }
    }
}
