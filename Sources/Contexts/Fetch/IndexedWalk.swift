import Policies

/// One indexed fetch's walk of a read view: the plan's index entries, the records they lead to,
/// tested against the predicate (ObjectContext+IndexedFetch says what the walk returns).
///
/// All the walk's mutable state is here, and the walk runs in `mutating` methods whose closures
/// capture `self` inout: local variables captured by the nested functions and closures of one
/// function were each checked for exclusive access at run time (`swift_beginAccess`, about
/// 12,000 instructions of a 215,000-instruction `fetch-sorted-limit` request).
struct IndexedWalk {
    let context: ObjectContext
    let layout: EntityLayout
    let predicate: ResolvedPredicate?
    /// Whether the context holds objects that may answer for entries (else none is looked up).
    let holdsObjects: Bool
    /// The candidates found.
    var found: [ObjectContext.Candidate] = []
    /// `found` is in the request's sort order already (a walk in sort order whose entries'
    /// bytes prove it: ``EntryOrder``).
    private(set) var inSortOrder = false
    /// Stored objects that matched.
    private var matched = 0
    /// The primary keys of records gathered and not yet read.
    private var gathered: [UInt64] = []

    init(context: ObjectContext, layout: EntityLayout, predicate: ResolvedPredicate?, holdsObjects: Bool) {
        self.context = context
        self.layout = layout
        self.predicate = predicate
        self.holdsObjects = holdsObjects
    }

    /// Reads the plan's entries and their records from `view` into `found`.
    mutating func run(_ plan: IndexPlan, request: FetchRequest, in view: any StorageReadView) throws {
        if let order = plan.order, let limit = request.fetchLimit {
            var entryOrder = EntryOrder(sortValues: order.sortValues, indexValues: plan.index.attributeNames.count,
                                        ascending: order.ascending, sortDescriptors: request.sortDescriptors.count)
            try walkInOrder(plan, order: order, needed: max(request.fetchOffset, 0) + max(limit, 0), noting: &entryOrder, in: view)
            inSortOrder = entryOrder.holds
        } else {
            for range in plan.ranges {
                try view.forEach(
                    in: plan.index.tableName, from: range.lower.isEmpty ? nil : range.lower, to: range.upper, reverse: false
                ) { entry, _, _ in
                    _ = gather(entry)
                    return true
                }
            }
            try readGathered(view)
        }
    }

    /// In sort order, until `needed` stored objects match and the entries after them sort
    /// strictly later (the same first sort value is read to its end).
    private mutating func walkInOrder(
        _ plan: IndexPlan, order: (ascending: Bool, sortValues: Int), needed: Int, noting entryOrder: inout EntryOrder,
        in view: any StorageReadView
    ) throws {
        var range = plan.ranges.first
        var boundary: [UInt8]? = nil
        // A full chunk's last entry, where the next walk begins: copied only when the chunk is
        // full (a copy of each entry into it cost about 6,000 instructions a sorted page of 20).
        var last: [UInt8] = []
        // An exact plan's entries all match (registered objects aside, passed over): its first
        // chunk is the page itself; a predicate that rejects some gets slack.
        var chunk = plan.exact ? max(needed, 1) : max(needed + 8, 32)
        // The entry after a full chunk, looked at and not gathered: when it sorts strictly after
        // the page (or there is none), no second walk is needed to find that out. (A sorted page
        // of unique names walked twice, the second time for that one entry.)
        var next: [UInt8] = []
        gathered.reserveCapacity(chunk)
        while let current = range {
            var seen = 0
            var passedBoundary = false
            var hasNext = false
            try view.forEach(
                in: plan.index.tableName, from: current.lower.isEmpty ? nil : current.lower, to: current.upper,
                reverse: !order.ascending
            ) { entry, _, _ in
                if let boundary, !entry.starts(with: boundary) {
                    passedBoundary = true
                    return false
                }
                if seen == chunk {
                    hasNext = true
                    Self.copy(entry, into: &next)
                    return false
                }
                seen += 1
                if seen == chunk { Self.copy(entry, into: &last) }
                if gather(entry) { entryOrder.note(entry) }
                return true
            }
            try readGathered(view)
            // The next walk would begin at `next`: nothing after the range's end.
            guard !passedBoundary, seen == chunk, hasNext else { break }
            if boundary == nil && matched >= needed {
                boundary = last.withUnsafeBytes { Array(last.prefix(IndexKeyEncoding.length(ofValues: order.sortValues, in: $0))) }
            }
            if let boundary, !next.starts(with: boundary) { break }  // as the next walk would find
            range = order.ascending
                ? IndexPlan.KeyRange(lower: last + [0], upper: current.upper)
                : IndexPlan.KeyRange(lower: current.lower, upper: last)
            chunk *= 2
        }
    }

    /// Replaces `bytes` with `entry`'s, in one copy of typed bytes (appended as raw bytes, the
    /// generic append cost about 300 instructions an entry).
    private static func copy(_ entry: UnsafeRawBufferPointer, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        entry.withMemoryRebound(to: UInt8.self) { bytes.append(contentsOf: $0) }
    }

    /// Gathers an entry's record key, unless a registered object answers for it; whether it did.
    private mutating func gather(_ entry: UnsafeRawBufferPointer) -> Bool {
        guard let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: entry) else { return false }
        if holdsObjects, let object = context.registry[ObjectID(entityName: layout.name, primaryKey: primaryKey)],
           !object.isFaultStorage || object.deletedFlag || object.insertedFlag {
            return false  // answered in memory, or left out as the scan leaves it
        }
        gathered.append(primaryKey)
        return true
    }

    /// Reads the records of the keys gathered, tests them, and empties the list.
    private mutating func readGathered(_ view: any StorageReadView) throws {
        guard !gathered.isEmpty else { return }
        found.reserveCapacity(found.count + gathered.count)
        try view.visitRecords(in: layout.tableName, primaryKeys: gathered) { position, value, version in
            guard let value else { return }
            try read(value, version: version, primaryKey: gathered[position])
        }
        gathered.removeAll(keepingCapacity: true)
    }

    /// Decodes one record, loads the fault that stands for it if any, and keeps it if it matches.
    private mutating func read(_ value: UnsafeRawBufferPointer, version: UInt64, primaryKey: UInt64) throws(ContextError) {
        let id = ObjectID(entityName: layout.name, primaryKey: primaryKey)
        let values = try ValueCodec.decode(value, layout: layout, of: id)
        // Tested, then made in place in the list: a candidate made first was copied into it.
        if holdsObjects, let fault = context.registry[id] {
            context.load(BaseState(id: id, values: values, version: version), into: fault)
            guard predicate?.evaluate(fault.current, id: id, layout: layout) ?? true else { return }
            found.append(ObjectContext.Candidate(source: .registered(fault), values: fault.current, baseOrder: 0))
        } else {
            guard predicate?.evaluate(values, id: id, layout: layout) ?? true else { return }
            found.append(ObjectContext.Candidate(source: .stored(id, version: version), values: values, baseOrder: 0))
        }
        matched += 1
    }
}
