import Foundation
import Locking

/// `ingest`'s `ok KEY` lines, written by a thread of their own in as few write(2) calls as the
/// commits allow.
///
/// A writer hands its line over once its commit is durable and goes straight back to
/// committing; the thread writes everything handed over since its last write in one call. So
/// no line precedes its commit (what the crash tests check), no writer waits behind another's
/// output, and the commits one fdatasync releases together cost one write instead of one each
/// (and one wake-up of the process reading the lines, not one each). A line waits at most for
/// the write in progress: nothing is held back to fill a buffer, so a kill loses only lines of
/// commits that are durable but unacknowledged, which the protocol allows. A reader that stops
/// reading still stops the commits, as when each writer wrote its own line, only
/// `pendingLimit` bytes later: memory stays bounded.
final class AcknowledgementWriter: Sendable {
    /// The most bytes of lines waiting for the thread; a hand-over waits while there are more.
    static let pendingLimit = 1 << 20

    private struct State {
        /// Lines handed over and not yet written.
        var pending: [UInt8] = []
        /// Lines handed over since the start.
        var acknowledged = 0
        /// Whether the thread waits for lines (only then does a hand-over wake it).
        var idle = false
        var finished = false
    }

    /// Guards `State`; the thread waits on it, writers hand over under it.
    private let state = ConditionLock(State())
    private let stopped = DispatchGroup()

    /// Starts the thread, writing to `stream`.
    init(_ stream: StandardStream) {
        stopped.enter()
        let state = self.state, stopped = self.stopped
        Thread {
            var writing: [UInt8] = []
            while true {
                // Idle is set before waiting, under the lock a hand-over takes: a line handed
                // over after it either finds the thread not yet waiting (the wait sees the
                // line) or waiting (the hand-over wakes it), never a wake-up lost in between.
                state.withLock { $0.idle = $0.pending.isEmpty && !$0.finished }
                let (last, full) = state.wait(until: { !$0.pending.isEmpty || $0.finished }) { state, _ -> (Bool, Bool) in
                    state.idle = false
                    swap(&writing, &state.pending)
                    return (state.finished, writing.count >= Self.pendingLimit)
                }
                // Writers wait only while the lines are over the limit: then they were, at the swap.
                if full { state.broadcast() }
                writing.withUnsafeBytes { stream.write($0) }
                writing.removeAll(keepingCapacity: true)
                if last { break }
            }
            stopped.leave()
        }.start()
    }

    /// Hands over the acknowledgement of `key`, whose commit is durable.
    func acknowledge(_ key: [UInt8]) {
        let line = "ok " + KeyText.encode(key) + "\n"
        let wake = state.wait(until: { $0.pending.count < Self.pendingLimit }) { state, _ -> Bool in
            state.pending.append(contentsOf: line.utf8)
            state.acknowledged += 1
            defer { state.idle = false }
            return state.idle
        }
        if wake { state.broadcast() }
    }

    /// How many lines were handed over so far.
    var acknowledged: Int { state.withLock { $0.acknowledged } }

    /// Writes what is left and stops the thread; call once, after the last `acknowledge`.
    func finish() {
        state.withLock { $0.finished = true }
        state.broadcast()
        stopped.wait()
    }
}
