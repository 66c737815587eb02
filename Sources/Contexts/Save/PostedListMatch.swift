/// One of a save report's ID lists (updated, deleted), built by `finish` from its last entry to
/// its first, which is usually the will-save's list of the same kind, in the same order: while
/// each ID matches the posted list from its end, nothing is built and the matches are counted;
/// at the first that does not, the matched ones are copied in and the list is built.
///
/// A list that matched throughout is the posted array itself, not a copy: the did-save compares
/// the two to reuse the will-save's set (`PostedIDSets`), and an array compares equal to itself
/// at once, where comparing two copies read 10,000 IDs out of the cache. Pinned by
/// `SaveNotificationSetTests.reportListsMatchTheWillSaveOrTheirEntries`.
struct PostedListMatch {
    /// The will-save's lists a save's report may take.
    typealias Lists = (updated: [ObjectID], deleted: [ObjectID])

    private let posted: [ObjectID]
    private var matched = 0
    private var matching: Bool
    /// The IDs appended after matching stopped, the matched ones first: last entry first.
    private var built: [ObjectID] = []
    /// Room `built` takes when matching stops (or at once when it cannot start).
    private let capacity: Int

    /// `canMatch`: whether the list may be the posted one (false when the report's list is not
    /// empty, so it does not start with this save's IDs); `capacity`: the IDs expected.
    init(posted: [ObjectID], canMatch: Bool, capacity: Int) {
        self.posted = posted
        self.capacity = capacity
        matching = canMatch && !posted.isEmpty
        if !matching { built.reserveCapacity(capacity) }
    }

    /// Adds the ID of the entry before the last one added (entries go last to first).
    @inline(__always)
    mutating func append(_ id: ObjectID) {
        if matching {
            if matched < posted.count, id == posted[posted.count - 1 - matched] {
                matched += 1
                return
            }
            stopMatching()
        }
        built.append(id)
    }

    private mutating func stopMatching() {
        matching = false
        built.reserveCapacity(max(capacity, matched + 1))
        built.append(contentsOf: posted.suffix(matched).reversed())
    }

    /// The IDs in entry order, appended to `list`.
    consuming func add(to list: inout [ObjectID]) {
        if matching {
            if matched == posted.count {
                if list.isEmpty { list = posted } else { list.append(contentsOf: posted) }
                return
            }
            stopMatching()
        }
        built.reverse()
        if list.isEmpty { list = built } else { list.append(contentsOf: built) }
    }
}
