/// The primary keys of one entity's objects that a save deletes and has settled as deletes
/// already (`includeStoreMembers`' settled objects), sorted: a member the store holds is found
/// among them without a registry lookup. Looking each member of a cascade up by ID indexed the
/// 10,000 objects its fetch made and hashed each again (about 630 instructions a member of
/// relationship-cascade).
///
/// Relies on: while `includeStoreMembers` runs, a settled object stays settled and keeps its ID,
/// so a key found here is one the lookup would find settled; a key not found is looked up as
/// before. Pinned by `DeleteRuleTests` and `RelationshipConflictTests.cascadeVersusAddedMember`
/// (a member added elsewhere, among the ones the cascade deleted here).
struct SettledDeletes {
    private let keys: [UInt64]
    /// Where the next key is looked for first: the index gives a to-many's members in key order.
    private var next = 0

    /// None.
    init() { keys = [] }

    /// The keys of `entityName`'s objects among `entries` that `settled` accepts.
    init(_ entries: [SaveEntry], entityName: String, settled: (StoredObject) -> Bool) {
        var keys: [UInt64] = []
        keys.reserveCapacity(entries.count)
        for index in entries.indices where entries[index].id.entityName == entityName && settled(entries[index].object) {
            if let key = entries[index].id.primaryKey { keys.append(key) }
        }
        // Registration order, which a fetch's base order makes key order already.
        if !keys.indices.dropFirst().allSatisfy({ keys[$0 - 1] < keys[$0] }) { keys.sort() }
        self.keys = keys
    }

    /// Whether `key` is one of them.
    mutating func contains(_ key: UInt64) -> Bool {
        if next < keys.count, keys[next] == key {
            next += 1
            return true
        }
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        guard low < keys.count, keys[low] == key else { return false }
        next = low + 1
        return true
    }
}
