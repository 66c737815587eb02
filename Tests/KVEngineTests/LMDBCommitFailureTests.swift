import CairnTestSupport
import Testing
@testable import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// Every LMDB commit of the engine can fail (a full disk, an I/O error), and LMDB has freed
/// the transaction when `mdb_txn_commit` returns the failure. Each must end in a typed error,
/// never a double free: `LMDBFaults` fails the Nth commit the way LMDB does (freeing the
/// transaction), in a child process, so that a double free fails the test instead of
/// killing the run.
@Suite struct LMDBCommitFailureTests {
    /// Opening a new store commits twice (the meta table and format, then `log-started`);
    /// reopening one with a log to replay commits the replay; an open store's applier
    /// commits. Each commit, failed, is a typed error; the store then opens and holds every
    /// commit acknowledged before.
    @Test(arguments: [(1, EIO), (2, ENOSPC), (3, EIO), (4, EIO), (5, ENOSPC), (6, EIO), (1, ENOSPC), (5, EIO)])
    func aFailedLMDBCommitIsATypedErrorNeverADoubleFree(occurrence: Int, code: Int32) async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [parent = scratch.path as String, occurrence, code] in
            let directory = try TemporaryDirectory(in: parent)
            let faults = LMDBFaults()
            faults.failCommit(occurrence, code: code)
            // The applier commits only when flushed: the count of commits is fixed.
            var options = lazyOptions()
            options.lmdbFaults = faults
            var acknowledged: [String] = []
            var failure: KVError? = nil
            // Open (commits 1 and 2), commit and flush (the applier: 3), crash, reopen (the
            // tables: 4; the replay of the log the crash left: 5), commit and flush (6).
            do {
                let store = try Store(directory: directory.path, options: options)
                try store.put("a", "1")
                acknowledged.append("a")
                try store.flush()
                try store.put("b", "2")
                acknowledged.append("b")
                store.simulateCrash()
                let reopened = try Store(directory: directory.path, options: options)
                try reopened.put("c", "3")
                acknowledged.append("c")
                try reopened.flush()
                reopened.close()
            } catch let error as KVError {
                failure = error
            } catch {
                print("not a KVError: \(error)")
                exit(1)
            }
            guard faults.commits >= occurrence else {
                print("commit \(occurrence) was never reached: \(faults.commits) commits")
                exit(1)
            }
            guard let failure else {
                print("commit \(occurrence) failed with \(code), but nothing threw")
                exit(1)
            }
            let typed: Bool
            switch failure {
            case .lmdb(let got, let operation): typed = got == code && operation == "mdb_txn_commit"
            case .io(let got, let operation, _): typed = got == code && operation == "mdb_txn_commit"
            case .poisoned(.lmdb(let got, _)), .poisoned(.io(let got, _, _)): typed = got == code
            default: typed = false
            }
            guard typed else {
                print("commit \(occurrence): expected the injected error \(code), got \(failure)")
                exit(1)
            }
            // Without faults the store opens and holds every acknowledged commit.
            let store = try Store(directory: directory.path)
            for key in acknowledged where try store.string(key) == nil {
                print("\(key) was acknowledged and is lost")
                exit(1)
            }
            store.close()
            exit(0)
        }
        if let result, result.exitStatus != .exitCode(0) {
            Issue.record("child: \(String(decoding: result.standardOutputContent, as: UTF8.self))")
        }
    }
}
