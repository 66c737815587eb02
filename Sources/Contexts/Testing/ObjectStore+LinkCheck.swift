import Policies

// A hook for tests: the many-to-many part of the relationship graph checker. `package`: not public API.

extension ObjectStore {
    /// What is wrong with the stored links, read in `view`: every link entry must have its mirror
    /// in the inverse end's table, and both its objects must be stored records, except that an
    /// object deleted under its end's `noAction` rule leaves its links (both entries) naming it.
    /// An unordered end's entries are empty; an ordered end's hold a key or nothing, and its order
    /// table has exactly one entry per placed link, at that key. `keys`: the stored primary keys
    /// by entity.
    func linkProblems(in view: any StorageReadView, keys: [String: Set<UInt64>]) throws -> [String] {
        var problems: [String] = []
        for entity in schema.entities {
            for end in schema.manyToManyEnds(of: entity.name) {
                var entries = Set<[UInt8]>()
                var mirrors = Set<[UInt8]>()
                // For an ordered end: the order entry each placed link must have.
                var placed = Set<[UInt8]>()
                try view.forEach(in: end.linkTable, from: nil, to: nil, reverse: false) { key, value, _ in
                    entries.insert(Array(key))
                    if end.isOrdered && value.count == 8, let owner = StorageMapping.linkOwner(of: key),
                       let member = StorageMapping.linkMember(of: key), let orderKey = StorageMapping.orderKey(ofLinkValue: value) {
                        placed.insert(StorageMapping.linkOrderKey(owner: owner, orderKey: orderKey, member: member))
                    } else if !value.isEmpty {
                        problems.append("\(end.linkTable): an entry has a \(value.count)-byte value")
                    }
                    return true
                }
                if let orderTable = end.orderTable {
                    try view.forEach(in: orderTable, from: nil, to: nil, reverse: false) { key, _, _ in
                        if placed.remove(Array(key)) == nil {
                            problems.append("\(orderTable): an order entry (\(key.count) bytes) whose link does not hold its key")
                        }
                        return true
                    }
                    for _ in placed { problems.append("\(end.linkTable): a placed link has no order entry") }
                }
                try view.forEach(in: end.inverseLinkTable, from: nil, to: nil, reverse: false) { key, _, _ in
                    mirrors.insert(Array(key))
                    return true
                }
                let ownerMayDangle = end.deleteRule == .noAction
                let memberMayDangle = schema.manyToManyEnd(end.destination, end.inverse)?.deleteRule == .noAction
                for key in entries {
                    guard key.count == 16, let owner = StorageMapping.primaryKey(of: Array(key[0..<8])),
                          let member = StorageMapping.primaryKey(of: Array(key[8..<16])) else {
                        problems.append("\(end.linkTable): a \(key.count)-byte key")
                        continue
                    }
                    let link = "\(entity.name) p\(owner).\(end.name) -> \(end.destination) p\(member)"
                    if keys[entity.name]?.contains(owner) != true && !ownerMayDangle {
                        problems.append("\(link): the store does not hold the owner")
                    }
                    if keys[end.destination]?.contains(member) != true && !memberMayDangle {
                        problems.append("\(link): the store does not hold the member")
                    }
                    if !mirrors.contains(StorageMapping.linkKey(owner: member, member: owner)) {
                        problems.append("\(link): no mirror in \(end.inverseLinkTable)")
                    }
                }
            }
        }
        return problems
    }
}
