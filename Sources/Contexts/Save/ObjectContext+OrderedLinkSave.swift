// The halves of a save's link writes at ordered many-to-many ends. Such a half carries the link's
// order key at that end, as the link entry's value and as one entry of the end's order table
// keyed by it (ManyToManyEnd.swift), so moving or removing a link must delete the order entry at
// the key the store holds. Each commit attempt reads those keys from a fresh view: that is
// exact for the commit, because every change of an end's links (or of their keys) writes that
// end's record, whose version the commit checks. So if the versions hold, no link of the end
// changed since the view; if they do not, nothing is written and the next attempt reads again.

/// What each link entry at an ordered end must become in a save, by entry.
struct OrderedLinkWrites {
    /// One link entry: an end's table, the owner's and the member's primary keys.
    struct Half: Hashable {
        let table: String
        let owner: UInt64
        let member: UInt64
    }

    /// What a half becomes. An unlink wins over a link, a link over a place.
    enum Target {
        /// No link (an unlink): the order entry at the stored key goes.
        case absent
        /// A link, at this key; nil keeps the stored key, or goes last for a new link.
        case present(Int64?)
        /// The link at this key when the store holds it (a reorder of a link that stands).
        case placed(Int64)

        var rank: Int {
            switch self {
            case .absent: 2
            case .present: 1
            case .placed: 0
            }
        }
    }

    private(set) var targets: [Half: Target] = [:]
    /// The halves in the order they were first given (the batch is the same on every attempt).
    private(set) var halves: [Half] = []
    private(set) var ends: [String: ManyToManyEnd] = [:]

    var isEmpty: Bool { halves.isEmpty }

    mutating func unlink(owner: UInt64, _ end: ManyToManyEnd, member: UInt64) {
        set(.absent, owner: owner, end, member: member)
    }

    mutating func link(owner: UInt64, _ end: ManyToManyEnd, member: UInt64, key: Int64?) {
        set(.present(key), owner: owner, end, member: member)
    }

    mutating func place(owner: UInt64, _ end: ManyToManyEnd, member: UInt64, key: Int64?) {
        guard let key else { return }
        set(.placed(key), owner: owner, end, member: member)
    }

    private mutating func set(_ target: Target, owner: UInt64, _ end: ManyToManyEnd, member: UInt64) {
        let half = Half(table: end.linkTable, owner: owner, member: member)
        ends[end.linkTable] = end
        guard let existing = targets[half] else {
            targets[half] = target
            halves.append(half)
            return
        }
        switch (existing, target) {
        case (.present(let key?), .present(nil)): targets[half] = .present(key)  // a given key stays
        case (.present(nil), .placed(let key)), (.placed(let key), .present(nil)): targets[half] = .present(key)  // a new link placed
        default: if target.rank >= existing.rank { targets[half] = target }
        }
    }
}

extension ObjectContext {
    /// Appends the operations of `writes`: each half's link entry (its value the key) and order
    /// entry, against the keys the store holds now; a new link given no key goes after its end's
    /// last key (the store's, or one this commit gives).
    func appendOrderedLinkOperations(_ writes: OrderedLinkWrites, to batch: inout StorageBatch) throws {
        let view = try core.readView()
        defer { view.close() }
        // What the store holds of each half: whether it is linked, and at which key.
        var stored: [OrderedLinkWrites.Half: Int64?] = [:]
        let halves = writes.halves
        try view.visitValues(forKeys: halves.map { StorageKey(table: $0.table, key: StorageMapping.linkKey(owner: $0.owner, member: $0.member)) }) {
            position, value, _ in
            if let value { stored[halves[position]] = .some(StorageMapping.orderKey(ofLinkValue: value)) }
        }
        // Given keys first, so a link going last goes after them too.
        var last: [OrderedLinkWrites.Half: Int64] = [:]  // by (table, owner), member 0
        func noteLast(_ half: OrderedLinkWrites.Half, _ key: Int64) {
            let owner = OrderedLinkWrites.Half(table: half.table, owner: half.owner, member: 0)
            if key > (last[owner] ?? .min) { last[owner] = key }
        }
        var appends: [OrderedLinkWrites.Half] = []
        for half in halves {
            let end = writes.ends[half.table]!
            let storedKey = stored[half] ?? nil
            switch writes.targets[half]! {
            case .absent:
                if let storedKey { batch.deleteUnversioned(Self.orderEntry(half, storedKey), in: end.orderTable!) }
            case .present(let key?), .placed(let key):
                if case .placed = writes.targets[half]!, stored[half] == nil { continue }  // the link is gone: nothing to place
                noteLast(half, key)
                Self.move(half, from: storedKey, linked: stored[half] != nil, to: key, end, in: &batch)
            case .present(nil):
                if stored[half] == nil { appends.append(half) }  // a new link; one that stands keeps its key
            }
        }
        for half in appends {
            let end = writes.ends[half.table]!
            let owner = OrderedLinkWrites.Half(table: half.table, owner: half.owner, member: 0)
            let storedLast = try Self.lastOrderKey(of: half.owner, end, in: view)
            let key = OrderKeys.after([last[owner], storedLast].compactMap { $0 }.max())
            noteLast(half, key)
            Self.move(half, from: nil, linked: false, to: key, end, in: &batch)
        }
    }

    /// Puts `half` at `key` (it was `linked`, at `storedKey`): its link entry and its order entry.
    private static func move(
        _ half: OrderedLinkWrites.Half, from storedKey: Int64?, linked: Bool, to key: Int64, _ end: ManyToManyEnd,
        in batch: inout StorageBatch
    ) {
        guard !linked || storedKey != key else { return }
        if let storedKey { batch.deleteUnversioned(orderEntry(half, storedKey), in: end.orderTable!) }
        batch.putUnversioned(StorageMapping.orderKeyBytes(key), forKey: StorageMapping.linkKey(owner: half.owner, member: half.member),
                             in: end.linkTable)
        batch.putUnversioned([], forKey: orderEntry(half, key), in: end.orderTable!)
    }

    private static func orderEntry(_ half: OrderedLinkWrites.Half, _ key: Int64) -> [UInt8] {
        StorageMapping.linkOrderKey(owner: half.owner, orderKey: key, member: half.member)
    }

    /// The highest key of the owner `owner`'s ordered `end` in `view`: its order table's last entry.
    static func lastOrderKey(of owner: UInt64, _ end: ManyToManyEnd, in view: any StorageReadView) throws -> Int64? {
        let prefix = StorageMapping.key(for: owner)
        var found: Int64? = nil
        try view.forEach(in: end.orderTable!, from: prefix, to: IndexKeyEncoding.successor(ofPrefix: prefix), reverse: true) { entry, _, _ in
            found = StorageMapping.linkOrderEntry(of: entry)?.orderKey
            return false
        }
        return found
    }
}
