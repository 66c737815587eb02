import CairnTestSupport
import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// The child that takes reader slots and dies holding them: opens the store with
/// MAXREADERS slots, opens snapshots until they run out (at most COUNT), writes
/// `ready <snapshots>` to RESULTS and waits for its SIGKILL.
enum ReaderHolder {
    static let role = "hold-readers"

    static func main() -> Int32 {
        let results = LineWriter(path: ChildProcess.argument("RESULTS"))
        var options = Store.Options()
        options.maxReaders = Int(ChildProcess.argument("MAXREADERS")) ?? 8
        let count = Int(ChildProcess.argument("COUNT")) ?? 8
        do {
            let store = try Store(directory: ChildProcess.argument("STORE"), options: options)
            var snapshots: [Snapshot] = []
            while snapshots.count < count, let snapshot = try? store.snapshot() { snapshots.append(snapshot) }
            results.line("ready \(snapshots.count)")
            let parent = getppid()
            while getppid() == parent { usleep(100_000) }
            return 3  // orphaned: the test run died
        } catch {
            results.line("err \(error)")
            return 1
        }
    }
}
