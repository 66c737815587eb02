import Foundation
import KVEngine

/// `check`, `stats` and `checkpoint`: looking after a store.
enum AdminCommands {
    static let group = CommandGroup(title: "Administration", commands: [check, stats, checkpoint, recover])

    static let check = Command(
        name: "check",
        summary: "Verify a store's log and data without changing them.",
        arguments: ["STORE"],
        options: [],
        discussion: """
            Every log record must decode, LMDB must hold what the log says it applied, and
            every stored record must pass its checksum. Prints a summary and each problem.
            Exits with status 0 when the store is sound and 3 when it is not (or when it
            cannot be checked).

            Beside a running writer (another process has the store open) the check reads
            the store read-only, without blocking the writer: every acknowledged log record
            LMDB has not applied must decode and every stored record, in one consistent
            view, must pass its checksum. What it could not verify there (LMDB's page
            structure, applied log records against LMDB, a torn tail) is listed under
            "not verified"; stop the writer for the full check.
            """
    ) { arguments in
        let path = arguments.positionals[0]
        try StoreAccess.requireStore(path)
        let report = try Store.check(directory: path)
        let beside = report.besideWriter.map { " (checked beside writer pid \($0), read-only)" } ?? ""
        var text = report.isSound
            ? "store \(path) is sound\(report.besideWriter == nil ? "" : " as far as it could be verified")\(beside)\n"
            : "store \(path) has \(report.problems.count) problem\(report.problems.count == 1 ? "" : "s")\(beside)\n"
        text += Figures([
            ("applied version", "\(report.appliedVersion)"),
            ("last log version", report.lastLogVersion.map { "\($0)" } ?? "none (empty log)"),
            ("log commits", "\(report.logCommits), \(report.pendingCommits) not yet applied to LMDB"),
            ("records", "\(report.recordsPerTable.values.reduce(0, +))"),
        ] + tableLines(report.recordsPerTable) + [
            ("torn tail", report.besideWriter != nil ? "not verified beside the writer" : report.tornTail.map {
                "\($0) (not a problem: commits that were never acknowledged; the next open cuts them)"
            } ?? "none"),
            ("LMDB alone complete", lmdbAlone(report)),
        ] + (report.recoveryCut.map { [("'cairn recover'", "would make this cut: \($0)")] } ?? [])).text
        if !report.notVerified.isEmpty {
            text += "not verified beside the writer:\n" + report.notVerified.map { "  - \($0)\n" }.joined()
        }
        if !report.isSound {
            text += "problems:\n" + report.problems.map { "  - \($0)\n" }.joined()
        }
        StandardStream.output.write(text)
        return report.isSound ? .success : .storeProblem
    }

    /// Whether LMDB's data file alone holds every commit, for `check`.
    private static func lmdbAlone(_ report: CheckReport) -> String {
        switch report.lmdbAloneComplete {
        case true?: return "yes: LMDB holds every commit (through version \(report.appliedVersion)); losing the log loses none"
        case false?: return "no: the log holds commits LMDB lacks (LMDB holds through version \(report.appliedVersion))"
        case nil: return "unknown: the damage hides whether the log held commits after version \(report.appliedVersion), which LMDB holds"
        }
    }

    static let recover = Command(
        name: "recover",
        summary: "Open a store whose log is damaged, keeping every commit before the damage.",
        arguments: ["STORE"],
        options: [],
        discussion: """
            Opens the store in the library's recover-to-last-good-record mode: the log is cut
            at its first damage, later segments are deleted, and the commits after the cut
            are lost unless LMDB already holds them. Prints exactly what was cut and which
            commit versions were lost. Run 'cairn check STORE' first: it says what this
            would drop and whether LMDB alone holds every commit. A store whose log is not
            damaged is opened and closed unchanged.
            """
    ) { arguments in
        let path = arguments.positionals[0]
        guard access(path + "/data.mdb", F_OK) == 0 else { throw CommandError.failed("no Cairn store at \(path)") }
        var options = Store.Options()
        options.recovery = .recoverToLastGoodRecord
        let store = try Store(directory: path, options: options)
        defer { store.close() }
        let report = store.recoveryReport
        var rows: [(String, String)] = []
        if let cut = report.corruptionCut {
            rows.append(("cut", "\(cut.file) at offset \(cut.offset), \(byteCount(cut.bytesDropped)) dropped: \(cut.reason)"))
            rows.append(("lost", cut.loss))
        } else {
            rows.append(("cut", "none: the log had no damage to cut"))
        }
        if !report.removedSegments.isEmpty { rows.append(("segments removed", report.removedSegments.joined(separator: ", "))) }
        if let torn = report.tornTail { rows.append(("torn tail cut", "\(torn)")) }
        rows.append(("commit version", "\(report.lastVersion) (new commits continue from \(report.lastVersion + 1))"))
        StandardStream.output.write((report.corruptionCut == nil ? "store \(path) needed no recovery\n" : "store \(path) recovered\n")
            + Figures(rows).text)
        return .success
    }

    static let stats = Command(
        name: "stats",
        summary: "Print a store's versions, sizes and counters.",
        arguments: ["STORE"],
        options: [.flag("json", "Print one JSON object instead of text.")],
        discussion: """
            Opening the store replays its log first, so the applied version usually equals
            the commit version, and the counters (fdatasync calls, appends) start at zero.
            Beside a running writer the store is opened read-only: the versions are the
            writer's as of now (the applied version may trail the commit version), and the
            writer's own counters are not visible.
            """
    ) { arguments in
        let store = try StoreAccess.openForReading(arguments.positionals[0])
        defer { store.close() }
        let stats = try store.stats()
        StandardStream.output.write(arguments.flag("json") ? try json(stats) : text(stats))
        return .success
    }

    static let checkpoint = Command(
        name: "checkpoint",
        summary: "Apply pending commits to LMDB and delete the log segments it no longer needs.",
        arguments: ["STORE"],
        options: [],
        discussion: """
            Checkpoints also run on their own while a store is open, and opening a store
            retires the log it replayed, so there is often nothing left to remove.
            """
    ) { arguments in
        let store = try StoreAccess.openExisting(arguments.positionals[0])
        defer { store.close() }
        let report = try store.checkpoint()
        let segments = "\(report.segmentsRemoved) log segment\(report.segmentsRemoved == 1 ? "" : "s")"
        StandardStream.output.write("""
            checkpoint removed \(segments) (\(byteCount(report.bytesRemoved)))
            LMDB holds every commit through version \(report.appliedVersion)

            """)
        return .success
    }

    /// `stats` as aligned lines of text; shared with `demo`.
    static func text(_ stats: StoreStats) -> String {
        let oldest: String
        if let version = stats.oldestSnapshotVersion {
            oldest = "version \(version), opened \(String(format: "%.2f", stats.oldestSnapshotAge ?? 0)) s ago"
        } else {
            oldest = "none"
        }
        let segments = "\(stats.logSegments) segment\(stats.logSegments == 1 ? "" : "s")"
        return Figures([
            ("commit version", "\(stats.commitVersion)"),
            ("applied version", "\(stats.appliedVersion)"),
            ("durable version", "\(stats.durableVersion)"),
            ("log", "\(byteCount(stats.logBytes)) in \(segments)"),
            ("LMDB file", byteCount(stats.lmdbFileBytes)),
            ("LMDB map size", byteCount(stats.mapSize)),
            ("records", "\(stats.recordCount) (as of the applied version)"),
        ] + tableLines(stats.recordsPerTable) + [
            ("not yet applied", "\(stats.overlayCommits) commits, \(byteCount(stats.overlayBytes))"),
            ("open snapshots", "\(stats.openSnapshots)"),
            ("oldest snapshot", oldest),
            ("fdatasync calls", "\(stats.logSyncs) since open"),
            ("log appends", "\(stats.logAppends) since open"),
        ] + (stats.readOnly ? [("opened", "read-only beside the writer: versions as the writer published them; the log and counters are the writer's")] : [])).text
    }

    /// `stats --json`: one object, keys named after `StoreStats`' properties.
    static func json(_ stats: StoreStats) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(StatsDocument(stats))
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// One indented line per table, sorted by name.
    private static func tableLines(_ counts: [String: Int]) -> [(String, String)] {
        counts.sorted { $0.key < $1.key }.map { ("  table \($0.key)", "\($0.value)") }
    }
}

/// Labels and values printed as two aligned columns.
struct Figures {
    let rows: [(label: String, value: String)]

    init(_ rows: [(String, String)]) {
        self.rows = rows.map { (label: $0.0, value: $0.1) }
    }

    var text: String {
        let width = rows.map { $0.label.count }.max().map { $0 + 2 } ?? 0
        return rows.map { "  " + $0.label.padded(to: width) + $0.value + "\n" }.joined()
    }
}

/// `StoreStats` as JSON, with explicit nulls for what is absent.
private struct StatsDocument: Encodable {
    let stats: StoreStats

    init(_ stats: StoreStats) {
        self.stats = stats
    }

    private enum Key: String, CodingKey {
        case commitVersion, appliedVersion, durableVersion, logBytes, logSegments, lmdbFileBytes, mapSize
        case recordCount, recordsPerTable, overlayBytes, overlayCommits, openSnapshots
        case oldestSnapshotVersion, oldestSnapshotAge, logSyncs, logAppends, readOnly
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(stats.commitVersion, forKey: .commitVersion)
        try container.encode(stats.appliedVersion, forKey: .appliedVersion)
        try container.encode(stats.durableVersion, forKey: .durableVersion)
        try container.encode(stats.logBytes, forKey: .logBytes)
        try container.encode(stats.logSegments, forKey: .logSegments)
        try container.encode(stats.lmdbFileBytes, forKey: .lmdbFileBytes)
        try container.encode(stats.mapSize, forKey: .mapSize)
        try container.encode(stats.recordCount, forKey: .recordCount)
        try container.encode(stats.recordsPerTable, forKey: .recordsPerTable)
        try container.encode(stats.overlayBytes, forKey: .overlayBytes)
        try container.encode(stats.overlayCommits, forKey: .overlayCommits)
        try container.encode(stats.openSnapshots, forKey: .openSnapshots)
        try container.encode(stats.oldestSnapshotVersion, forKey: .oldestSnapshotVersion)
        try container.encode(stats.oldestSnapshotAge, forKey: .oldestSnapshotAge)
        try container.encode(stats.logSyncs, forKey: .logSyncs)
        try container.encode(stats.logAppends, forKey: .logAppends)
        try container.encode(stats.readOnly, forKey: .readOnly)
    }
}

/// `1536` → `1536 bytes (1.5 KiB)`; small counts stay plain.
func byteCount(_ bytes: Int) -> String {
    let units = ["KiB", "MiB", "GiB", "TiB"]
    var scaled = Double(bytes)
    var unit = -1
    while scaled >= 1024 && unit < units.count - 1 {
        scaled /= 1024
        unit += 1
    }
    let plain = "\(bytes) byte\(bytes == 1 ? "" : "s")"
    return unit < 0 ? plain : "\(plain) (\(String(format: "%.1f", scaled)) \(units[unit]))"
}
