/// Lists of objects by owner and relationship name: ``MemberCache``'s table. Open addressing
/// with linear probing, each owner placed by a multiplication of its address: a `Dictionary`
/// hashed every key with SipHash, about 240 instructions a lookup or an insert (two of each
/// per department of relationship-traverse), where a probe here is a few dozen.
///
/// Relies on: an owner is an object that stays alive while its identifier is in the table
/// (MemberCache's stamp guarantees it), so an equal identifier is the same owner.
package struct OwnerListTable {
    /// Each slot's owner's address (0: an empty slot), relationship and list, side by side: a
    /// probe reads only addresses until one matches. A power-of-two count, at most half used.
    private var owners: [UInt] = []
    private var relationships: [String] = []
    private var lists: [[StoredObject]] = []
    private var count = 0

    package init() {}

    /// The list kept for `owner`'s `relationship`, if any.
    package func list(of owner: ObjectIdentifier, _ relationship: String) -> [StoredObject]? {
        guard count > 0 else { return nil }
        let key = UInt(bitPattern: owner)
        let mask = owners.count - 1
        var index = Self.start(of: key, mask)
        while true {
            let held = owners[index]
            if held == 0 { return nil }
            if held == key && relationships[index] == relationship { return lists[index] }
            index = (index &+ 1) & mask
        }
    }

    /// Keeps `list` as `owner`'s `relationship`, replacing the one kept.
    package mutating func set(_ list: [StoredObject], of owner: ObjectIdentifier, _ relationship: String) {
        if 2 * (count + 1) > owners.count { grow(toHold: count + 1) }
        place(list, key: UInt(bitPattern: owner), relationship)
    }

    /// `set`'s placing, in a table with room.
    private mutating func place(_ list: [StoredObject], key: UInt, _ relationship: String) {
        let mask = owners.count - 1
        var index = Self.start(of: key, mask)
        while true {
            let held = owners[index]
            if held == 0 {
                owners[index] = key
                relationships[index] = relationship
                lists[index] = list
                count += 1
                return
            }
            if held == key && relationships[index] == relationship {
                lists[index] = list
                return
            }
            index = (index &+ 1) & mask
        }
    }

    /// Makes room for `additional` more lists at once (a prefetch keeps one per owner).
    package mutating func reserveCapacity(adding additional: Int) {
        if 2 * (count + additional) > owners.count { grow(toHold: count + additional) }
    }

    /// Drops every list.
    package mutating func removeAll() {
        owners = []
        relationships = []
        lists = []
        count = 0
    }

    /// Rebuilds the table with room for `needed` lists, at most half full.
    private mutating func grow(toHold needed: Int) {
        var size = max(16, owners.count)
        while size < 2 * needed { size *= 2 }
        let (oldOwners, oldRelationships, oldLists) = (owners, relationships, lists)
        owners = [UInt](repeating: 0, count: size)
        relationships = [String](repeating: "", count: size)
        lists = [[StoredObject]](repeating: [], count: size)
        count = 0
        for index in oldOwners.indices where oldOwners[index] != 0 {
            place(oldLists[index], key: oldOwners[index], oldRelationships[index])
        }
    }

    /// The slot a probe for `key` starts at: the address's bits mixed by a multiplication
    /// (Fibonacci hashing; the low four bits, zero in an aligned address, shifted out first).
    @inline(__always)
    private static func start(of key: UInt, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: ((key &>> 4) &* 0x9E37_79B9_7F4A_7C15) &>> 32) & mask
    }
}

