import Locking

/// Objects of a read that a reset let go of and that nothing else can reach, kept for the
/// store's next reads to fill in (`StoredObject.refill`) instead of allocating new ones.
///
/// Freeing an object and allocating the next cost about 600 instructions in
/// relationship-traverse: the release path, then glibc's slow path (a round's large
/// allocations consolidate the freed small chunks first). A spare costs a check when given and
/// a few stores when taken.
///
/// Relies on: an object is given only while `isSpare` holds — the list holding it is its only
/// reference (no other strong, weak or unowned one), so no caller can see it again — and it is
/// still as a read made it (`StoredObject.isPristineRead`), so refilling its key, record and
/// version makes it what `init(primaryKey:record:version:)` makes. Pinned by
/// `ContainedTricksTests.spareObjectsAreOnlyObjectsNobodyReaches`.
///
/// `Sendable`: the lists are reached only under the lock; a list given is no context's any more.
final class SpareObjects: Sendable {
    /// At most this many objects are kept (about 1.8 MB: freed, their chunks stay in the
    /// process's heap as well).
    static let limit = 16_384

    private struct Lists: @unchecked Sendable {
        var lists: [[StoredObject]] = []
        var count = 0

        mutating func keep(_ list: [StoredObject]) {
            guard count + list.count <= SpareObjects.limit else { return }
            count += list.count
            lists.append(list)
        }
    }

    private let kept = ConditionLock(Lists())

    /// Whether `object`, in a list being given, may be given: nothing else references it (a weak or
    /// unowned reference too would see it refilled) and it is as its read made it.
    @inline(__always)
    static func isSpare(_ object: inout StoredObject) -> Bool {
        // Its fields first: most objects that are no spare (decoded, changed) fail there, without a call.
        guard object.isPristineRead, isKnownUniquelyReferenced(&object) else { return false }
        // Counts with none: the weak count 1, the unowned count 1 (the strong references' own).
        return _getWeakRetainCount(object) == 1 && _getUnownedRetainCount(object) == 1
    }

    /// Keeps `list`, every object of which `isSpare`, unless that passes the limit.
    func give(_ list: [StoredObject]) {
        kept.withLock { $0.keep(list) }
    }

    /// How many objects are kept.
    var count: Int { kept.withLock { $0.count } }

    /// Every list kept (for one read to fill in), now no longer kept.
    func take() -> Taken {
        kept.withLock { kept in
            let taken = Taken(lists: kept.lists, count: kept.count)
            kept = Lists()
            return taken
        }
    }

    /// Gives back what a read did not use.
    func giveBack(_ taken: Taken) {
        guard !taken.current.isEmpty || !taken.lists.isEmpty else { return }
        kept.withLock { kept in
            if !taken.current.isEmpty { kept.keep(taken.current) }
            for list in taken.lists { kept.keep(list) }
        }
    }

    /// The lists one read took: objects handed out one by one.
    struct Taken {
        fileprivate var lists: [[StoredObject]]
        fileprivate var current: [StoredObject] = []
        /// Objects left in `lists` and `current`: a read that took none pays one test an object.
        private var left: Int

        fileprivate init(lists: [[StoredObject]], count: Int) {
            self.lists = lists
            left = count
        }

        /// A spare object to refill, or nil when none is left.
        @inline(__always)
        mutating func next() -> StoredObject? {
            guard left > 0 else { return nil }
            left -= 1
            if let object = current.popLast() { return object }
            return nextList()
        }

        @inline(never)
        private mutating func nextList() -> StoredObject? {
            guard let list = lists.popLast() else { return nil }
            current = list
            return current.popLast()
        }
    }
}
