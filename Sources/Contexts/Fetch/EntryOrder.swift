#if canImport(Glibc)
import Glibc
#endif

/// Whether the index entries a walk in sort order gathered are, in the order walked, already the
/// fetch's order (its sort descriptors, base order breaking ties), told from their bytes, so the
/// fetch neither checks nor sorts its candidates (about 500 instructions a comparison of two
/// decoded values, 19 of them a sorted page of 20, against one `memcmp` an entry here).
///
/// Relies on: an index's byte order is `AttributeOrder.sortOrder`'s order for the values it holds
/// (its attribute's type and null: Docs/Contexts.md, "The index key format"), except that values
/// cut at the index's cap compare equal in bytes while the values may differ; and entries of
/// equal values follow in primary-key order (the key's suffix), which is base order. So the
/// walk's order is the fetch's when each entry's sort values are strictly after the previous
/// entry's in the walk's direction, or equal, uncut, in an ascending walk of a one-descriptor
/// sort on every value of the key (a descending walk meets ties in descending primary-key
/// order, a second descriptor would order them otherwise, and so would the key's later values).
/// Pinned by `IndexedFetchTests.aSortedWalkSkipsTheSortOnlyWhenItsBytesProveTheOrder`.
struct EntryOrder {
    /// The entries noted so far are in the fetch's order.
    private(set) var holds = true
    private let sortValues: Int
    /// The sort values are every value of the key (all but the 8-byte primary key).
    private let wholeKey: Bool
    private let ascending: Bool
    private let tiesInOrder: Bool
    /// The previous entry's sort values: its first `previousCount` bytes (copied, since an
    /// entry's bytes are valid only while the walk visits it).
    private var previous: [UInt8] = []
    private var previousCount = 0
    private var started = false
    /// In a walk of `tiesInOrder`: `previous` holds the previous entry's values, which were cut.
    private var previousCut = false

    init(sortValues: Int, indexValues: Int, ascending: Bool, sortDescriptors: Int) {
        self.sortValues = sortValues
        wholeKey = sortValues == indexValues
        self.ascending = ascending
        tiesInOrder = ascending && sortDescriptors == 1 && wholeKey
    }

    /// Notes the next entry walked (a key this index's encoding made).
    mutating func note(_ entry: UnsafeRawBufferPointer) {
        guard holds, let bytes = entry.baseAddress else { return }
        if tiesInOrder { return noteInKeyOrder(entry) }
        let length = max(wholeKey ? entry.count - 8 : IndexKeyEncoding.length(ofValues: sortValues, in: entry), 0)
        // Compared with the last entry's values and copied over them in one pass over the
        // buffer: growing and emptying an array per entry cost about 200 instructions.
        if previous.count < max(length, 1) { previous = [UInt8](repeating: 0, count: max(length, 2 * previous.count, 32)) }
        let started = self.started, previousCount = self.previousCount
        let order = previous.withUnsafeMutableBytes { stored -> Int in
            let last = stored.baseAddress!
            var order = 0
            if started {
                let common = min(previousCount, length)
                if common > 0 { order = Int(memcmp(last, bytes, common)) }
                if order == 0 { order = previousCount - length }
            }
            if length > 0 { last.copyMemory(from: bytes, byteCount: length) }
            return order
        }
        if started {
            if order == 0 {
                // A cut value ends `00 02` (Contexts.md); an int whose last bytes are those is
                // taken for one, which only costs the check.
                let cut = length >= 2 && entry[length - 2] == 0 && entry[length - 1] == 2
                holds = tiesInOrder && !cut
            } else {
                holds = ascending ? order < 0 : order > 0
            }
        }
        self.started = true
        self.previousCount = length
    }

    /// `note` in a walk of `tiesInOrder`, where only a tie of cut values can break the order, so
    /// only cut values are kept and compared (the copy and comparison of every entry's values
    /// cost about 130 instructions an entry). Relies on: the walk meets its entries in strictly
    /// ascending key order (a read view's walk, each chunk after the last), and values are
    /// self-delimiting, so an entry's values are after the previous entry's or equal to them
    /// (the primary key deciding); equal bytes end alike, so a cut value ties only a cut one.
    private mutating func noteInKeyOrder(_ entry: UnsafeRawBufferPointer) {
        let length = max(entry.count - 8, 0)
        // A cut value ends `00 02`, as in `note`.
        guard length >= 2 && entry[length - 2] == 0 && entry[length - 1] == 2 else {
            previousCut = false
            return
        }
        if previous.count < length { previous = [UInt8](repeating: 0, count: max(length, 2 * previous.count, 32)) }
        let previousCut = self.previousCut, previousCount = self.previousCount
        let tie = previous.withUnsafeMutableBytes { stored -> Bool in
            let last = stored.baseAddress!, bytes = entry.baseAddress!
            let tie = previousCut && previousCount == length && memcmp(last, bytes, length) == 0
            last.copyMemory(from: bytes, byteCount: length)
            return tie
        }
        holds = !tie
        self.previousCut = true
        self.previousCount = length
    }
}
