import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// Sorting the operations of a large apply by (table, key), cheaply: the first 16 key
/// bytes are compared as two big-endian integers, `memcmp` only breaks their ties.
enum KeyOrder {
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
    static func sortedByKey<Value>(_ pairs: [(key: [UInt8], entry: Value)]) -> [(key: [UInt8], entry: Value)] {
        guard pairs.count > 1 else { return pairs }
        var order: [(high: UInt64, low: UInt64, index: Int)] = []
        order.reserveCapacity(pairs.count)
        for index in pairs.indices {
            let (high, low) = prefix(pairs[index].key)
            order.append((high, low, index))
        }
        order.sort { left, right in
            if left.high != right.high { return left.high < right.high }
            if left.low != right.low { return left.low < right.low }
            return pairs[left.index].key.withUnsafeBytes { Snapshot.compare($0, pairs[right.index].key) } < 0
        }
        return order.map { pairs[$0.index] }
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
