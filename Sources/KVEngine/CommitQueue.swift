/// The writers waiting to commit, under `StoreCore.commitQueue`'s lock.
package struct CommitQueue {
    package var waiters: [CommitWaiter] = []
    var closed = false
    /// How many commits the last group carried: more than one means writers overlap, and
    /// a new leader may wait briefly for the rest to queue (`Options.groupCommitWait`).
    package private(set) var lastGroupSize = 0
    /// About how many writers commit at once: the most seen in a recent group plus the
    /// writers who queued while it was being committed. A gathering leader stops as soon as
    /// this many commits are queued instead of waiting for arrivals to pause, since no more
    /// are coming.
    package private(set) var expectedGroupSize = 0
    /// Groups in a row that saw fewer writers than `expectedGroupSize`.
    private var smallerGroups = 0
    /// The recent durable groups' log appends with their fdatasync, averaged (s); 0 before
    /// the first.
    package private(set) var recentSyncSeconds = 0.0

    /// How many groups in a row with fewer writers make `expectedGroupSize` follow them
    /// down (when writers have gone away). One group left short by a late writer changes
    /// nothing.
    package static let groupSizeMemory = 16

    package init() {}

    /// Records how long a durable group's append and sync took.
    package mutating func noteSync(seconds: Double) {
        recentSyncSeconds = recentSyncSeconds == 0 ? seconds : recentSyncSeconds * 0.875 + seconds * 0.125
    }

    /// How long a writer queuing now yields before it sleeps: `limit`, or nothing while the
    /// recent syncs averaged more than half of it.
    package func spinBudget(limit: Double) -> Double {
        recentSyncSeconds <= limit / 2 ? limit : 0
    }

    /// Records a group of `size` commits just taken off the queue. The writers still queued
    /// arrived while it was committed, so they count as concurrent with it: a writer that
    /// keeps missing its group by a hair still counts, and the gather keeps waiting for it.
    package mutating func noteGroup(of size: Int) {
        lastGroupSize = size
        let writers = size + waiters.count
        if writers >= expectedGroupSize {
            expectedGroupSize = writers
            smallerGroups = 0
        } else {
            smallerGroups += 1
            if smallerGroups >= CommitQueue.groupSizeMemory {
                expectedGroupSize = writers
                smallerGroups = 0
            }
        }
    }
}
