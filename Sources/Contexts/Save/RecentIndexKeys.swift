import Policies

/// The entry key a save's last delete got in each one-attribute index of its entity, with the
/// value it was made of: the next delete whose value there is equal takes a copy with its own
/// primary key instead of encoding the value again (a cascade's 10,000 members all name one
/// owner: about 300 instructions a member of relationship-cascade). Deletes only: an update's
/// values seldom repeat from one object to the next, and the comparison would cost it.
///
/// Relies on: equal values encode to the same bytes (`appendIndexOperations` says why), and an
/// entry key ends with its primary key's 8 big-endian bytes (`IndexKeyEncoding.primaryKey(ofEntry:)`).
/// Pinned by `IndexMaintenanceTests.deletesSharingAValueRemoveEachEntry`.
struct RecentIndexKeys {
    /// One index's last key and the value it was made of. Read in place through an unretained
    /// reference (`Unmanaged`): reading them out of a list copies them, a retain and a release
    /// each, once per delete.
    private final class Last {
        let index: ObjectIdentifier
        let value: AttributeValue
        let key: [UInt8]

        init(index: ObjectIdentifier, value: AttributeValue, key: [UInt8]) {
            self.index = index
            self.value = value
            self.key = key
        }
    }

    // By the index's position in its entity's list. Relies on: `unretained[p]` is `held[p]`
    // (both set together, only in `entryKey`), so each reference read is alive while held.
    private var held: [Last?] = []
    private var unretained: [Unmanaged<Last>?] = []

    /// The last key of one-attribute `index` (at `position` in its entity's list) with
    /// `primaryKey`, when the value it was made of is one `isEqual` accepts; nil otherwise. The
    /// value is lent to `isEqual`, not copied out (a copy retained and released it per delete).
    /// The key is a copy made from the last one's bytes (copying the array on write went
    /// through the standard library's unspecialized path, about 300 instructions more).
    func lastKey(of index: IndexLayout, at position: Int, primaryKey: UInt64, ifEqual isEqual: (AttributeValue) -> Bool) -> [UInt8]? {
        guard position < unretained.count, let last = unretained[position] else { return nil }
        return last._withUnsafeGuaranteedRef { last in
            // The index by identity: its entity's layout holds it for the save, which this does not outlive.
            guard last.index == ObjectIdentifier(index), last.key.count >= 8, isEqual(last.value) else { return nil }
            var made = last.key.withUnsafeBytes { Array($0) }
            made.withUnsafeMutableBytes { $0.storeBytes(of: primaryKey.bigEndian, toByteOffset: $0.count - 8, as: UInt64.self) }
            return made
        }
    }

    /// `IndexKeyEncoding.entryKey(index:primaryKey:value:)` of a one-attribute `index`, at
    /// `position` in its entity's list, holding `value`: made, and kept as the last.
    mutating func entryKey(index: IndexLayout, at position: Int, primaryKey: UInt64, value: AttributeValue) -> [UInt8] {
        let made = IndexKeyEncoding.entryKey(index: index, primaryKey: primaryKey) { _ in value }
        while held.count <= position {
            held.append(nil)
            unretained.append(nil)
        }
        let last = Last(index: ObjectIdentifier(index), value: value, key: made)
        held[position] = last
        unretained[position] = Unmanaged.passUnretained(last)
        return made
    }
}
