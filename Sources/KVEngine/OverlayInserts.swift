/// The writes of a commit group in order, as the overlay takes them (each key with its
/// digest, its entry, and what the overlay counts of it), made by the commit check while each
/// key and value is at hand (just hashed and looked up), and moved into the overlay once the
/// group is durable. Made after the log's fdatasync, from the logged operations, each write
/// touched its key's and value's memory again, long out of the cache, to count their
/// references: a fifth of a large save's publish.
///
/// Writes go in and out as separate values, the stored ones moved out field by field: fields
/// taken from a struct were copied (retained) and the struct destroyed, and a buffer of tuples
/// was filled through the runtime's generic copy. Elements from `taken` to `count` are
/// initialized, the others not (`deinit` and `removeLast(from:)` keep that).
package struct OverlayInserts: ~Copyable {
    private struct Write {
        var key: TableKey
        var entry: OverlayEntry
        var filterHash: UInt32
        var byteCount: Int
    }

    private var base: UnsafeMutablePointer<Write>
    private var capacity: Int
    /// Where the buffer comes from and goes back to, and its size as handed out.
    private let buffers: LargeBuffers
    private var byteCount: Int
    package private(set) var count = 0
    private var taken = 0

    package init(capacity: Int = 0, buffers: LargeBuffers = .shared) {
        self.buffers = buffers
        (base, self.capacity, byteCount) = buffers.allocate(Write.self, capacity: max(capacity, 1))
    }

    /// The writes of commits read from the log (recovery, a reader following the log).
    init(of commits: [LoggedCommit]) {
        self.init(capacity: commits.reduce(0) { $0 + $1.operations.count })
        for commit in commits {
            // The operations are read in place through a pointer: iterating the array copied
            // each one out, retaining and releasing its key and value.
            commit.operations.withUnsafeBufferPointer { operations in
                for index in operations.indices {
                    let operation = operations.baseAddress! + index
                    append(key: TableKey(table: operation.pointee.table, key: operation.pointee.key,
                                         digest: operation.pointee.digest),
                           entry: OverlayEntry(commitVersion: commit.version, recordVersion: operation.pointee.recordVersion,
                                               value: operation.pointee.value))
                }
            }
        }
    }

    deinit {
        (base + taken).deinitialize(count: count - taken)
        buffers.deallocate(base, byteCount: byteCount)
    }

    /// Makes room for `additional` more writes.
    package mutating func reserve(_ additional: Int) {
        guard count + additional > capacity else { return }
        let (buffer, grown, grownBytes) = buffers.allocate(Write.self, capacity: max(count + additional, capacity * 2))
        (buffer + taken).moveInitialize(from: base + taken, count: count - taken)
        buffers.deallocate(base, byteCount: byteCount)
        base = buffer
        capacity = grown
        byteCount = grownBytes
    }

    /// Adds the write of `entry` under `key`.
    @inline(__always)
    package mutating func append(key: consuming TableKey, entry: consuming OverlayEntry) {
        // The check in line: a commit appends once per write, and `reserve` is a call.
        if count == capacity { reserve(1) }
        let filterHash = key.key.withUnsafeBytes { KeyFilter.hash(of: $0) }
        let byteCount = entry.byteCount + key.count
        (base + count).initialize(to: Write(key: key, entry: entry, filterHash: filterHash, byteCount: byteCount))
        count += 1
    }

    /// Drops the writes from position `mark` on (a commit of the group that failed its check).
    package mutating func removeLast(from mark: Int) {
        precondition(mark >= taken && mark <= count, "OverlayInserts: no writes from \(mark)")
        (base + mark).deinitialize(count: count - mark)
        count = mark
    }

    /// The digest and key-filter hash of the write `distance` places after the next one, if
    /// there is one: a publish prefetches where it goes.
    @inline(__always)
    package func upcoming(_ distance: Int) -> (digest: UInt64, filterHash: UInt32)? {
        let index = taken + distance
        guard index < count else { return nil }
        return ((base + index).pointee.key.digest, (base + index).pointee.filterHash)
    }

    /// The next write, moved out; nil when every write was taken.
    package mutating func takeNext() -> (key: TableKey, entry: OverlayEntry, filterHash: UInt32, byteCount: Int)? {
        guard taken < count else { return nil }
        let write = base + taken
        taken += 1
        return (write.pointer(to: \.key)!.move(), write.pointer(to: \.entry)!.move(),
                write.pointee.filterHash, write.pointee.byteCount)
    }
}
