import Foundation
import Policies

/// A prefetch of a to-many's members for many owners, read in one pass instead of one fetch of
/// `inverse IN (every owner)` (ObjectContext+Members): no predicate to test, no candidates to
/// rank, each member's reference its owner's string, shared, not a copy (``OwnerReferences``).
///
/// The pass is one of two:
/// - a walk of the owners' ranges of the inverse to-one's index, then their records by key:
///   each owner's entries are in primary-key order, so its list comes out in the order its own
///   fetch returns it;
/// - when the owners are most of their entity's objects (so most members are theirs), a scan
///   of the members' table in primary-key order, each record's owner read from its reference:
///   no index entry and no search per member.
///
/// It answers only when nothing in memory can change that answer: a root context holding no
/// object of the members' entity (so no in-memory values, pending insert or delete, or fault to
/// load), an unordered to-many, an index on exactly the inverse, distinct owners whose
/// references the index keeps whole (for a walk). Otherwise `make` or `run` is nil and the
/// fetch answers.
struct MemberPrefetch {
    private let context: ObjectContext
    private let members: EntityDescription
    private let index: IndexLayout
    private let owners: [StoredObject]
    private let references: OwnerReferences
    /// Where the members' records hold their to-one.
    private let inversePosition: Int

    /// The prefetch of `owners`' members of `relationship`, or nil when the fetch must answer.
    static func make(
        _ context: ObjectContext, owners: [StoredObject], _ relationship: RelationshipLayout, members: EntityDescription
    ) -> MemberPrefetch? {
        let inverse = relationship.description.inverse
        guard context.parent == nil, !relationship.description.isOrdered,
              let index = members.layout.indexes.first(where: { $0.attributeNames == [inverse] }),
              let inversePosition = members.layout.relationship(named: inverse)?.storagePosition,
              let references = OwnerReferences(owners: owners)
        else { return nil }
        // Any registered member (fault, loaded, inserted or deleted) is the fetch's to handle.
        let layout = members.layout
        guard !context.objectsInOrder.contains(where: { $0.entity.layout === layout }) else { return nil }
        return MemberPrefetch(context: context, members: members, index: index, owners: owners, references: references,
                              inversePosition: inversePosition)
    }

    /// What a prefetch read.
    struct Read {
        /// Every member, as lists whose concatenation is the fetch's order.
        let members: [[StoredObject]]
        /// Each owner's members, by owner position.
        let lists: [[StoredObject]]
        /// The version read at.
        let version: UInt64
        /// Whether each member's to-one is known to hold its owner's reference (its ID's URI)
        /// byte for byte: `value(at: inverse, equals: .string(uri))` answers true for each.
        let namesOwnersExactly: Bool
    }

    /// Reads every owner's members and registers them; nil (nothing read or registered) when
    /// the fetch must answer after all.
    func run() throws(ContextError) -> Read? {
        var batches: [[StoredObject]] = []
        var lists = [[StoredObject]](repeating: [], count: owners.count)
        var version: UInt64 = 0
        var exactly = false
        let answered = try context.withReadView { (view) throws(ContextError) -> Bool in
            version = view.version
            do {
                if let plan = try scans(view),
                   let scanned = try scan(view, plan, lists: &lists) {
                    (batches, exactly) = scanned
                    return true
                }
                // A scan that gave up left its lists part made.
                lists = [[StoredObject]](repeating: [], count: owners.count)
                // The owners' key prefixes in the index, made only for a walk.
                var prefixes: [[UInt8]] = []
                prefixes.reserveCapacity(owners.count)
                for reference in references.references {
                    var prefix: [UInt8] = []
                    // A reference cut at the cap shares its entries with others: the fetch tests them.
                    guard IndexKeyEncoding.append(.string(reference), to: &prefix, cap: index.contentCap) else { return false }
                    prefixes.append(prefix)
                }
                // The walk compares no reference.
                batches = try walk(view, prefixes: prefixes, lists: &lists)
                return true
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        guard answered else { return nil }
        // Registered together, as a fetch's objects are: a read that fails registers nothing.
        context.register(madeBatches: batches)
        return Read(members: batches, lists: lists, version: version, namesOwnersExactly: exactly)
    }

    /// How a scan goes: the members' keys it reads, how many members an owner is expected to
    /// have (its list is made at that size), and whether it gives up for the walk when the
    /// owner's members turn out to be few among the records it reads.
    private struct ScanPlan {
        var first: UInt64 = 0
        var last: UInt64 = .max
        let expected: Int
        var givesUp = false
    }

    /// The scan's plan when it reads less than the walk: the owners are at least half of their
    /// entity's records, so (members spread evenly) at least half the members' records are theirs.
    ///
    /// A single owner (a delete rule's read) is scanned only between its first and last
    /// members' keys (its first and last entries in the index), and the scan gives up when
    /// its members are fewer than a third of the records read (see `GiveUp`): one owner of two
    /// departments may hold 3 people of 100,000, which the scan would all decode. (A count of
    /// the owner's entries, which would decide exactly, costs a fifth of a cascade's read.)
    private func scans(_ view: any StorageReadView) throws -> ScanPlan? {
        guard let ownerTable = owners.first?.entity.layout.tableName else { return nil }
        let ownerCount = max(try view.estimatedCount(in: ownerTable), 1)
        guard 2 * owners.count >= ownerCount else { return nil }
        let memberCount = try view.estimatedCount(in: members.layout.tableName)
        let perOwner = max(1, (memberCount + ownerCount - 1) / ownerCount)
        guard owners.count == 1 else { return ScanPlan(expected: perOwner) }
        var prefix: [UInt8] = []
        guard IndexKeyEncoding.append(.string(references.references[0]), to: &prefix, cap: index.contentCap) else { return nil }
        let upper = IndexKeyEncoding.successor(ofPrefix: prefix)
        // The keys of the first and last entries; an entry without one leaves its bound open.
        var first: UInt64? = nil, last: UInt64? = nil
        for reverse in [false, true] {
            try view.forEach(in: index.tableName, from: prefix, to: upper, reverse: reverse) { entry, _, _ in
                if reverse { last = IndexKeyEncoding.primaryKey(ofEntry: entry) ?? .max } else { first = IndexKeyEncoding.primaryKey(ofEntry: entry) ?? 0 }
                return false
            }
        }
        // No entries: no records read.
        guard let first, let last else { return ScanPlan(first: 1, last: 0, expected: 1) }
        guard first <= last else { return ScanPlan(expected: perOwner, givesUp: true) }
        let span = last - first < UInt64(Int.max) ? Int(last - first) + 1 : Int.max
        return ScanPlan(first: first, last: last, expected: max(1, min(span, perOwner)), givesUp: true)
    }

    /// When a single owner's scan gives up: more than `slack` records read beyond twice its
    /// members found. Its members are then under a third of the records (where the walk costs
    /// about as much as the scan), and what the scan read before is at most three times its
    /// members plus the slack, which the walk reads again.
    private struct GiveUp {
        static let slack = 64
        /// Whether this scan may give up at all (a single owner's).
        let applies: Bool
        private var passed = 0, found = 0
        private(set) var gaveUp = false

        init(applies: Bool) { self.applies = applies }

        mutating func foundMember() { found &+= 1 }

        /// Counts a record that is no owner's; whether the scan goes on.
        mutating func passOver() -> Bool {
            guard applies else { return true }
            passed &+= 1
            gaveUp = passed > 2 * found + GiveUp.slack
            return !gaveUp
        }
    }

    /// The scan: every record of the members' table, in primary-key order, kept when its
    /// reference names an owner; the members in that order, as lists (see `run`).
    ///
    /// Members are appended to their owner's list (made at the `expected` size), and when each
    /// owner's come together (as they do when an owner's members were saved together, or the
    /// keys follow the owners) the lists in the order met are the members in key order: then
    /// they are what is registered, with no list of all the members made (its retain and
    /// release of each). Otherwise that list is made, sorted by key, as the scan met them.
    /// `exactly`: each member's reference was its owner's bytes (see `Read`). Nil when it gave
    /// up (`plan.givesUp`): nothing registered, the lists part made.
    private func scan(_ view: any StorageReadView, _ plan: ScanPlan, lists: inout [[StoredObject]]) throws
        -> (members: [[StoredObject]], exactly: Bool)? {
        let layout = members.layout
        var arena = RecordArena(layout: layout, link: context.link, sharing: references.sharing(at: inversePosition))
        var spares = context.core.spareObjects.take()
        defer { context.core.spareObjects.giveBack(spares) }
        // The owners in the order their members were met, and whether each owner's came together.
        var runs: [Int] = []
        var met = [Bool](repeating: false, count: owners.count)
        var lastOwner = -1
        var together = true
        // A decoded member's reference equals its owner's as strings do, as its comparison does.
        var exactly = true
        // Records read that are no owner's, and members found, while the scan may give up.
        var giveUp = GiveUp(applies: plan.givesUp)
        let expected = plan.expected, last = plan.last
        guard plan.first <= last else { return ([], true) }
        // The last key is tested here: a bound given to the view costs a key comparison per record read.
        let lower = plan.first == 0 ? nil : StorageMapping.key(for: plan.first)
        let references = references, inversePosition = inversePosition
        let offsets = UnsafeMutablePointer<UInt16>.allocate(capacity: max(layout.count, 1))
        defer { offsets.deallocate() }
        // Through the buffer: each append checked the array of lists for uniqueness first.
        try lists.withUnsafeMutableBufferPointer { lists in
            try view.forEach(in: layout.tableName, from: lower, to: nil, reverse: false) { key, value, version in
                guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
                guard primaryKey <= last else { return false }
                let owner: Int
                var values: ObjectValues? = nil
                var reference: Range<Int>? = nil
                if ValueCodec.validate(value, layout: layout, referencePosition: inversePosition, reference: &reference, valueOffsets: offsets) {
                    // The usual record: its owner found from the reference's bytes, its values left undecoded.
                    guard let reference, let match = references.owner(ofBytes: UnsafeRawBufferPointer(rebasing: value[reference])) else {
                        // No owner's: passed, unless the scan gives up (see `GiveUp`).
                        return giveUp.passOver()
                    }
                    owner = match.owner
                    if !match.exact { exactly = false }
                } else {
                    // Anything else is decoded now, as a fetch decodes it (extras, or the error).
                    let decoded = try decode(value, primaryKey: primaryKey)
                    guard case .string(let text) = decoded[inversePosition], let match = references.owner(of: text) else {
                        return giveUp.passOver()
                    }
                    owner = match
                    values = decoded
                }
                giveUp.foundMember()
                if owner != lastOwner {
                    if met[owner] {
                        together = false
                    } else {
                        met[owner] = true
                        runs.append(owner)
                        lists[owner].reserveCapacity(expected)
                    }
                    lastOwner = owner
                }
                // Made into the list: a local holding the object cost a retain and a release.
                if let values {
                    lists[owner].append(make(primaryKey, values, version))
                } else {
                    lists[owner].append(context.attachedRead(primaryKey, arena.append(value, offsets: offsets), version, &spares))
                }
                return true
            }
        }
        if giveUp.gaveUp { return nil }
        context.readOrigins.append(contentsOf: arena.kept)
        if together { return (runs.map { lists[$0] }, exactly) }
        var made = lists.flatMap { $0 }
        made.sort { ($0.storedID.primaryKey ?? 0) < ($1.storedID.primaryKey ?? 0) }
        return ([made], exactly)
    }

    /// The walk: the owners' index ranges, then their records by key.
    /// The members come owner after owner, in `order`: the lists in that order are the members.
    private func walk(_ view: any StorageReadView, prefixes: [[UInt8]], lists: inout [[StoredObject]]) throws -> [[StoredObject]] {
        var order = Array(prefixes.indices)
        // Through the buffers: the arrays' subscripts retained and released each prefix per comparison.
        prefixes.withUnsafeBufferPointer { prefixes in
            order.sort { left, right in
                prefixes[left].withUnsafeBytes { left in prefixes[right].withUnsafeBytes { Self.placement(of: left, $0) < 0 } }
            }
        }
        // Every owner's entries first (their primary keys, and where each owner's end), then
        // the records in one visit.
        let (keys, ends) = try entries(in: view, prefixes: prefixes, order: order)
        // Each list made at its size: grown by appends, ten members reallocated it four times.
        for (walked, owner) in order.enumerated() {
            lists[owner].reserveCapacity(ends[walked] - (walked == 0 ? 0 : ends[walked - 1]))
        }
        let layout = members.layout
        var arena = RecordArena(layout: layout, link: context.link, sharing: references.sharing(at: inversePosition))
        var spares = context.core.spareObjects.take()
        defer { context.core.spareObjects.giveBack(spares) }
        var walked = 0
        let offsets = UnsafeMutablePointer<UInt16>.allocate(capacity: max(layout.count, 1))
        defer { offsets.deallocate() }
        try view.visitRecords(in: layout.tableName, primaryKeys: keys) { position, value, version in
            while position >= ends[walked] { walked += 1 }
            guard let value else { return }  // an entry whose record is gone: as the fetch, skipped
            var reference: Range<Int>? = nil
            if ValueCodec.validate(value, layout: layout, reference: &reference, valueOffsets: offsets) {
                lists[order[walked]].append(context.attachedRead(keys[position], arena.append(value, offsets: offsets), version, &spares))
            } else {
                lists[order[walked]].append(make(keys[position], try decode(value, primaryKey: keys[position]), version))
            }
        }
        context.readOrigins.append(contentsOf: arena.kept)
        return order.map { lists[$0] }
    }

    /// A member's values from its record, decoded now.
    private func decode(_ value: UnsafeRawBufferPointer, primaryKey: UInt64) throws(ContextError) -> ObjectValues {
        try ValueCodec.decode(value, layout: members.layout, of: ObjectID(entityName: members.layout.name, primaryKey: primaryKey))
    }

    /// A member read with `values` at record `version`, attached to the context (registered later).
    private func make(_ primaryKey: UInt64, _ values: ObjectValues, _ version: UInt64) -> StoredObject {
        let object = StoredObject(origin: context.origin(for: members.layout),
                                  id: ObjectID(entityName: members.layout.name, primaryKey: primaryKey), values: values, version: version)
        context.attach(object)
        return object
    }

    /// The primary keys of the owners' entries, owner after owner in `order`, and where each
    /// owner's end (one per owner, in `order`).
    ///
    /// The owners' ranges are walked in key order by one cursor walk, which passes over the few
    /// entries of other owners between them and starts again at the next owner's range only
    /// after many: a walk for each owner's ten members cost about 1,000 instructions a member.
    private func entries(in view: any StorageReadView, prefixes: [[UInt8]], order: [Int]) throws -> (keys: [UInt64], ends: [Int]) {
        var keys: [UInt64] = [], ends: [Int] = []
        ends.reserveCapacity(order.count)
        guard let last = order.last else { return (keys, ends) }
        let upper = IndexKeyEncoding.successor(ofPrefix: prefixes[last])
        var next = 0  // the position in `order` of the owner whose range is next or being walked
        while next < order.count {
            var skipped = 0
            var restart = false
            try view.forEach(in: index.tableName, from: prefixes[order[next]], to: upper, reverse: false) { entry, _, _ in
                while true {
                    let placement = Self.placement(of: entry, prefixes[order[next]])
                    if placement == 0 {
                        if let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: entry) { keys.append(primaryKey) }
                        return true
                    }
                    if placement < 0 {
                        // Another owner's entry, before this owner's range.
                        skipped += 1
                        restart = skipped > Self.passedOverLimit
                        return !restart
                    }
                    ends.append(keys.count)
                    next += 1
                    skipped = 0
                    if next == order.count { return false }
                }
            }
            // The walk reached the index's end: the owners left have no entries.
            if !restart {
                while next < order.count {
                    ends.append(keys.count)
                    next += 1
                }
            }
        }
        return (keys, ends)
    }

    /// Entries of other owners passed over before the walk starts again at the next owner's
    /// range: a step to the next entry costs a few hundred instructions, a new walk about ten times that.
    private static let passedOverLimit = 8

    /// 0 when `entry` starts with `prefix`; below 0 when it sorts before the prefix's range,
    /// above 0 after it.
    private static func placement(of entry: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Int {
        prefix.withUnsafeBytes { placement(of: entry, $0) }
    }

    private static func placement(of entry: UnsafeRawBufferPointer, _ prefix: UnsafeRawBufferPointer) -> Int {
        let common = min(entry.count, prefix.count)
        let order = common == 0 ? 0 : Int(memcmp(entry.baseAddress!, prefix.baseAddress!, common))
        if order != 0 { return order }
        return entry.count < prefix.count ? -1 : 0
    }
}
