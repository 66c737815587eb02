import CairnTestSupport
import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Damage to log segments at many offsets — a flipped byte, a zeroed or garbage range, a
/// truncation, appended garbage, a missing or renamed segment — on the in-memory log
/// (`FaultFileSystem.setContents`) and on real files. Each damaged store is opened (strict
/// and recover-to-last-good-record, alternately) under a watchdog, and:
/// - opening either throws a typed error naming a log file (`corruptLog`, `wrongFormat`), or
///   recovers to some version R no later than the undamaged store's;
/// - a store that recovered equals the model after commit R exactly: every value read back
///   is one that was written at R (never silently wrong data);
/// - when R is earlier than the undamaged store's, the recovery report says what was cut
///   (torn tail, corruption cut or removed segments): no silent loss;
/// - `.strict` never cuts corruption, and `check` finds the recovered store sound.
///
/// Sizes: CAIRN_LOG_CORRUPTION_CASES (per medium). Replay one case with the printed
/// CAIRN_LOG_CORRUPTION_CASE=<medium>:<script seed>:<case seed>.
@Suite(.serialized) struct LogCorruptionTests {
    enum Medium: String, CaseIterable {
        case memory, disk
    }

    enum Damage: CaseIterable {
        case flipByte, zeroRange, garbageRange, truncate, appendGarbage, removeSegment, renameSegment
    }

    @Test(.timeLimit(.minutes(30)))
    func damagedLogsAreTypedErrorsOrReportedCutsNeverWrongData() throws {
        if let replay = Reliability.replayCase("LOG_CORRUPTION") {
            let parts = replay.split(separator: ":").map(String.init)
            try #require(parts.count == 3, "CAIRN_LOG_CORRUPTION_CASE is <medium>:<script seed>:<case seed>")
            let medium = try #require(Medium(rawValue: parts[0]))
            let base = try Base(medium: medium, scriptSeed: UInt64(parts[1]) ?? 0)
            defer { base.remove() }
            var figures = OutcomeCounts()
            try runCase(base, caseSeed: UInt64(parts[2]) ?? 0, strict: true, figures: &figures)
            return
        }
        let cases = Reliability.size("LOG_CORRUPTION_CASES", short: 60, torture: 1200)
        let seed = Reliability.seed("LOG_CORRUPTION")
        Reliability.report("log-corruption", "\(cases) cases per medium, seed \(seed) (replay the run: CAIRN_LOG_CORRUPTION_SEED=\(seed))")
        for medium in Medium.allCases {
            var figures = OutcomeCounts()
            // A few bases per run, so the damage lands on different layouts.
            let bases = max(1, cases / 150)
            for baseIndex in 0..<bases {
                let base = try Base(medium: medium, scriptSeed: Reliability.caseSeed(seed, 1000 + baseIndex))
                defer { base.remove() }
                let perBase = cases / bases + (baseIndex < cases % bases ? 1 : 0)
                for index in 0..<perBase {
                    try runCase(base, caseSeed: Reliability.caseSeed(base.script.seed, index), strict: index % 2 == 0,
                                figures: &figures)
                }
            }
            Reliability.report("log-corruption", "\(medium) log, \(cases) cases, seed \(seed): \(figures)")
        }
    }

    /// An undamaged store after a scripted workload, crashed with its log full of records.
    struct Base {
        let medium: Medium
        let script: ScriptedWorkload
        let directory: TemporaryDirectory
        /// The in-memory log (memory medium).
        let disk: FaultFileSystem
        /// The version the undamaged store recovers to.
        let intactVersion: UInt64

        init(medium: Medium, scriptSeed: UInt64) throws {
            self.medium = medium
            script = ScriptedWorkload(seed: scriptSeed, commits: 60)
            directory = try TemporaryDirectory(prefix: "cairn-logdamage-base")
            disk = FaultFileSystem()
            let run = script.run(directory: directory.path + "/store",
                                 fileSystem: ClassifyingFileSystem(disk))
            try #require(run.errors.isEmpty, "base script \(scriptSeed) failed: \(run.errors.map(\.error))")
            run.store?.simulateCrash()
            if medium == .disk {
                // Move the log onto real files next to the LMDB file.
                try PosixFileSystem().createDirectory(directory.path + "/store/wal")
                for path in disk.paths {
                    let name = path.split(separator: "/").last.map(String.init) ?? ""
                    try writeWholeFile(directory.path + "/store/wal/" + name, disk.contents(of: path) ?? [])
                }
            }
            intactVersion = UInt64(run.acknowledged.last?.version ?? 0)
        }

        func remove() { directory.remove() }

        /// A fresh copy to damage: its directory, and the file system its log is on.
        func copy() throws -> (scratch: TemporaryDirectory, path: String, fileSystem: any FileSystem, memory: FaultFileSystem?) {
            let scratch = try TemporaryDirectory(prefix: "cairn-logdamage")
            let path = scratch.path + "/store"
            try copyDirectory(directory.path + "/store", to: path)
            switch medium {
            case .disk:
                return (scratch, path, PosixFileSystem(), nil)
            case .memory:
                // The in-memory log keeps the base directory's paths; rebase them.
                let fileSystem = FaultFileSystem()
                try fileSystem.createDirectory(path)
                try fileSystem.createDirectory(path + "/wal")
                for file in disk.paths {
                    let name = file.split(separator: "/").last.map(String.init) ?? ""
                    fileSystem.setContents(of: path + "/wal/" + name, to: disk.contents(of: file) ?? [])
                }
                return (scratch, path, fileSystem, fileSystem)
            }
        }
    }

    func runCase(_ base: Base, caseSeed: UInt64, strict: Bool, figures: inout OutcomeCounts) throws {
        let replay = "CAIRN_LOG_CORRUPTION_CASE=\(base.medium):\(base.script.seed):\(caseSeed)"
        var random = SeededRandom(seed: caseSeed)
        let copy = try base.copy()
        defer { copy.scratch.remove() }
        let walDirectory = copy.path + "/wal"
        let segments = try copy.fileSystem.contentsOfDirectory(walDirectory).sorted().map { walDirectory + "/" + $0 }
        try #require(!segments.isEmpty)
        // The last segment most often: that is where a crash leaves its damage.
        let target = random.chance(1, in: 2) ? segments.last! : random.pick(segments)
        let read = { (path: String) throws -> [UInt8] in
            let file = try copy.fileSystem.open(path, create: false)
            defer { file.close() }
            return try file.read(at: 0, count: try file.size())
        }
        let write = { (path: String, bytes: [UInt8]) throws in
            if let memory = copy.memory {
                memory.setContents(of: path, to: bytes)
            } else {
                try writeWholeFile(path, bytes)
            }
        }
        var bytes = try read(target)
        let undamaged = bytes
        let damage = Damage.allCases[random.int(Damage.allCases.count)]
        let offset = Self.interestingOffset(in: bytes, random: &random)
        var described: String
        switch damage {
        case .flipByte:
            bytes[offset] ^= UInt8(random.int(in: 1...255))
            described = "flip byte \(offset)"
        case .zeroRange, .garbageRange:
            let end = min(bytes.count, offset + random.int(in: 1...64))
            for index in offset..<end { bytes[index] = damage == .zeroRange ? 0 : UInt8(truncatingIfNeeded: random.next()) }
            described = "\(damage == .zeroRange ? "zero" : "garbage") \(offset)..<\(end)"
        case .truncate:
            bytes.removeSubrange(offset...)
            described = "truncate at \(offset)"
        case .appendGarbage:
            for _ in 0..<random.int(in: 1...100) { bytes.append(UInt8(truncatingIfNeeded: random.next())) }
            described = "append garbage"
        case .removeSegment, .renameSegment:
            described = damage == .removeSegment ? "remove" : "rename"
        }
        switch damage {
        case .removeSegment:
            try copy.fileSystem.remove(target)
        case .renameSegment:
            try copy.fileSystem.remove(target)
            let first = FrozenLogFormat.firstVersion(ofSegmentNamed: String(target.split(separator: "/").last!)) ?? 1
            let renamed = walDirectory + "/" + String(first + UInt64(random.int(in: 1...3))).leftPaddedWithZeros(to: 20) + ".log"
            if !segments.contains(renamed) { try write(renamed, bytes) }
        default:
            try write(target, bytes)
        }
        let name = String(target.split(separator: "/").last!)
        let label = "\(replay) (\(described) of \(name), \(strict ? "strict" : "recoverToLastGoodRecord"))"

        var options = base.script.options
        options.recovery = strict ? .strict : .recoverToLastGoodRecord
        options.createIfMissing = false
        let opened: Store
        do {
            opened = try Watchdog.shared.guarding("log corruption \(label)", limit: 60) {
                try Store(directory: copy.path, options: options, fileSystem: copy.fileSystem)
            }
        } catch let error as KVError {
            switch error {
            case .corruptLog(let file, _, _), .wrongFormat(let file, _):
                if !file.hasPrefix(walDirectory) {
                    Issue.record("\(label): the error names \(file), not a log file: \(error)")
                }
                figures.add(error.caseName)
            default:
                Issue.record("\(label): opening threw \(error), not a log-corruption error")
            }
            return
        }
        defer { opened.close() }
        let report = opened.recoveryReport
        let recovered = try opened.stats().commitVersion
        if recovered > base.intactVersion {
            Issue.record("\(label): recovered to \(recovered), beyond the undamaged store's \(base.intactVersion)")
            return
        }
        for difference in try ScriptedWorkload.differences(opened, from: base.script.states[Int(recovered)]).prefix(5) {
            Issue.record("\(label): silently wrong data after recovery to \(recovered): \(difference)")
        }
        let reported = report.tornTail != nil || report.corruptionCut != nil || !report.removedSegments.isEmpty
        // The one loss no log can report: zeros from the start of one of the newest
        // segment's records to its end read exactly like records never written
        // (Durability.md, "What is not promised"). Only that exact shape is let through,
        // and counted: the file is the undamaged one with everything from a record's start
        // on zeroed (the range may begin in bytes that were zero already), and exactly the
        // wiped records are lost.
        let wiped = damage == .zeroRange && target == segments.last!
            ? Self.recordOffsets(undamaged).filter { $0 >= offset } : []
        let wipedTail = wiped.first.map { start in
            bytes[..<start].elementsEqual(undamaged[..<start]) && bytes[start...].allSatisfy { $0 == 0 }
        } == true && base.intactVersion - recovered == UInt64(wiped.count)
        if recovered < base.intactVersion && !reported && !wipedTail {
            Issue.record("\(label): commits \(recovered + 1)…\(base.intactVersion) were lost and the recovery report says nothing")
        }
        if strict && report.corruptionCut != nil {
            Issue.record("\(label): strict recovery cut corruption: \(report.corruptionCut!)")
        }
        // Only the newest segment can have a torn tail: older ones were synced before the
        // next was created, so damage there is corruption.
        if let tail = report.tornTail, !tail.file.hasSuffix("/" + (segments.last!.split(separator: "/").last.map(String.init) ?? "")),
           damage != .removeSegment && damage != .renameSegment {
            Issue.record("\(label): damage in \(tail.file), not the newest segment, was cut as a torn tail")
        }
        if report.corruptionCut != nil {
            figures.add("opened, corruption cut")
        } else if report.tornTail != nil {
            figures.add("opened, tail cut")
        } else if !report.removedSegments.isEmpty {
            figures.add("opened, segments removed")
        } else if !report.harmlessDamage.isEmpty {
            figures.add("opened, harmless damage reported")
        } else if recovered < base.intactVersion {
            figures.add("opened, newest records wholly zeroed (read as never written)")
        } else {
            figures.add("opened, nothing lost")
        }
        opened.close()
        let check = try Store.check(directory: copy.path, fileSystem: copy.fileSystem)
        if !check.isSound { Issue.record("\(label): check after recovery found \(check.problems.prefix(3))") }
    }

    /// Deleting the newest log segment (by hand, or a file system that lost it) loses the
    /// commits in it that LMDB had not applied. Nothing in that file can say so; its
    /// predecessor can: a segment is sealed only after its successor exists, and the
    /// predecessor of the active segment is never retired. So the loss is a typed error,
    /// or, when asked to recover, a reported cut. Cutting the newest segment, even exactly at
    /// a record boundary, is caught by its size: segments are created at full size.
    @Test(arguments: [false, true])
    func losingTheNewestSegmentOrItsTailIsReported(truncate: Bool) throws {
        let directory = try TemporaryDirectory(prefix: "cairn-newest-segment")
        defer { directory.remove() }
        var options = Store.Options()
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        options.segmentSize = 1024
        let store = try Store(directory: directory.path, options: options)
        var last: UInt64 = 0
        for index in 0..<20 {
            var batch = WriteBatch()
            batch.put(String(repeating: "v", count: 200), forKey: "k\(index)")
            last = try store.commit(batch).version
        }
        // LMDB has applied everything but the newest segment's commits.
        try store.flush()
        for index in 20..<22 {
            var batch = WriteBatch()
            batch.put(String(repeating: "w", count: 100), forKey: "k\(index)")
            last = try store.commit(batch).version
        }
        _ = try store.checkpoint()
        for index in 22..<24 {
            var batch = WriteBatch()
            batch.put(String(repeating: "w", count: 100), forKey: "k\(index)")
            last = try store.commit(batch).version
        }
        store.simulateCrash()
        let wal = directory.path + "/wal"
        let segments = try PosixFileSystem().contentsOfDirectory(wal).sorted()
        let newest = wal + "/" + segments.last!
        if truncate {
            // Cut after its first record, exactly at the boundary.
            let bytes = try readWholeFile(newest)
            let records = Self.recordOffsets(bytes)
            try #require(records.count == 2)
            try writeWholeFile(newest, Array(bytes.prefix(records[1])))
        } else {
            try PosixFileSystem().remove(newest)
        }
        do {
            _ = try Store(directory: directory.path, options: options)
            Issue.record("opening a store whose newest segment was \(truncate ? "cut" : "deleted") succeeded")
        } catch {
            if case .corruptLog(let file, _, let reason) = error {
                #expect(file == newest, "\(reason)")
                #expect(reason.contains(truncate ? "truncated" : "missing"), "\(reason)")
            } else {
                Issue.record("opening threw \(error), not corruptLog")
            }
        }
        options.recovery = .recoverToLastGoodRecord
        let reopened = try Store(directory: directory.path, options: options)
        defer { reopened.close() }
        let report = reopened.recoveryReport
        let recovered = try reopened.stats().commitVersion
        #expect(recovered == (truncate ? last - 1 : last - 2))
        #expect(report.corruptionCut?.file == newest)
    }

    /// With every other segment retired, the log's only segment deleted: LMDB remembers that
    /// the log was started, so an empty log is damage too.
    @Test func anEmptyLogOfAStartedStoreIsReported() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-empty-log")
        defer { directory.remove() }
        var options = Store.Options()
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        let store = try Store(directory: directory.path, options: options)
        for index in 0..<5 {
            var batch = WriteBatch()
            batch.put("v", forKey: "k\(index)")
            try store.commit(batch)
        }
        store.simulateCrash()
        let wal = directory.path + "/wal"
        let segments = try PosixFileSystem().contentsOfDirectory(wal)
        try #require(segments.count == 1)
        try PosixFileSystem().remove(wal + "/" + segments[0])
        #expect(throws: KVError.self) { _ = try Store(directory: directory.path, options: options) }
        options.recovery = .recoverToLastGoodRecord
        let reopened = try Store(directory: directory.path, options: options)
        defer { reopened.close() }
        #expect(reopened.recoveryReport.corruptionCut?.reason.contains("no segment") == true)
    }

    /// An offset worth damaging: the segment header, a record header, or anywhere.
    static func interestingOffset(in bytes: [UInt8], random: inout SeededRandom) -> Int {
        guard bytes.count > 1 else { return 0 }
        let records = recordOffsets(bytes)
        switch random.int(10) {
        case 0..<3: return random.int(min(bytes.count, FrozenLogFormat.segmentHeaderSize))
        case 3..<6 where !records.isEmpty:
            return min(bytes.count - 1, random.pick(records) + random.int(FrozenLogFormat.recordHeaderSize))
        case 6 where !records.isEmpty:
            return min(bytes.count - 1, records.last! + random.int(bytes.count - records.last!))
        default: return random.int(bytes.count)
        }
    }
}

extension KVError {
    /// The case's name (with the code for LMDB and I/O errors), for counting outcomes.
    var caseName: String {
        switch self {
        case .lmdb(let code, _): return "lmdb(\(code))"
        case .io(let code, _, _): return "io(errno \(code))"
        default: return Mirror(reflecting: self).children.first?.label ?? "\(self)"
        }
    }
}

extension LogCorruptionTests {
    /// Where each whole record of a segment starts.
    static func recordOffsets(_ bytes: [UInt8]) -> [Int] {
        var records: [Int] = []
        bytes.withUnsafeBytes { raw in
            var offset = FrozenLogFormat.segmentHeaderSize
            while case let .record(_, _, _, next) = LogRecordReader.read(raw, at: offset) {
                records.append(offset)
                offset = next
            }
        }
        return records
    }
}

/// The log format's frozen sizes, written down a second time (LogFormat.swift has them).
enum FrozenLogFormat {
    static let segmentHeaderSize = 32
    static let recordHeaderSize = 24

    /// The first version a segment's file name announces.
    static func firstVersion(ofSegmentNamed name: String) -> UInt64? {
        guard name.hasSuffix(".log"), name.count == 24 else { return nil }
        return UInt64(name.prefix(20))
    }
}

extension String {
    func leftPaddedWithZeros(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
