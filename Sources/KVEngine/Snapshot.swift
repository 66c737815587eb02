import CLMDB
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A record read from a snapshot: its key, value and record version.
public struct Record: Sendable, Hashable {
    /// The key.
    public var key: [UInt8]
    /// The value.
    public var value: [UInt8]
    /// The record's version: 1 when first inserted, +1 on every committed update; a key
    /// inserted again after a delete continues from the version it was deleted at.
    public var version: UInt64

    public init(key: [UInt8], value: [UInt8], version: UInt64) {
        self.key = key
        self.value = value
        self.version = version
    }
}

/// What the store holds for a key, as the commit path sees it.
package enum RecordState: Equatable {
    /// The key never existed (or its tombstone is gone).
    case absent
    /// A record with this version.
    case live(UInt64)
    /// A tombstone: deleted at this version.
    case deleted(UInt64)

    var exists: Bool { if case .live = self { return true } else { return false } }

    /// Not looked up yet: a marker for the commit path's per-batch table of states. No
    /// record has this version (bit 63 is the tombstone flag in LMDB).
    static let unresolved = RecordState.live(.max)

    /// The version a put continues from: the live or deleted version, 0 when absent.
    var version: UInt64 {
        switch self {
        case .absent: return 0
        case .live(let version), .deleted(let version): return version
        }
    }
}

/// A consistent, read-only view of the store as of one commit version.
///
/// Commits made after the snapshot was taken are never visible in it, while the
/// background applier moves data into LMDB and checkpoints retire log segments.
/// Reading never blocks writers. A snapshot holds LMDB pages alive: close long-lived
/// ones (or let them go out of scope) so the data file does not grow, or bound them with
/// `Store.Options.maxSnapshotAge` / `maxSnapshotLag`, past which the engine expires them.
///
/// ```swift
/// let snapshot = try store.snapshot()
/// defer { snapshot.close() }
/// if let record = try snapshot.get(Array("person/1".utf8), in: "people") {
///     print(record.version, String(decoding: record.value, as: UTF8.self))
/// }
/// ```
///
/// `@unchecked Sendable`: the LMDB transaction and what reads keep beside it are used only
/// under `transaction`'s lock; every other stored property is immutable.
public final class Snapshot: @unchecked Sendable {
    /// The commit version this snapshot reads at.
    public let version: UInt64
    let floor: UInt64
    let id: Int
    let core: StoreCore
    /// `core`'s, held here: a point read that reached them through `core` retained and
    /// released the overlay's lock object each time.
    let overlay: ConditionLock<OverlayState>
    let maxKeySize: Int
    /// The read transaction, its table handles and why it ended; the engine holds it too.
    let transaction: SnapshotTransaction
    /// Whether the transaction is the engine's reserved reader, reset and returned on close.
    let recycles: Bool

    init(core: StoreCore, id: Int, floor: UInt64, version: UInt64, transaction: SnapshotTransaction, recycles: Bool) {
        self.core = core
        overlay = core.overlay
        maxKeySize = core.maxKeySize
        self.id = id
        self.floor = floor
        self.version = version
        self.transaction = transaction
        self.recycles = recycles
    }

    deinit { close() }

    /// Runs `body` under the transaction lock (see `SnapshotTransaction.withState`).
    @inline(__always)
    private func withTransaction<Result, Failure: Error>(
        _ operation: String, _ body: (inout SnapshotTransaction.State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try transaction.withState(for: id, operation, body)
    }

    /// Ends the snapshot. Reading from it afterwards throws `KVError.snapshotClosed`.
    /// Closing an expired snapshot is harmless.
    public func close() {
        // Reset, not aborted: the engine renews it for a later snapshot (IdleReaders). Handed
        // over under this snapshot's lock (which reads hold before the overlay lock, so the
        // order is the usual one): `Store.close` ends each registered snapshot through this lock
        // before it closes LMDB, so a close racing with it can never abort (or keep) the
        // transaction after the environment is gone.
        transaction.close(snapshotID: id) { open in
            core.snapshotDidClose(id: id, reader: open, reserved: recycles, holder: transaction)
        }
    }

    /// The error a read gets once the transaction is gone.
    private func endedError(_ state: SnapshotTransaction.State) -> KVError {
        guard state.snapshotID == id else { return .snapshotClosed }  // its holder serves another
        return state.expiry.map { KVError.snapshotExpired(version: version, reason: $0) } ?? .snapshotClosed
    }

    /// Calls `body` with the value and record version of `key`, without copying the value.
    ///
    /// The buffer is valid only inside `body`; it is nil (and the version 0) when the key
    /// is absent. Throws `KVError.corruptRecord` when the stored record fails its checksum.
    ///
    /// ```swift
    /// let length = try snapshot.withValue(forKey: key) { value, _ in value?.count ?? 0 }
    /// ```
    @inlinable
    public func withValue<Result>(
        forKey key: [UInt8], in table: String,
        _ body: (UnsafeRawBufferPointer?, UInt64) throws -> Result
    ) throws -> Result {
        // A generic shell over a non-generic read, so callers in other modules pay no
        // unspecialised-generic cost on the hot path.
        var result: Result? = nil
        try visitValue(forKey: key, in: table) { value, version in result = try body(value, version) }
        return result!
    }

    /// `withValue(forKey:in:_:)` in the default table (`WriteBatch.defaultTable`).
    @inlinable
    public func withValue<Result>(
        forKey key: [UInt8], _ body: (UnsafeRawBufferPointer?, UInt64) throws -> Result
    ) throws -> Result {
        // Not a default argument: the caller then passed the name, loading it through its global's
        // accessor and retaining and releasing it, per read.
        var result: Result? = nil
        try visitDefaultValue(forKey: key) { value, version in result = try body(value, version) }
        return result!
    }

    @usableFromInline
    func visitValue(forKey key: [UInt8], in table: String,
                    _ body: (UnsafeRawBufferPointer?, UInt64) throws -> Void) throws {
        try read(forKey: key, in: table, body)
    }

    @usableFromInline
    func visitDefaultValue(forKey key: [UInt8], _ body: (UnsafeRawBufferPointer?, UInt64) throws -> Void) throws {
        try read(forKey: key, in: WriteBatch.defaultTable, body)
    }

    /// The point read behind `withValue`, in one function and one hold of the transaction lock:
    /// the overlay (under its lock only when the snapshot's copy of its key filter does not
    /// rule the key out), then LMDB. Each closure layer and enum it went through before cost
    /// retains and releases per read.
    @inline(__always)
    private func read(forKey key: [UInt8], in table: String,
                      _ body: (UnsafeRawBufferPointer?, UInt64) throws -> Void) throws {
        try Store.validate(key: key, maxKeySize: maxKeySize)
        try withTransaction("read") { (state) throws in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            try key.withUnsafeBytes { (keyBytes) throws in
                // One CRC-32C of the key for the overlay's key filter and the record's checksum,
                // which begins with the key.
                let keyCRC = KeyFilter.hash(of: keyBytes)
                if let entry = StoredState.overlayEntry(rawKey: keyBytes, keyHash: keyCRC, array: key, in: table,
                                                        overlay: overlay, floor: floor, version: version,
                                                        keyFilter: &state.keyFilter) {
                    guard let value = entry.value else { return try body(nil, 0) }
                    return try value.withUnsafeBytes { try body($0, entry.recordVersion) }
                }
                guard let handle = state.handles.handle(of: table),
                      let stored = try transaction.stored(keyBytes, in: handle) else { return try body(nil, 0) }
                let record = try RecordCodec.decode(key: keyBytes, keyCRC: keyCRC, stored: stored, table: table)
                try body(record.isTombstone ? nil : record.value, record.isTombstone ? 0 : record.version)
            }
        }
    }

    /// Whether this snapshot's reads took their own copy of the overlay's key filter (for tests).
    package var copiedOverlayKeyFilter: Bool { withTransaction("copiedOverlayKeyFilter") { $0.keyFilter.isTaken } }

    /// Calls `body` with the position, value and record version of each of `count` keys, in
    /// order, as `withValue` would one by one (nil and 0 for an absent key), under one hold of
    /// the transaction lock: a batch of point reads pays the lock, the re-entrance check and
    /// the closure calls once, not per key. `key(i)` gives the table and key of position `i`.
    /// The buffers are valid only inside `body`.
    package func visitValues(
        count: Int, key: (Int) -> (table: String, key: [UInt8]),
        _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws {
        guard count > 0 else { return }
        try withTransaction("read") { (state) throws in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            // A local copy for the loop: each `&state.handles` (a class's property) was an
            // exclusive access checked at run time, per key.
            var handles = state.handles
            defer { state.handles = handles }
            for position in 0..<count {
                let (table, key) = key(position)
                try Store.validate(key: key, maxKeySize: maxKeySize)
                try StoredState.lookup(key, in: table, transaction: transaction, overlay: overlay,
                                       floor: floor, version: version, handles: &handles, keyFilter: &state.keyFilter)
                    .deliver(at: position, body)
            }
        }
    }

    /// `visitValues` for keys that are eight-byte big-endian integers of one table (an object
    /// store's records by primary key): the same values, versions and errors, but each key is
    /// made on the stack, the table's handle found once, and a key array made only for an
    /// overlay that may hold the key. (Per record, the key array's retain and release and the
    /// handle's lookup by name were about 150 instructions of a 20-record page's 3,500.)
    package func visitValues(
        in table: String, bigEndianKeys keys: [UInt64], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws {
        guard !keys.isEmpty else { return }
        try withTransaction("read") { (state) throws in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            let handle = state.handles.handle(of: table)
            // Keys mostly consecutive (an owner's members) through one cursor: each is found one
            // step after the last (`mdb_get` searched from the root each time: about 1,000
            // instructions a record of relationship-traverse). Scattered keys (a sorted page) go
            // by `mdb_get`, cheaper than a cursor's search (2% of fetch-sorted-limit).
            if keys.count > 1, let handle, Self.mostlyConsecutive(keys) {
                let cursor = try state.cursors.take(handle, in: transaction)
                defer { state.cursors.keep(cursor, table: handle) }
                // The key of the record the cursor stands on, when a lookup left it on one: the
                // next key up is tried at the next record first (one step, not a search).
                var standsOn: UInt64? = nil
                for position in keys.indices {
                    let number = keys[position]
                    var key = number.bigEndian
                    try withUnsafeBytes(of: &key) { (key) throws in
                        let found = try StoredState.lookup(
                            rawKey: key, in: table, cursor: cursor, nextFirst: standsOn.map { $0 &+ 1 == number } ?? false,
                            overlay: overlay, floor: floor, version: version, keyFilter: &state.keyFilter)
                        switch found {
                        case .stored: standsOn = number
                        case .absent: standsOn = nil
                        case .overlay: break  // the cursor did not move
                        }
                        try found.deliver(at: position, body)
                    }
                }
                return
            }
            for position in keys.indices {
                var key = keys[position].bigEndian
                try withUnsafeBytes(of: &key) { (key) throws in
                    try StoredState.lookup(rawKey: key, in: table, handle: handle, transaction: transaction,
                                           overlay: overlay, floor: floor, version: version, keyFilter: &state.keyFilter)
                        .deliver(at: position, body)
                }
            }
        }
    }

    /// Whether at least half of `keys` are one more than the key before them.
    private static func mostlyConsecutive(_ keys: [UInt64]) -> Bool {
        var consecutive = 0
        for position in keys.indices.dropFirst() where keys[position] == keys[position - 1] &+ 1 { consecutive += 1 }
        return 2 * consecutive >= keys.count
    }

    /// Runs the commit path's lookups of a whole batch under one hold of the transaction
    /// lock. Each `recordState` of the reader costs an overlay probe and an `mdb_get`: no
    /// per-key lock of the snapshot, no closure, and no second check of keys the batch
    /// already validated.
    func withStateReader<Result>(_ body: (inout StateReader) throws(KVError) -> Result) throws(KVError) -> Result {
        try withTransaction("commit") { (state) throws(KVError) -> Result in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            var reader = StateReader(transaction: transaction, overlay: overlay, floor: floor,
                                     version: version, handles: state.handles)
            defer { reader.close() }
            return try body(&reader)
        }
    }

    /// The record of `key`, or nil when absent.
    ///
    /// ```swift
    /// let record = try snapshot.get(Array("k".utf8))
    /// ```
    public func get(_ key: [UInt8], in table: String = WriteBatch.defaultTable) throws(KVError) -> Record? {
        try typed {
            try withValue(forKey: key, in: table) { value, version in
                value.map { Record(key: key, value: Array($0), version: version) }
            }
        }
    }

    /// The record of a UTF-8 string key, or nil when absent.
    public func get(_ key: String, in table: String = WriteBatch.defaultTable) throws(KVError) -> Record? {
        try get(Array(key.utf8), in: table)
    }

    /// The record version of `key`, or nil when absent.
    public func recordVersion(of key: [UInt8], in table: String = WriteBatch.defaultTable) throws(KVError) -> UInt64? {
        try typed { try withValue(forKey: key, in: table) { value, version in value == nil ? nil : version } }
    }

    /// The records of `table` in key order (or reverse), within [`lower`, `upper`) and
    /// starting with `prefix` when given, at most `limit` of them.
    ///
    /// ```swift
    /// let people = try snapshot.scan(in: "people", prefix: Array("person/".utf8), limit: 10)
    /// ```
    public func scan(
        in table: String = WriteBatch.defaultTable, from lower: [UInt8]? = nil, to upper: [UInt8]? = nil,
        prefix: [UInt8]? = nil, reverse: Bool = false, limit: Int? = nil
    ) throws(KVError) -> [Record] {
        var records: [Record] = []
        if limit == 0 { return records }
        try typed {
            try forEach(in: table, from: lower, to: upper, prefix: prefix, reverse: reverse) { key, value, version in
                records.append(Record(key: Array(key), value: Array(value), version: version))
                return limit.map { records.count < $0 } ?? true
            }
        }
        return records
    }

    /// Runs a read whose closures throw nothing of their own, keeping its error typed.
    private func typed<Result>(_ body: () throws -> Result) throws(KVError) -> Result {
        do {
            return try body()
        } catch let error as KVError {
            throw error
        } catch {
            preconditionFailure("a read whose closures cannot throw threw \(error)")
        }
    }

    /// Visits the records of `table` in key order (or reverse) without copying; `body`
    /// returns false to stop. The buffers are valid only inside `body`. An empty `prefix`
    /// or `lower` bound is no bound (every key starts with, and is at least, the empty key);
    /// an empty `upper` bound admits nothing.
    ///
    /// A stored record that fails its checksum throws `KVError.corruptRecord` and ends the
    /// visit, unless `onCorruptRecord` is given: then it gets that error instead, and returns
    /// true to skip the record and go on, false to stop (or throws).
    ///
    /// ```swift
    /// var total = 0
    /// try snapshot.forEach(in: "people") { _, value, _ in total += value.count; return true }
    /// ```
    public func forEach(
        in table: String = WriteBatch.defaultTable, from lower: [UInt8]? = nil, to upper: [UInt8]? = nil,
        prefix: [UInt8]? = nil, reverse: Bool = false,
        onCorruptRecord: ((KVError) throws -> Bool)? = nil,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Bool
    ) throws {
        // LMDB cannot position a cursor at an empty key (MDB_BAD_VALSIZE); none is needed.
        var lower = lower?.isEmpty == true ? nil : lower, upper = upper
        if upper?.isEmpty == true { return }
        if let prefix, !prefix.isEmpty {
            if lower.map({ $0.lexicographicallyPrecedes(prefix) }) ?? true { lower = prefix }
            if let end = Self.successor(ofPrefix: prefix),
               upper.map({ end.lexicographicallyPrecedes($0) }) ?? true { upper = end }
        }
        var overlayItems = floor < version
            ? overlay.withLock { $0.visibleKeys(table: table, lower: lower, upper: upper, floor: floor, version: version) }
            : []
        if reverse { overlayItems.reverse() }
        // The bounds as constants: variables captured by the scan's closure are read from
        // their boxes, a retain and a release of each bound per record visited.
        let (lowerBound, upperBound) = (lower, upper)
        try withTransaction("forEach/scan") { (state) throws in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            let handle = state.handles.handle(of: table)
            let cursor = try handle.map { (handle) throws(KVError) in try state.cursors.take(handle, in: transaction) }
            defer { if let cursor, let handle { state.cursors.keep(cursor, table: handle) } }
            var stored = try cursor.flatMap { try Self.position($0, lower: lowerBound, upper: upperBound, reverse: reverse) }
            var overlayIndex = 0
            // Overlay items are read in place by index: copying one out per step would retain
            // and release its key and value for every record visited.
            while true {
                let hasOverlayItem = overlayIndex < overlayItems.count
                guard stored != nil || hasOverlayItem else { return }
                var order = 0  // < 0: LMDB's key first; > 0: the overlay's; 0: same key
                if let stored, hasOverlayItem {
                    order = Self.compare(stored.key, overlayItems[overlayIndex].key)
                    if reverse { order = -order }
                } else {
                    order = stored == nil ? 1 : -1
                }
                if order < 0 {
                    let decoded: (version: UInt64, value: UnsafeRawBufferPointer, isTombstone: Bool)?
                    do throws(KVError) {
                        decoded = try RecordCodec.decode(key: stored!.key, stored: stored!.data, table: table)
                    } catch {
                        guard let onCorruptRecord else { throw error }
                        guard try onCorruptRecord(error) else { return }
                        decoded = nil
                    }
                    if let record = decoded, !record.isTombstone, try !body(stored!.key, record.value, record.version) {
                        return
                    }
                } else if try !Self.visit(&overlayItems[overlayIndex], body) {
                    return
                }
                if order <= 0 {
                    stored = try cursor!.move(reverse ? .previous : .next)
                    if let current = stored, !Self.inRange(current.key, lower: lowerBound, upper: upperBound) { stored = nil }
                }
                if order >= 0 { overlayIndex += 1 }
            }
        }
    }

    /// How many records of `table` within [`lower`, `upper`) `include` accepts (every one when
    /// nil), given each key:
    /// the count of `forEach`'s visits (same bounds), without handing values out. Each stored
    /// record is still checked as `forEach` checks it (its checksum; a tombstone is not counted).
    /// When the overlay holds none of the range's keys for this snapshot, the count walks
    /// LMDB's cursor alone, with no merge and no closure per record; otherwise it is
    /// `forEach`'s.
    ///
    /// ```swift
    /// let entries = try snapshot.count(in: "index", from: prefix, to: end) { _ in true }
    /// ```
    package func count(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, where include: ((UnsafeRawBufferPointer) -> Bool)?
    ) throws(KVError) -> Int {
        let lower = lower?.isEmpty == true ? nil : lower
        if upper?.isEmpty == true { return 0 }
        let overlayHoldsRange = floor < version
            && overlay.withLock { !$0.visibleKeys(table: table, lower: lower, upper: upper, floor: floor, version: version).isEmpty }
        if overlayHoldsRange {
            var total = 0
            try typed {
                try forEach(in: table, from: lower, to: upper) { key, _, _ in
                    if include?(key) ?? true { total += 1 }
                    return true
                }
            }
            return total
        }
        return try withTransaction("count") { (state) throws(KVError) -> Int in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            guard let handle = state.handles.handle(of: table) else { return 0 }
            let cursor = try state.cursors.take(handle, in: transaction)
            defer { state.cursors.keep(cursor, table: handle) }
            var total = 0
            var entry = try Self.position(cursor, lower: lower, upper: upper, reverse: false)
            while let current = entry {
                if try !RecordCodec.decode(key: current.key, stored: current.data, table: table).isTombstone,
                   include?(current.key) ?? true {
                    total += 1
                }
                entry = try cursor.next()
                if let next = entry, let upper, Self.compare(next.key, upper) >= 0 { entry = nil }
            }
            return total
        }
    }

    /// About how many records a full scan of `table` visits, for sizing what a caller collects:
    /// LMDB's live records plus the overlay's keys of the table. Never less than the number
    /// visited; more when the overlay rewrites or deletes records LMDB holds.
    ///
    /// ```swift
    /// var keys: [[UInt8]] = []
    /// keys.reserveCapacity(try snapshot.estimatedRecordCount(in: "people"))
    /// ```
    package func estimatedRecordCount(in table: String) throws(KVError) -> Int {
        let overlayKeys = floor < version ? overlay.withLock { $0.keysPerTable[table] ?? 0 } : 0
        return try entryCount(in: table) + overlayKeys
    }

    /// Live records of `table` in LMDB (as of the applied version this snapshot reads):
    /// LMDB's entries less the tombstones the applier counted.
    func entryCount(in table: String) throws(KVError) -> Int {
        try withTransaction("entryCount") { (state) throws(KVError) -> Int in
            guard let transaction = state.transaction(for: id) else { throw endedError(state) }
            guard let dbi = state.handles.handle(of: table) else { return 0 }
            let tombstones = try StoreCore.tombstoneCount(of: table, in: transaction, meta: core.metaHandle)
            return try transaction.entryCount(dbi) - Int(tombstones)
        }
    }

    /// Calls `body` with an overlay item's key, value and record version; true (go on) for a
    /// deletion. `inout` so that the item is read where it lies: a copy, even of one field,
    /// retained and released its key and value, per record visited.
    @inline(__always)
    private static func visit(
        _ item: inout KeyedEntry<OverlayEntry>,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Bool
    ) throws -> Bool {
        let recordVersion = item.entry.recordVersion
        return try item.key.withUnsafeBytes { key in
            try item.entry.withValueBytes { value in
                guard let value else { return true }
                return try body(key, value, recordVersion)
            }
        }
    }

    private static func position(_ cursor: LMDBCursor, lower: [UInt8]?, upper: [UInt8]?, reverse: Bool) throws(KVError)
        -> (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)?
    {
        let first: (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)?
        if !reverse {
            first = try cursor.move(lower.map { .atOrAfter($0) } ?? .first)
        } else if let upper {
            first = try cursor.move(.atOrAfter(upper)) != nil ? try cursor.move(.previous) : try cursor.move(.last)
        } else {
            first = try cursor.move(.last)
        }
        guard let first, inRange(first.key, lower: lower, upper: upper) else { return nil }
        return first
    }

    private static func inRange(_ key: UnsafeRawBufferPointer, lower: [UInt8]?, upper: [UInt8]?) -> Bool {
        if let lower, compare(key, lower) < 0 { return false }
        if let upper, compare(key, upper) >= 0 { return false }
        return true
    }

    /// LMDB's default key order: bytewise, a shorter key first when one is a prefix.
    static func compare(_ left: UnsafeRawBufferPointer, _ right: [UInt8]) -> Int {
        right.withUnsafeBytes { compare(left, $0) }
    }

    /// -1, 0 or 1. A word at a time in line (`cairn_compare_bytes`, the order LMDB's tables
    /// use), not a call to `memcmp` through the PLT for keys of a few words.
    @inline(__always)
    static func compare(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Int {
        Int(cairn_compare_bytes(left.baseAddress, left.count, right.baseAddress, right.count))
    }

    /// The smallest key greater than every key starting with `prefix`, or nil if none.
    static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }
}

/// Where a key's newest state for a snapshot lives: an overlay entry (commits not yet applied
/// to LMDB), LMDB's stored record (its value valid while the transaction is), or nowhere.
enum StoredState {
    case absent
    case overlay(OverlayEntry)
    case stored(version: UInt64, value: UnsafeRawBufferPointer, isTombstone: Bool)

    /// The lookup behind a batch of point reads (`visitValue` has its own, inline): the overlay
    /// for (floor, version], then LMDB. `key` is already validated. Throws
    /// `KVError.corruptRecord` when the stored record fails its checksum.
    static func lookup(_ key: [UInt8], in table: String, transaction: LMDBTransaction,
                       overlay: ConditionLock<OverlayState>, floor: UInt64, version: UInt64,
                       handles: inout TableHandles, keyFilter: inout SnapshotKeyFilter) throws(KVError) -> StoredState {
        try key.withBytes { (keyBytes) throws(KVError) -> StoredState in
            if let entry = overlayEntry(rawKey: keyBytes, array: key, in: table, overlay: overlay, floor: floor,
                                        version: version, keyFilter: &keyFilter) {
                return .overlay(entry)
            }
            guard let handle = handles.handle(of: table) else { return .absent }
            return try stored(keyBytes, in: table, handle: handle, transaction: transaction)
        }
    }

    /// `lookup` of a key given as bytes, in the table whose handle is `handle` (nil: no such
    /// table): the overlay's key array is made only when its filter may hold the key.
    static func lookup(rawKey key: UnsafeRawBufferPointer, in table: String, handle: MDB_dbi?, transaction: LMDBTransaction,
                       overlay: ConditionLock<OverlayState>, floor: UInt64, version: UInt64,
                       keyFilter: inout SnapshotKeyFilter) throws(KVError) -> StoredState {
        if let entry = overlayEntry(rawKey: key, in: table, overlay: overlay, floor: floor, version: version,
                                    keyFilter: &keyFilter) {
            return .overlay(entry)
        }
        guard let handle else { return .absent }
        return try stored(key, in: table, handle: handle, transaction: transaction)
    }

    /// `lookup(rawKey:…)` through `cursor`, open on the table's handle: the same states, the
    /// key found from where the cursor stands (left on it for the next). `nextFirst`: the
    /// cursor stands on the record just before `key` if it exists, so the next record is
    /// looked at before searching.
    static func lookup(rawKey key: UnsafeRawBufferPointer, in table: String, cursor: LMDBCursor, nextFirst: Bool,
                       overlay: ConditionLock<OverlayState>, floor: UInt64, version: UInt64,
                       keyFilter: inout SnapshotKeyFilter) throws(KVError) -> StoredState {
        if let entry = overlayEntry(rawKey: key, in: table, overlay: overlay, floor: floor, version: version,
                                    keyFilter: &keyFilter) {
            return .overlay(entry)
        }
        var found: (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)? = nil
        if nextFirst, let next = try cursor.next(), Snapshot.compare(next.key, key) == 0 { found = next }
        if found == nil { found = try cursor.record(at: key) }
        guard let found else { return .absent }
        let record = try RecordCodec.decode(key: key, stored: found.data, table: table)
        return .stored(version: record.version, value: record.value, isTombstone: record.isTombstone)
    }

    /// The overlay's entry for a key given as bytes in (floor, version], if any. Asked under the
    /// overlay lock only when `keyFilter` (the snapshot's copy) does not rule the key out; the
    /// key array (`array`, or one made here) only when the overlay's own filter does not.
    /// `keyHash`: the key's `KeyFilter.hash(of:)`, when the caller has it.
    @inline(__always)
    static func overlayEntry(rawKey key: UnsafeRawBufferPointer, keyHash: UInt32? = nil, array: [UInt8]? = nil,
                             in table: String, overlay: ConditionLock<OverlayState>, floor: UInt64, version: UInt64,
                             keyFilter: inout SnapshotKeyFilter) -> OverlayEntry? {
        guard floor < version else { return nil }
        let hash = keyHash ?? KeyFilter.hash(of: key)
        guard keyFilter.mayHold(hash: hash) else { return nil }
        return overlay.withLock { (state) -> OverlayEntry? in
            keyFilter.didLock(state.entries.keyFilter)
            guard state.entries.mayHold(hash: hash) else { return nil }
            return state.entry(TableKey(table: table, key: array ?? Array(key)), floor: floor, version: version)
        }
    }

    /// LMDB's record of `key` in the table of `handle`, checksum checked.
    private static func stored(_ key: UnsafeRawBufferPointer, in table: String, handle: MDB_dbi,
                               transaction: LMDBTransaction) throws(KVError) -> StoredState {
        guard let bytes = try transaction.stored(key, in: handle) else { return .absent }
        let record = try RecordCodec.decode(key: key, stored: bytes, table: table)
        return .stored(version: record.version, value: record.value, isTombstone: record.isTombstone)
    }

    /// Calls a `visitValues` body with this state at `position`: nil and version 0 for an absent
    /// key or a deleted record. The buffer is valid only inside `body`.
    @inline(__always)
    func deliver(at position: Int, _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void) rethrows {
        switch self {
        case .absent:
            try body(position, nil, 0)
        case .overlay(let entry):
            guard let value = entry.value else { return try body(position, nil, 0) }
            try value.withUnsafeBytes { try body(position, $0, entry.recordVersion) }
        case let .stored(version, value, isTombstone):
            try body(position, isTombstone ? nil : value, isTombstone ? 0 : version)
        }
    }
}

/// A snapshot's record states for the commit path, valid only inside
/// `Snapshot.withStateReader`.
struct StateReader {
    let transaction: LMDBTransaction
    let overlay: ConditionLock<OverlayState>
    let floor: UInt64
    let version: UInt64
    var handles: TableHandles
    /// A cursor on the table last read, kept across lookups: a batch's keys usually come in
    /// order (a context's objects are saved in the order they were fetched), and LMDB finds
    /// the next one on the cursor's leaf page without descending the tree again. Closed by
    /// `close()`, which `Snapshot.withStateReader` calls.
    private var cursor: (table: MDB_dbi, cursor: LMDBCursor)? = nil
    /// The record the cursor stands on, when a lookup left it on one (LMDB's bytes, valid as
    /// long as the transaction). A key after it is looked for at the next record first: a
    /// save of fetched objects checks the records one after another, and a step to the next
    /// record costs a fraction of a search.
    private var standsOn: (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)? = nil

    init(transaction: LMDBTransaction, overlay: ConditionLock<OverlayState>, floor: UInt64, version: UInt64,
         handles: TableHandles) {
        self.transaction = transaction
        self.overlay = overlay
        self.floor = floor
        self.version = version
        self.handles = handles
    }

    /// What the snapshot holds for `tableKey` (its key already validated): nothing, a live
    /// record, or a tombstone.
    mutating func recordState(of tableKey: TableKey) throws(KVError) -> RecordState {
        // The overlay first, as `StoredState.lookup` does, reading versions only.
        if floor < version,
           let state = overlay.withLock({ $0.recordState(tableKey, floor: floor, version: version) }) {
            return state
        }
        guard let table = handles.handle(of: tableKey.table) else { return .absent }
        if cursor?.table != table {
            cursor?.cursor.close()
            cursor = nil  // so that a failed open leaves no closed cursor for `close()`
            standsOn = nil
            cursor = (table, try transaction.openCursor(table))
        }
        let lmdbCursor = cursor!.cursor
        return try tableKey.key.withBytes { (keyBytes) throws(KVError) -> RecordState in
            var found: (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)? = nil
            if let current = standsOn {
                let order = Snapshot.compare(keyBytes, current.key)
                if order == 0 {
                    found = current
                } else if order > 0 {
                    // The record after the cursor's: the key, or proof that the key is absent
                    // (no key lies between the two), or, past it, a search after all.
                    standsOn = try lmdbCursor.next()
                    guard let next = standsOn else { return .absent }
                    let order = Snapshot.compare(keyBytes, next.key)
                    if order < 0 { return .absent }
                    if order == 0 { found = next }
                }
            }
            if found == nil {
                found = try lmdbCursor.record(at: keyBytes)
                standsOn = found
            }
            guard let found else { return .absent }
            let record = try RecordCodec.decode(key: keyBytes, stored: found.data, table: tableKey.table)
            return record.isTombstone ? .deleted(record.version) : .live(record.version)
        }
    }

    /// Closes the kept cursor; the reader reads nothing after this.
    mutating func close() {
        cursor?.cursor.close()
        cursor = nil
        standsOn = nil
    }
}

/// A snapshot's LMDB table handles by name, remembering the last ones found: a reader reads a
/// few tables, and comparing a name is cheaper than hashing it (a hash of an index table's name
/// was about 300 instructions).
///
/// The ones found are kept across the snapshots one holder serves (`replaceTables`). Relies on:
/// after a store opens, its table handles only gain names (merges keep the old handle), so a
/// name's handle never changes while the store is open; a name not found is asked of each
/// snapshot's tables again.
struct TableHandles {
    private(set) var tables: [String: MDB_dbi]
    /// The table found last, outside `found`: a point read's check of it loads no array.
    private var lastName = ""
    private var lastHandle: MDB_dbi? = nil
    /// Most recently found first (the last one too).
    private var found: [(name: String, handle: MDB_dbi)] = []
    private static let kept = 4

    init(_ tables: [String: MDB_dbi]) { self.tables = tables }

    /// The handle of `table`, nil when LMDB has no such table in this snapshot.
    @inline(__always)
    mutating func handle(of table: String) -> MDB_dbi? {
        // By `==` alone: equal strings (the same literal, most reads) are told equal by their
        // raw bits, inline, before any length or byte is looked at.
        if lastName == table, let lastHandle { return lastHandle }
        return find(table)
    }

    private mutating func find(_ table: String) -> MDB_dbi? {
        // Lengths first: a mismatch of names of other lengths costs no string comparison.
        let length = table.utf8.count
        var handle: MDB_dbi? = nil
        if let index = found.firstIndex(where: { $0.name.utf8.count == length && $0.name == table }) {
            handle = found.remove(at: index).handle
        } else {
            handle = tables[table]
            if found.count == Self.kept { found.removeLast() }
        }
        guard let handle else { return nil }
        found.insert((table, handle), at: 0)
        lastName = table
        lastHandle = handle
        return handle
    }

    /// The tables of the next snapshot (a newer set of the same store's tables).
    mutating func replaceTables(_ newer: [String: MDB_dbi]) { tables = newer }
}
