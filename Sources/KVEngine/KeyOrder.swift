import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// Sorting the operations of a large apply by (table, key), cheaply: the first 16 key
/// bytes are compared as two big-endian integers, `memcmp` only breaks their ties.
package enum KeyOrder {
    struct Item {
        var table: Int32
        var high: UInt64
        var low: UInt64
        var commit: Int
        var operation: Int32
    }

    static func sorted(_ commits: ArraySlice<LoggedCommit>) -> [(commit: Int, operation: Int)] {
        let tableNames = Array(Set(commits.flatMap { $0.operations.map(\.table) })).sorted()
        let tableRank = Dictionary(uniqueKeysWithValues: tableNames.enumerated().map { ($1, Int32($0)) })
        var items: [Item] = []
        items.reserveCapacity(commits.reduce(0) { $0 + $1.operations.count })
        for commitIndex in commits.indices {
            for (operationIndex, operation) in commits[commitIndex].operations.enumerated() {
                let (high, low) = prefix(operation.key)
                items.append(Item(table: tableRank[operation.table]!, high: high, low: low,
                                  commit: commitIndex, operation: Int32(operationIndex)))
            }
        }
        items.sort { left, right in
            if left.table != right.table { return left.table < right.table }
            if left.high != right.high { return left.high < right.high }
            if left.low != right.low { return left.low < right.low }
            let a = commits[left.commit].operations[Int(left.operation)].key
            let b = commits[right.commit].operations[Int(right.operation)].key
            if a.count > 16 || b.count > 16 || a.count != b.count {
                let order = a.withUnsafeBytes { a in Snapshot.compare(a, b) }
                if order != 0 { return order < 0 }
            }
            return (left.commit, left.operation) < (right.commit, right.operation)
        }
        return items.map { ($0.commit, Int($0.operation)) }
    }

    /// `pairs` in LMDB's key order (bytewise, a prefix first), for keys that are unique:
    /// the 16-byte prefixes are sorted as integers, `memcmp` breaks their ties.
    ///
    /// A scan that merges the overlay sorts every overlay key of its table, so a fetch of
    /// many objects still in the overlay sorts them all. From `radixThreshold` keys on, the
    /// prefixes are radix-sorted, one byte per pass and only the bytes that differ between
    /// keys (two passes for the 8-byte primary keys of up to 65,536 objects), then runs of
    /// equal prefixes are sorted by their whole keys; below it, a comparison sort.
    ///
    /// The pairs are then put in that order in place, following the permutation's cycles
    /// with swaps (moves of memory, no reference counting), not copied into a new array:
    /// copying retained every key and value and destroying the old array released them all,
    /// per key of the scan.
    package static func sortedByKey<Value>(_ pairs: consuming [KeyedEntry<Value>]) -> [KeyedEntry<Value>] {
        guard pairs.count > 1 else { return pairs }
        var order: [Prefixed] = []
        order.reserveCapacity(pairs.count)
        for index in pairs.indices {
            let (high, low) = prefix(pairs[index].key)
            order.append(Prefixed(high: high, low: low, index: index))
        }
        /// For keys whose prefixes are equal: their whole bytes.
        func wholeKeyPrecedes(_ left: Prefixed, _ right: Prefixed) -> Bool {
            pairs[left.index].key.withUnsafeBytes { Snapshot.compare($0, pairs[right.index].key) } < 0
        }
        if pairs.count >= radixThreshold {
            radixSort(&order)
            // Equal prefixes (keys longer than 16 bytes, or equal up to zero padding) are
            // adjacent now; order each such run by the whole keys.
            var start = 0
            while start < order.count {
                var end = start + 1
                while end < order.count && order[end].high == order[start].high && order[end].low == order[start].low {
                    end += 1
                }
                if end - start > 1 { order[start..<end].sort(by: wholeKeyPrecedes) }
                start = end
            }
        } else {
            order.sort { left, right in
                if left.high != right.high { return left.high < right.high }
                if left.low != right.low { return left.low < right.low }
                return wholeKeyPrecedes(left, right)
            }
        }
        // new[i] = old[order[i].index], cycle by cycle; `source` marks a placed position.
        var source = order.map(\.index)
        pairs.withUnsafeMutableBufferPointer { buffer in
            for start in buffer.indices where source[start] != start {
                var current = start
                while source[current] != start {
                    let next = source[current]
                    buffer.swapAt(current, next)
                    source[current] = current
                    current = next
                }
                source[current] = current
            }
        }
        return pairs
    }

    /// A key's 16-byte prefix as two big-endian integers, and where the key is.
    package struct Prefixed {
        var high: UInt64
        package var low: UInt64
        package var index: Int

        package init(high: UInt64, low: UInt64, index: Int) {
            self.high = high
            self.low = low
            self.index = index
        }
    }

    /// From how many keys `sortedByKey` radix-sorts (below it, building the counts of a
    /// pass costs more than the comparisons it saves).
    static let radixThreshold = 256

    /// Sorts `items` by (high, low), stably: a least-significant-digit radix sort of one byte
    /// per pass, skipping the bytes every item has alike.
    package static func radixSort(_ items: inout [Prefixed]) {
        guard let first = items.first else { return }
        var differLow: UInt64 = 0
        var differHigh: UInt64 = 0
        for item in items {
            differLow |= item.low ^ first.low
            differHigh |= item.high ^ first.high
        }
        var spare = items
        var counts = [Int](repeating: 0, count: 256)
        for pass in 0..<16 {
            let shift = UInt64((pass % 8) * 8)
            let usesLow = pass < 8
            guard ((usesLow ? differLow : differHigh) >> shift) & 0xFF != 0 else { continue }
            items.withUnsafeBufferPointer { source in
                spare.withUnsafeMutableBufferPointer { target in
                    counts.withUnsafeMutableBufferPointer { counts in
                        for digit in 0..<256 { counts[digit] = 0 }
                        for item in source {
                            counts[Int(((usesLow ? item.low : item.high) >> shift) & 0xFF)] += 1
                        }
                        var total = 0
                        for digit in 0..<256 {
                            let count = counts[digit]
                            counts[digit] = total
                            total += count
                        }
                        for item in source {
                            let digit = Int(((usesLow ? item.low : item.high) >> shift) & 0xFF)
                            target[counts[digit]] = item
                            counts[digit] += 1
                        }
                    }
                }
            }
            swap(&items, &spare)
        }
    }

    /// The first 16 bytes of `key`, zero-padded, as two big-endian integers.
    @inline(__always)
    static func prefix(_ key: [UInt8]) -> (UInt64, UInt64) {
        var buffer: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &buffer) { raw in
            key.withUnsafeBytes { bytes in
                raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(16)))
            }
        }
        return (UInt64(bigEndian: buffer.0), UInt64(bigEndian: buffer.1))
    }
}

/// A key and what goes with it (an overlay entry, in a scan), as `KeyOrder.sortedByKey` orders
/// them. A struct, not a tuple: an array of tuples is destroyed by the runtime's generic tuple
/// code, element by element and field by field, several times slower than a struct's own.
package struct KeyedEntry<Value> {
    package var key: [UInt8]
    package var entry: Value

    package init(key: [UInt8], entry: Value) {
        self.key = key
        self.entry = entry
    }
}
