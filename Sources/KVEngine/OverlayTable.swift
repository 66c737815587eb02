import CLMDB

/// The overlay's keys and their versions: an open-addressing hash table that keeps each key
/// beside its versions.
///
/// `Dictionary` keeps keys and values in two arrays, so a lookup that finds a key and then
/// reads or writes its versions touches two cache lines far apart, and a commit of 10,000
/// rewritten keys looks each one up twice (its check, its publish), in tables too large for the
/// cache: most of a commit's time in the overlay was those misses. Here a key and its versions
/// share one bucket (80 bytes), so a lookup touches the occupancy bytes (small, and so
/// cached) and one bucket.
///
/// Placement: linear probing from the key's digest, which is already a keyed hash (SipHash
/// with the process's secret seed, see ``TableKey``), so keys chosen to collide cannot be
/// built without the seed. Removal shifts the following run back (no tombstones), so a
/// lookup stops at the first empty bucket. At most three quarters full; it doubles then.
///
/// A class, not a value: the overlay swaps a whole table out under its lock and frees it
/// after (`OverlayState.didApply`), and a value type's copy-on-write check would cost a
/// uniqueness test on every write. It is only used under the overlay's lock.
package final class OverlayTable {
    private struct Bucket {
        var key: TableKey
        var versions: OverlayVersions
    }

    /// Unchecked, as `filter` and `count` below: the table is used only under the overlay
    /// lock, and the runtime's check of each access in a publish's loop cost more than its
    /// prefetches saved.
    @exclusivity(unchecked) private var buckets: UnsafeMutablePointer<Bucket>
    /// 1 where the bucket at that index holds a key.
    @exclusivity(unchecked) private var used: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private var mask: Int
    /// Where the buckets and the occupancy bytes come from and go back to, and their sizes
    /// as it handed them out.
    private let buffers: LargeBuffers
    private var bucketBytes: Int
    private var usedBytes: Int
    /// Which key bytes the table may hold, sized with the buckets (see `KeyFilter`).
    /// Unchecked: the table is used only under the overlay lock, and the runtime's check of
    /// each access cost more than the filter's own work.
    @exclusivity(unchecked) private var filter: KeyFilter
    /// How many keys the table holds.
    @exclusivity(unchecked) package private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// An empty table with room for `capacity` keys before it grows, its storage from `buffers`.
    package init(capacity: Int = 0, buffers: LargeBuffers = .shared) {
        let size = OverlayTable.size(for: capacity)
        self.buffers = buffers
        (buckets, _, bucketBytes) = buffers.allocate(Bucket.self, capacity: size)
        (used, _, usedBytes) = buffers.allocate(UInt8.self, capacity: size)
        used.initialize(repeating: 0, count: size)
        mask = size - 1
        filter = KeyFilter(slots: KeyFilter.slots(forBuckets: size), buffers: buffers)
    }

    deinit {
        // Bucket by bucket: `deinitialize(count:)` destroys through the runtime's generic
        // array code.
        for index in 0...mask where used[index] != 0 { _ = (buckets + index).move() }
        buffers.deallocate(buckets, byteCount: bucketBytes)
        buffers.deallocate(used, byteCount: usedBytes)
        filter.deallocate(to: buffers)
    }

    /// False when the table holds no key (of any table) with these bytes: a point read can
    /// skip the probe, and the keyed hash it needs.
    @inline(__always)
    package func mayHold(_ key: UnsafeRawBufferPointer) -> Bool { filter.mayHold(key) }

    /// `mayHold` of the key whose `KeyFilter.hash(of:)` is `hash`.
    @inline(__always)
    func mayHold(hash: UInt32) -> Bool { filter.mayHold(hash: hash) }

    /// The filter itself, for a snapshot's copy of it (`SnapshotKeyFilter`); valid under the
    /// overlay lock only.
    var keyFilter: KeyFilter { filter }

    /// The number of buckets for `capacity` keys: a power of two, at most three quarters full.
    private static func size(for capacity: Int) -> Int {
        var size = 16
        while size * 3 < capacity * 4 { size *= 2 }
        return size
    }

    /// Makes room for `capacity` keys in all, so that adding up to that many rehashes at most
    /// once, now.
    package func reserveCapacity(_ capacity: Int) {
        if OverlayTable.size(for: capacity) > mask + 1 { resize(to: OverlayTable.size(for: capacity)) }
    }

    /// Where `key` is: its bucket, found; or the empty bucket that ends its run, where it
    /// would go.
    @inline(__always)
    private func probe(_ key: TableKey) -> (index: Int, found: Bool) {
        var index = Int(truncatingIfNeeded: key.digest) & mask
        while used[index] != 0 {
            // The digest is compared in place before anything that could retain.
            if (buckets + index).pointee.key.digest == key.digest && (buckets + index).pointee.key == key {
                return (index, true)
            }
            index = (index + 1) & mask
        }
        return (index, false)
    }

    /// The index of the bucket holding `key`, or nil. Valid until the next insertion or
    /// removal.
    @inline(__always)
    package func bucket(of key: TableKey) -> Int? {
        let (index, found) = probe(key)
        return found ? index : nil
    }

    /// Calls `body` with `key`'s versions in place; nil when the table does not hold it.
    @inline(__always)
    func withVersions<R>(of key: TableKey, _ body: (inout OverlayVersions) throws -> R) rethrows -> R? {
        let (index, found) = probe(key)
        return found ? try body(&(buckets + index).pointee.versions) : nil
    }

    /// The versions of `key`, copied; nil when the table does not hold it.
    package subscript(key: TableKey) -> OverlayVersions? {
        bucket(of: key).map { buckets[$0].versions }
    }

    /// Calls `body` with the versions in bucket `index` (from ``bucket(of:)``), in place: a
    /// copy would retain the versions' value arrays, touching each one's memory.
    @inline(__always)
    func withVersions<R>(at index: Int, _ body: (inout OverlayVersions) throws -> R) rethrows -> R {
        precondition(used[index] != 0, "OverlayTable: no key at bucket \(index)")
        return try body(&(buckets + index).pointee.versions)
    }

    /// The key in bucket `index`.
    package func key(at index: Int) -> TableKey {
        precondition(used[index] != 0, "OverlayTable: no key at bucket \(index)")
        return buckets[index].key
    }

    /// Starts loading what inserting the key of `digest` and `filterHash` touches first: its
    /// home bucket, occupancy byte and filter count. A large publish's keys land all over a
    /// table larger than the cache, and each probe otherwise waits for those loads in turn.
    @inline(__always)
    package func prefetch(digest: UInt64, filterHash: UInt32) {
        let index = Int(truncatingIfNeeded: digest) & mask
        cairn_prefetch_for_write(used + index)
        // A bucket (80 bytes) always spans two cache lines: both are written.
        cairn_prefetch_for_write(buckets + index)
        cairn_prefetch_for_write(UnsafeRawPointer(buckets + index) + (MemoryLayout<Bucket>.stride - 1))
        filter.prefetch(hash: filterHash)
    }

    /// Makes `entry` the newest version of `key`, adding the key when the table does not hold
    /// it (`isNew`); one probe either way. Returns the version it replaced when no interval of
    /// `intervals` may read it (``OverlayVersions/push(_:intervals:)``). `filterHash`: the
    /// key's `KeyFilter.hash(of:)`. The key and the entry are moved in (separate arguments:
    /// fields of one consumed struct were copied, and the struct destroyed), as a copy retained
    /// the key's and the value's arrays once more, and dropping the originals released them.
    @inline(__always)
    package func insertNewest(
        _ entry: consuming OverlayEntry, for key: consuming TableKey, filterHash: UInt32,
        keepingFor intervals: [(floor: UInt64, version: UInt64)]
    ) -> (replaced: OverlayEntry?, isNew: Bool) {
        if (count + 1) * 4 > (mask + 1) * 3 { resize(to: (mask + 1) * 2) }
        let (index, found) = probe(key)
        if found { return ((buckets + index).pointee.versions.push(entry, intervals: intervals), false) }
        filter.add(hash: filterHash)
        (buckets + index).initialize(to: Bucket(key: key, versions: OverlayVersions(newest: entry)))
        used[index] = 1
        count += 1
        return (nil, true)
    }

    /// `insertNewest(_:for:filterHash:keepingFor:)`, hashing the key for the filter here.
    package func insertNewest(
        _ entry: consuming OverlayEntry, for key: consuming TableKey, keepingFor intervals: [(floor: UInt64, version: UInt64)]
    ) -> (replaced: OverlayEntry?, isNew: Bool) {
        let filterHash = key.key.withUnsafeBytes { KeyFilter.hash(of: $0) }
        return insertNewest(entry, for: key, filterHash: filterHash, keepingFor: intervals)
    }

    /// Removes the key in bucket `index`, and returns its versions.
    @discardableResult
    package func remove(at index: Int) -> OverlayVersions {
        precondition(used[index] != 0, "OverlayTable: no key at bucket \(index)")
        let removed = (buckets + index).move()
        used[index] = 0
        count -= 1
        removed.key.key.withUnsafeBytes { filter.remove($0) }
        // Shift back the run that follows, so no lookup stops early at the hole: a key moves
        // into the hole when its home bucket is not cyclically in (hole, its index].
        var hole = index
        var next = (index + 1) & mask
        while used[next] != 0 {
            let home = Int(truncatingIfNeeded: (buckets + next).pointee.key.digest) & mask
            let homeIsAfterHole = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !homeIsAfterHole {
                (buckets + hole).initialize(to: (buckets + next).move())
                used[hole] = 1
                used[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
        return removed.versions
    }

    /// Moves out every key whose versions `keep` takes, handing each to `body`; the others stay,
    /// freed with the table. Leaves the table to be freed only: its runs have holes.
    func moveOut(where keep: (borrowing OverlayVersions) -> Bool, _ body: (consuming TableKey, consuming OverlayVersions) -> Void) {
        for index in 0...mask where used[index] != 0 && keep((buckets + index).pointee.versions) {
            used[index] = 0
            count -= 1
            // Field by field: a moved-out bucket held each array once more until `body` returned,
            // so `body` never had the only reference (`ByteArrayPool` reuses only those).
            body((buckets + index).pointer(to: \.key)!.move(), (buckets + index).pointer(to: \.versions)!.move())
        }
    }

    /// Adds `key`, which the table does not hold, with its versions (moved from another table).
    func insertMoved(_ key: consuming TableKey, _ versions: consuming OverlayVersions) {
        if (count + 1) * 4 > (mask + 1) * 3 { resize(to: (mask + 1) * 2) }
        let (index, found) = probe(key)
        precondition(!found, "OverlayTable: a moved key is here already")
        key.key.withUnsafeBytes { filter.add($0) }
        (buckets + index).initialize(to: Bucket(key: key, versions: versions))
        used[index] = 1
        count += 1
    }

    /// Every key, in no particular order.
    package var keys: [TableKey] {
        var keys: [TableKey] = []
        keys.reserveCapacity(count)
        for index in 0...mask where used[index] != 0 { keys.append(buckets[index].key) }
        return keys
    }

    /// Calls `body` with every key and its versions, in place, in no particular order. `body`
    /// must not change the table.
    package func forEach(_ body: (borrowing TableKey, borrowing OverlayVersions) throws -> Void) rethrows {
        for index in 0...mask where used[index] != 0 {
            try body((buckets + index).pointee.key, (buckets + index).pointee.versions)
        }
    }

    private func resize(to size: Int) {
        let oldBuckets = buckets, oldUsed = used, oldSize = mask + 1
        let oldBucketBytes = bucketBytes, oldUsedBytes = usedBytes
        (buckets, _, bucketBytes) = buffers.allocate(Bucket.self, capacity: size)
        (used, _, usedBytes) = buffers.allocate(UInt8.self, capacity: size)
        used.initialize(repeating: 0, count: size)
        mask = size - 1
        filter.deallocate(to: buffers)
        filter = KeyFilter(slots: KeyFilter.slots(forBuckets: size), buffers: buffers)
        for old in 0..<oldSize where oldUsed[old] != 0 {
            var index = Int(truncatingIfNeeded: (oldBuckets + old).pointee.key.digest) & mask
            while used[index] != 0 { index = (index + 1) & mask }
            (buckets + index).initialize(to: (oldBuckets + old).move())
            used[index] = 1
            (buckets + index).pointee.key.key.withUnsafeBytes { filter.add($0) }
        }
        buffers.deallocate(oldBuckets, byteCount: oldBucketBytes)
        buffers.deallocate(oldUsed, byteCount: oldUsedBytes)
    }
}
