import Foundation
import Testing
import KVEngine

/// `SnapshotLock` guards every read of a snapshot and the engine's ends of it: threads that
/// take it at once must each see the others' changes whole.
@Suite struct SnapshotLockTests {
    @Test func threadsTakingItAtOnceLoseNoUpdate() {
        let lock = SnapshotLock(0)
        let threads = 4, increments = 2_000
        let done = DispatchGroup()
        for _ in 0..<threads {
            DispatchQueue.global().async(group: done) {
                for _ in 0..<increments {
                    // A read, now and then a sleep, and a write: without mutual exclusion, the
                    // other threads' updates made during the sleep are lost.
                    lock.withLock({ value in
                        let seen = value
                        if seen % 16 == 0 { usleep(10) }
                        value = seen + 1
                    }, reentered: { fatalError("re-entered") })
                }
            }
        }
        done.wait()
        #expect(lock.withLock({ $0 }, reentered: { fatalError("re-entered") }) == threads * increments)
    }

    @Test func aWaiterTakesItOnceTheHolderLetsGo() {
        let lock = SnapshotLock([Int]())
        let holding = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        DispatchQueue.global().async(group: done) {
            lock.withLock({ log in
                holding.signal()
                usleep(100_000)  // the waiter polls meanwhile
                log.append(1)
            }, reentered: { fatalError("re-entered") })
        }
        holding.wait()
        lock.withLock({ log in log.append(2) }, reentered: { fatalError("re-entered") })
        done.wait()
        #expect(lock.withLock({ $0 }, reentered: { fatalError("re-entered") }) == [1, 2])
    }
}
