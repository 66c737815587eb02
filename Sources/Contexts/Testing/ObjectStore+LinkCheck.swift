import Policies

// A hook for tests: the many-to-many part of the relationship graph checker. `package`: not public API.

extension ObjectStore {
    /// What is wrong with the stored links, read in `view`: every link entry must have its mirror
    /// in the inverse end's table, and both its objects must be stored records, except that an
    /// object deleted under its end's `noAction` rule leaves its links (both entries) naming it.
    /// `keys`: the stored primary keys by entity.
    func linkProblems(in view: any StorageReadView, keys: [String: Set<UInt64>]) throws -> [String] {
        var problems: [String] = []
        for entity in schema.entities {
            for end in schema.manyToManyEnds(of: entity.name) {
                var entries = Set<[UInt8]>()
                var mirrors = Set<[UInt8]>()
                try view.forEach(in: end.linkTable, from: nil, to: nil, reverse: false) { key, value, _ in
                    entries.insert(Array(key))
                    if !value.isEmpty { problems.append("\(end.linkTable): an entry has a \(value.count)-byte value") }
                    return true
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
