import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// What `ingest` says on standard error about its run: a progress line redrawn twice a second
/// while standard error is a terminal (never into a file or a pipe, where it would only be
/// noise in a log), and one summary line at the end, always.
///
/// ```
/// cairn ingest: 20000 lines, 20000 commits in 2.31 s (8658 commits/s)
/// ```
final class IngestReport: Sendable {
    private struct State {
        var lines = 0
        var stopped = false
    }

    private let started = ContinuousClock.now
    private let acknowledgements: AcknowledgementWriter
    /// Lines read, as the reader last published them; the progress thread waits on it.
    private let state = ConditionLock(State())
    private let progressStopped: DispatchGroup?

    /// Starts the progress line when standard error is a terminal; `acknowledgements` counts
    /// the commits.
    init(acknowledgements: AcknowledgementWriter) {
        self.acknowledgements = acknowledgements
        guard isatty(StandardStream.error.descriptor) == 1 else {
            progressStopped = nil
            return
        }
        let stopped = DispatchGroup()
        progressStopped = stopped
        stopped.enter()
        let state = self.state
        Thread { [self] in
            // Drawn at once, then twice a second: even a short run shows the line it redraws.
            repeat {
                StandardStream.error.write("\r" + figures(lines: state.value.lines) + "\u{1B}[K")
            } while !state.wait(until: { $0.stopped }, timeout: 0.5, then: { state, _ in state.stopped })
            // The summary takes the progress line's place.
            StandardStream.error.write("\r\u{1B}[K")
            stopped.leave()
        }.start()
    }

    /// The reader's count of lines so far (published now and then, not per line).
    func linesRead(_ lines: Int) {
        state.withLock { $0.lines = lines }
    }

    /// Stops the progress line and prints the summary; call once, after the last commit.
    func finish(lines: Int) {
        state.withLock {
            $0.lines = lines
            $0.stopped = true
        }
        state.broadcast()
        progressStopped?.wait()
        StandardStream.error.write(figures(lines: lines) + "\n")
    }

    /// `cairn ingest: L lines, C commits in S s (R commits/s)`.
    private func figures(lines: Int) -> String {
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let commits = acknowledgements.acknowledged
        let rate = seconds > 0 ? Int((Double(commits) / seconds).rounded()) : 0
        let shownSeconds = (seconds * 100).rounded() / 100
        return "cairn ingest: \(lines) line\(lines == 1 ? "" : "s"), \(commits) commit\(commits == 1 ? "" : "s") "
            + "in \(shownSeconds) s (\(rate) commits/s)"
    }
}
