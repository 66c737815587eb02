import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import Policies
import Testing
#if canImport(Glibc)
import Glibc
#endif

// A migration is one conditional commit: SIGKILL a real process in the middle of one (its
// progress callback, called mid-way through the rewrite, says "paused" and waits to be
// killed) and the store must open with the old schema, every record and index as before;
// opening with the new schema afterwards runs the whole migration again.

/// The schemas of the migration kill test and the records it seeds.
enum MigrationKillModel {
    static let records = 12_000

    static let v1: Schema = {
        do {
            return try Schema([EntityDescription("Item", attributes: [
                AttributeDescription("label", .string), AttributeDescription("size", .int),
            ], indexes: [["size"]])])
        } catch {
            fatalError("migration kill schema: \(error)")
        }
    }()

    /// `size` becomes a string, `label` is renamed `title`: every record is rewritten.
    static let v2: Schema = {
        do {
            return try Schema([EntityDescription("Item", attributes: [
                AttributeDescription("title", .string, renamingIdentifier: "label"), AttributeDescription("size", .string),
            ], indexes: [["size"]])])
        } catch {
            fatalError("migration kill schema: \(error)")
        }
    }()

    static func options() -> ObjectStore.Options {
        var options = ObjectStore.Options()
        options.migration = { record in
            if case .int(let size) = record.storedValues["size"] ?? .null { record.values["size"] = .string("#\(size)") }
        }
        return options
    }
}

/// The child: opens the store with the new schema and stops inside the migration.
enum MigrationPauseChild {
    static let role = "migration-pause"

    static func main() -> Int32 {
        let acknowledgements = LineWriter(path: ChildProcess.argument("ACKS"))
        var options = MigrationKillModel.options()
        options.migrationProgress = { progress in
            guard progress.phase == "migrating" else { return }
            acknowledgements.line("paused \(progress.records)")
            while true { sleep(60) }
        }
        do {
            let objects = try ObjectStore(directory: ChildProcess.argument("STORE"), schema: MigrationKillModel.v2, options: options)
            objects.close()
            acknowledgements.line("migrated without pausing")
        } catch {
            acknowledgements.line("error \(error)")
        }
        return 0
    }
}

@Suite struct MigrationKillTests {
    // A guard against a hang, not a speed check: the debug build's 12,000-record seed and
    // migration take about a minute alone and twelve beside `make torture`'s other suites.
    @Test(.timeLimit(.minutes(20)))
    func aMigrationKilledMidwayLeavesTheOldStoreIntact() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-migration-kill")
        defer { directory.remove() }
        let storePath = directory.path + "/store"
        let acksPath = directory.path + "/acks"
        do {
            let objects = try ObjectStore(directory: storePath, schema: MigrationKillModel.v1)
            defer { objects.close() }
            let context = objects.newBackgroundContext()
            try context.performAndWait {
                for number in 0..<MigrationKillModel.records {
                    let item = context.insert(entity: "Item")
                    item["label"] = .string("item \(number)")
                    item["size"] = .int(Int64(number))
                }
                try context.save()
            }
        }

        let child = try ChildProcess.start(
            role: MigrationPauseChild.role, arguments: ["STORE": storePath, "ACKS": acksPath],
            outputPath: directory.path + "/child-output")
        let deadline = Date().addingTimeInterval(180)
        while ChildProcess.completeLines(acksPath).isEmpty, child.isRunning, Date() < deadline { usleep(10_000) }
        let lines = ChildProcess.completeLines(acksPath)
        let ending = ChildProcess.kill9(child)
        let output = String(decoding: FileManager.default.contents(atPath: directory.path + "/child-output") ?? Data(), as: UTF8.self)
        #expect(lines.first?.hasPrefix("paused ") == true, "child wrote \(lines); output: \(output.prefix(2000))")
        #expect(ending == .signaled(SIGKILL))

        // The old schema opens (no migration: the recorded schema is still v1) with every record.
        var options = ObjectStore.Options()
        options.migration = { _ in Issue.record("reopening with the recorded schema must not migrate") }
        let old = try ObjectStore(directory: storePath, schema: MigrationKillModel.v1, options: options)
        let context = old.newBackgroundContext()
        let values = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [.ascending("size")])).map(\.values)
        }
        #expect(values.count == MigrationKillModel.records)
        #expect(values.enumerated().allSatisfy { number, item in
            item["label"] == .string("item \(number)") && item["size"] == .int(Int64(number))
        })
        #expect(try old.indexProblems() == [])
        old.close()
        #expect(try Store.check(directory: storePath).isSound)

        // And the migration, run to the end, converts every record.
        let migrated = try ObjectStore(directory: storePath, schema: MigrationKillModel.v2, options: MigrationKillModel.options())
        defer { migrated.close() }
        let after = migrated.newBackgroundContext()
        let converted = try after.performAndWait {
            try after.count(for: FetchRequest(entityName: "Item", predicate: .compare("size", .equal, .string("#11999"))))
        }
        #expect(converted == 1)
        #expect(try migrated.indexProblems() == [])
    }
}
