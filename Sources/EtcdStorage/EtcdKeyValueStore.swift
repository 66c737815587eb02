import Contexts

/// Plain records of an etcd store's tables, for the `cairn` key-value commands: the same
/// keys as the object layer's (`PREFIX/<table> 0x00 <key>`), one txn per write.
///
/// ```swift
/// let records = EtcdKeyValueStore(try EtcdConfiguration(url: url))
/// defer { records.close() }
/// try records.put(Array("v".utf8), forKey: Array("k".utf8), in: "default")
/// ```
package final class EtcdKeyValueStore: Sendable {
    private let storage: EtcdStorage

    package init(_ configuration: EtcdConfiguration) {
        storage = EtcdStorage(configuration: configuration)
    }

    package func close() { storage.close() }

    /// Writes `value` under `key`; returns once the cluster acknowledged it.
    package func put(_ value: [UInt8], forKey key: [UInt8], in table: String) throws(StorageError) {
        var batch = StorageBatch()
        batch.put(value, forKey: key, in: table, if: nil)
        _ = try storage.commit(batch, durability: .full)
    }

    /// Removes `key` (not an error when absent).
    package func delete(_ key: [UInt8], in table: String) throws(StorageError) {
        var batch = StorageBatch()
        batch.delete(key, in: table, if: nil)
        _ = try storage.commit(batch, durability: .full)
    }

    /// The value under `key`, nil when absent.
    package func get(_ key: [UInt8], in table: String) throws -> [UInt8]? {
        let view = try storage.readView()
        defer { view.close() }
        var found: [UInt8]? = nil
        try view.visitValues(forKeys: [StorageKey(table: table, key: key)]) { _, value, _ in found = value.map { Array($0) } }
        return found
    }

    /// Visits the records of `table` in key order (or reverse) whose key starts with
    /// `prefix`, at one revision; `body` returns false to stop.
    package func forEach(
        in table: String, prefix: [UInt8]?, reverse: Bool, _ body: ([UInt8], [UInt8]) throws -> Bool
    ) throws {
        let view = try storage.readView()
        defer { view.close() }
        var upper: [UInt8]? = nil
        if var end = prefix, !end.isEmpty {
            // The smallest key above every key with the prefix: strip trailing 0xFF, add one.
            while end.last == 0xFF { end.removeLast() }
            if !end.isEmpty { end[end.count - 1] += 1; upper = end }
        }
        try view.forEach(in: table, from: prefix, to: upper, reverse: reverse) { key, value, _ in
            try body(Array(key), Array(value))
        }
    }
}
