import CairnTestSupport
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Power loss, simulated by a file system that keeps only synced bytes (or a torn prefix,
/// or garbage after it) of the log. Each case runs concurrent writers, freezes the disk at
/// a random I/O step, reboots from what survived and checks the oracle:
/// - every commit acknowledged with `.full` durability is present, whole;
/// - the surviving commits are a prefix of the commit order (no hole);
/// - no batch is partly visible;
/// - `check` finds the store sound.
/// Some cases also lose power again during recovery and recover a second time.
///
/// Replay one case with CAIRN_SEED=<seed printed on failure>; scale with CAIRN_POWER_CASES.
@Suite struct PowerLossTests {
    struct Acknowledged: Sendable {
        var version: UInt64
        var keys: [String]
        var value: String
        var durable: Bool
    }

    @Test func everyAcknowledgedCommitSurvivesPowerLoss() throws {
        let baseSeed = SeededRandom.seed()
        let cases = Int(getenvString("CAIRN_POWER_CASES") ?? "") ?? 240
        print("power loss: \(cases) cases, base seed \(baseSeed) (replay one with CAIRN_SEED=<case seed> CAIRN_POWER_CASES=1)")
        var modes: [FaultFileSystem.PowerLoss: Int] = [:]
        var recoveryCrashes = 0, acknowledgedTotal = 0
        for index in 0..<cases {
            let seed = baseSeed &+ UInt64(index)
            let outcome = try runCase(seed: seed)
            modes[outcome.mode, default: 0] += 1
            if outcome.crashedDuringRecovery { recoveryCrashes += 1 }
            acknowledgedTotal += outcome.acknowledged
        }
        print("power loss: modes \(modes), crashes during recovery \(recoveryCrashes), acknowledged commits checked \(acknowledgedTotal)")
        #expect(acknowledgedTotal > 0)
    }

    func runCase(seed: UInt64) throws -> (mode: FaultFileSystem.PowerLoss, crashedDuringRecovery: Bool, acknowledged: Int) {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory(prefix: "cairn-power")
        defer { directory.remove() }
        var options = busyOptions()
        options.segmentSize = Int(2048 + random.next(upTo: 8192))
        options.durability = random.next(upTo: 4) == 0 ? .normal : .full
        let fileSystem = FaultFileSystem()
        let store = try Store(directory: directory.path, options: options, fileSystem: fileSystem)
        fileSystem.freeze(afterOperations: Int(10 + random.next(upTo: 300)))

        let acknowledged = ConditionLock<[Acknowledged]>([])
        let writers = Int(1 + random.next(upTo: 4))
        let writerSeed = random.next()
        DispatchApply.run(writers) { writer in
            var random = SeededRandom(seed: writerSeed &+ UInt64(writer))
            for index in 0..<60 {
                let keys = (0..<Int(1 + random.next(upTo: 3))).map { "w\(writer)-\(index)-\($0)" }
                let value = "value-\(writer)-\(index)-" + String(repeating: "x", count: Int(random.next(upTo: 200)))
                var batch = WriteBatch()
                for key in keys { batch.put(value, forKey: key, if: .absent) }
                let durability: Durability = random.next(upTo: 3) == 0 ? .normal : .full
                if random.next(upTo: 40) == 0 { _ = try? store.checkpoint() }
                guard let info = try? store.commit(batch, durability: durability) else { return }
                acknowledged.withLock {
                    $0.append(Acknowledged(version: info.version, keys: keys, value: value, durable: durability == .full))
                }
            }
        }
        fileSystem.freezeNow()
        store.simulateCrash()

        let mode = FaultFileSystem.PowerLoss.allCases[Int(random.next(upTo: 3))]
        var survivor = fileSystem.afterPowerLoss(mode, seed: random.next())
        var crashedDuringRecovery = false
        if random.next(upTo: 4) == 0 {
            // Lose power again in the middle of recovery, then recover from that.
            survivor.freeze(afterOperations: Int(random.next(upTo: 6)))
            if let interrupted = try? Store(directory: directory.path, options: options, fileSystem: survivor) {
                interrupted.simulateCrash()
            }
            crashedDuringRecovery = true
            survivor = survivor.afterPowerLoss(FaultFileSystem.PowerLoss.allCases[Int(random.next(upTo: 3))], seed: random.next())
        }
        let reopened: Store
        do {
            reopened = try Store(directory: directory.path, options: options, fileSystem: survivor)
        } catch {
            Issue.record("seed \(seed): reopen failed: \(error)")
            return (mode, crashedDuringRecovery, 0)
        }
        let commits = acknowledged.withLock { $0 }.sorted { $0.version < $1.version }
        let snapshot = try reopened.snapshot()
        var firstMissing: UInt64? = nil
        for commit in commits {
            let present = try commit.keys.map { try snapshot.get($0) }
            let count = present.compactMap { $0 }.count
            if count != 0 && count != commit.keys.count {
                Issue.record("seed \(seed): commit \(commit.version) is partly visible (\(count) of \(commit.keys.count) keys)")
            }
            if count == 0 {
                if commit.durable { Issue.record("seed \(seed): acknowledged durable commit \(commit.version) was lost") }
                if firstMissing == nil { firstMissing = commit.version }
            } else {
                if let firstMissing {
                    Issue.record("seed \(seed): commit \(commit.version) survived but \(firstMissing) before it did not")
                }
                for record in present {
                    if text(record?.value) != commit.value || record?.version != 1 {
                        Issue.record("seed \(seed): commit \(commit.version) has a wrong value or version")
                    }
                }
            }
        }
        snapshot.close()
        reopened.close()
        // `check` reads the real files; the log lives in the fault file system, so check the
        // LMDB side through the survivor.
        let report = try Store.check(directory: directory.path, fileSystem: survivor)
        if !report.isSound { Issue.record("seed \(seed): check found \(report.problems)") }
        return (mode, crashedDuringRecovery, commits.count)
    }
}
