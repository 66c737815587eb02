import CairnTestSupport
import Testing
import KVEngine

/// `OverlayTable` holds every key the overlay has; a key it loses or finds wrongly is a lost or
/// wrong read and a wrong commit check. These run it against `Dictionary` on the same
/// operations, with digests chosen to collide: runs that wrap around the end of the table, and
/// removals in the middle of runs, whose following keys must shift back.
@Suite struct OverlayTableTests {
    /// A key whose digest is `digest` (known digests are taken as given).
    private func key(_ number: Int, digest: UInt64) -> TableKey {
        TableKey(table: number % 3 == 0 ? "other" : "items", key: Array("key-\(number)".utf8), digest: digest)
    }

    private func entry(_ value: Int) -> OverlayEntry {
        OverlayEntry(commitVersion: UInt64(value), recordVersion: 1, value: [UInt8(value & 0xFF)])
    }

    /// The table's contents as a dictionary of newest commit versions.
    private func contents(_ table: OverlayTable) -> [TableKey: UInt64] {
        var result: [TableKey: UInt64] = [:]
        table.forEach { key, versions in result[copy key] = versions.newest.commitVersion }
        return result
    }

    @Test(arguments: [
        // Few distinct low bits: long runs in a table of 16 to 64 buckets, wrapping around.
        (seed: UInt64(1), lowBits: UInt64(0xF), keys: 40),
        (seed: UInt64(2), lowBits: UInt64(0x3), keys: 60),
        // Digests as random as real ones, through several doublings.
        (seed: UInt64(3), lowBits: UInt64.max, keys: 3_000),
    ])
    func itAgreesWithADictionaryThroughInsertsUpdatesAndRemovals(seed: UInt64, lowBits: UInt64, keys: Int) {
        var random = SeededRandom(seed: seed)
        // Each key number keeps one digest; high bits set so that no digest is 0.
        let digests = (0..<keys).map { _ in (random.next() & lowBits) | (random.next() << 32) | 1 << 63 }
        let table = OverlayTable()
        var model: [TableKey: UInt64] = [:]
        for step in 0..<(keys * 20) {
            let number = Int(random.next() % UInt64(keys))
            let tableKey = key(number, digest: digests[number])
            switch random.next() % 3 {
            case 0, 1:  // insert or update
                // No snapshot interval: the replaced version comes back.
                let (replaced, made) = table.insertNewest(entry(step), for: tableKey, keepingFor: [])
                let previous = replaced?.commitVersion
                #expect(made == (model[tableKey] == nil), "step \(step): fresh is \(made)")
                #expect(previous == model[tableKey], "step \(step): replaced \(String(describing: previous))")
                model[tableKey] = UInt64(step)
            default:  // remove
                if let index = table.bucket(of: tableKey) {
                    #expect(table.key(at: index) == tableKey)
                    let removed = table.remove(at: index)
                    #expect(removed.newest.commitVersion == model[tableKey], "step \(step): removed the wrong key")
                    model[tableKey] = nil
                } else {
                    #expect(model[tableKey] == nil, "step \(step): key \(number) not found")
                }
            }
            #expect(table.count == model.count)
            // Every key of the model is found where it is, in full every so often.
            if step % 97 == 0 || keys <= 60 {
                for (modelKey, version) in model {
                    #expect(table[modelKey]?.newest.commitVersion == version, "step \(step): lost a key")
                }
                #expect(contents(table) == model)
                #expect(Set(table.keys) == Set(model.keys))
                // The filter never rules out a key the table holds (a read would miss it).
                #expect(model.keys.allSatisfy { key in key.key.withUnsafeBytes { table.mayHold($0) } }, "step \(step)")
            }
        }
        for number in 0..<keys {
            let tableKey = key(number, digest: digests[number])
            #expect(table[tableKey]?.newest.commitVersion == model[tableKey])
        }
    }

    /// Reserving room up front keeps every key, and keys with equal digests but different
    /// bytes or tables stay apart.
    @Test func reservingRoomAndEqualDigestsKeepEveryKey() {
        let table = OverlayTable()
        table.reserveCapacity(1_000)
        for number in 0..<1_000 {
            // Ten keys share each digest.
            _ = table.insertNewest(entry(number), for: key(number, digest: UInt64(number / 10) | 1 << 40), keepingFor: [])
        }
        #expect(table.count == 1_000)
        for number in 0..<1_000 {
            #expect(table[key(number, digest: UInt64(number / 10) | 1 << 40)]?.newest.commitVersion == UInt64(number))
        }
        #expect(table[key(5, digest: 1 << 41)] == nil)
    }

    /// The key filter counts keys in and out: through a doubling every key is held, and once
    /// every key is removed again, none is (a filter that only set bits would say all).
    @Test func theKeyFilterForgetsRemovedKeys() {
        let table = OverlayTable()
        let keys = (0..<200).map { key($0, digest: UInt64($0) &* 0x9E37_79B9_7F4A_7C15 | 1 << 63) }
        for (number, tableKey) in keys.enumerated() {
            _ = table.insertNewest(entry(number), for: tableKey, keepingFor: [])
        }
        #expect(keys.allSatisfy { key in key.key.withUnsafeBytes { table.mayHold($0) } })
        for tableKey in keys {
            if let index = table.bucket(of: tableKey) { table.remove(at: index) }
        }
        #expect(table.count == 0)
        #expect(!keys.contains { key in key.key.withUnsafeBytes { table.mayHold($0) } })
    }
}
