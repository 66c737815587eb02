import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import Policies
#if canImport(Glibc)
import Glibc
#endif

// The child of the kill -9 loop: a concurrent workload on one store that acknowledges every
// durable commit and save with a line in a file, until the parent SIGKILLs it.
//
// Threads: three key-value writers (multi-key batches, deletes of whole batches, conditional
// counter increments), three context savers (object groups inserted, updated and deleted in
// one save each; a shared tally incremented under merge policies), one checkpointer, and one
// reader that checks snapshot invariants while everything runs.
//
// Acknowledgement lines (written after the commit or save returned; "b…" lines before an
// operation whose effect must be allowed either way if the kill lands inside it):
//
//   ready <replayed commits>
//   B <round> <thread> <number> <size> <commit version>   a batch of <size> keys was put
//   bD / D <round> <thread> <number>                      deleting that batch began / done
//   C <counter> <record version>                          a counter increment
//   I <group> <size> <pk,pk,…>                            an object group was inserted
//   U <group> <writes>                                    the group's objects were updated
//   bX / X <group>                                        deleting the group began / done
//   bT / T / gT <tally>                                   a tally increment began / done / gave up
//   bK / K <segments removed>                             a checkpoint began / done
//   err <text> / bad <text>                               an unexpected error / a broken invariant

/// The object workload's schema and the values every checker recomputes.
enum TortureModel {
    static let schema: Schema = {
        do {
            return try Schema([
                EntityDescription("Item", attributes: [
                    AttributeDescription("group", .string),
                    AttributeDescription("size", .int),
                    AttributeDescription("writes", .int),
                    AttributeDescription("payload", .string),
                ], indexes: [["group"], ["writes", "size"]]),
                EntityDescription("Tally", attributes: [
                    AttributeDescription("count", .int, defaultValue: .int(0)),
                    AttributeDescription("label", .string, isOptional: true),
                ]),
            ])
        } catch {
            fatalError("torture schema: \(error)")
        }
    }()

    /// Incremented only under policies that keep every increment (error + retry, adding deltas).
    static let losslessTally = ObjectID(entityName: "Tally", primaryKey: 1)
    /// Incremented under policies that may drop an increment by design (trumps, overwrite, rollback).
    static let lossyTally = ObjectID(entityName: "Tally", primaryKey: 2)

    /// The payload of a group's objects after `writes` saves.
    static func payload(group: String, writes: Int) -> String {
        let length = Int(stableHash("\(group)#\(writes)") % 1200)
        let letter = Character(Unicode.Scalar(UInt8(97 + writes % 26)))
        return "\(group)#\(writes)#" + String(repeating: letter, count: length)
    }

    /// The value of every key of a batch: a header the checker parses, then filler.
    static func batchValue(round: Int, thread: Int, number: Int, size: Int, length: Int) -> String {
        let letter = Character(Unicode.Scalar(UInt8(65 + (number + thread) % 26)))
        return "\(round)/\(thread)/\(number)/\(size)/\(length):" + String(repeating: letter, count: length)
    }

    /// Parses a batch value; nil when it is not one `batchValue` makes.
    static func parseBatchValue(_ bytes: UnsafeRawBufferPointer) -> (group: String, size: Int)? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let fields = text[..<colon].split(separator: "/").compactMap { Int($0) }
        guard fields.count == 5 else { return nil }
        let rebuilt = batchValue(round: fields[0], thread: fields[1], number: fields[2], size: fields[3], length: fields[4])
        guard rebuilt == text else { return nil }
        return ("\(fields[0])/\(fields[1])/\(fields[2])", fields[3])
    }

    /// Options that keep the applier, rotation and checkpoints busy.
    static func storeOptions(_ random: inout SeededRandom) -> Store.Options {
        var options = Store.Options()
        options.segmentSize = random.int(in: 8...64) << 10
        options.applyInterval = 0.002 + Double(random.int(20)) / 1000
        options.applyThreshold = random.int(in: 4...64) << 10
        options.mapSize = 256 << 20
        return options
    }
}

enum KillWorker {
    static let role = "kill-worker"

    static func main() -> Int32 {
        let storePath = ChildProcess.argument("STORE")
        let acks = LineWriter(path: ChildProcess.argument("ACKS"))
        let round = Int(ChildProcess.argument("ROUND")) ?? 0
        let seed = UInt64(ChildProcess.argument("SEED")) ?? 0
        var random = SeededRandom(seed: seed)
        let store: Store
        do {
            store = try Store(directory: storePath, options: TortureModel.storeOptions(&random))
        } catch {
            acks.line("err open: \(error)")
            return 1
        }
        acks.line("ready \(store.recoveryReport.replayedCommits)")
        var durable = ObjectStore.Options()
        durable.saveDurability = .full
        var relaxed = ObjectStore.Options()
        relaxed.saveDurability = .normal
        // Two object stores on one engine store: each has its own key-allocation lock, so
        // allocations race through the engine's conditions too.
        let objects: [ObjectStore]
        do {
            objects = [try ObjectStore(store: store, schema: TortureModel.schema, options: durable),
                       try ObjectStore(store: store, schema: TortureModel.schema, options: relaxed)]
        } catch {
            acks.line("err open objects: \(error)")
            return 1
        }
        let lossy: [any MergePolicy] = [.storeTrump, .objectTrump, .overwrite, .rollback]
        let policies: [(policy: any MergePolicy, lossless: Bool)] = [
            (.error, true),
            (.addingDeltas(for: ["count"], otherwise: .error), true),
            (lossy[round % lossy.count], false),
        ]
        let deadline = monotonicNow() + 300  // the parent kills it long before
        let threadSeed = random.next()
        runThreads(8) { index in
            var random = SeededRandom(seed: threadSeed &+ UInt64(index) &* 0x9E37_79B9)
            switch index {
            case 0..<3:
                keyValueWriter(store, thread: index, round: round, acks: acks, random: &random, until: deadline)
            case 3..<6:
                let saver = index - 3
                let context = objects[saver == 2 ? 1 : 0].newBackgroundContext(
                    name: "saver\(saver)", mergePolicy: policies[saver].policy)
                objectSaver(context, thread: saver, lossless: policies[saver].lossless, round: round,
                            acks: acks, random: &random, until: deadline)
            case 6:
                checkpointer(store, acks: acks, random: &random, until: deadline)
            default:
                verifier(store, round: round, acks: acks, random: &random, until: deadline)
            }
        }
        return 0
    }

    static func keyValueWriter(_ store: Store, thread: Int, round: Int, acks: LineWriter,
                               random: inout SeededRandom, until deadline: Double) {
        var number = 0
        var live: [(number: Int, size: Int)] = []
        while monotonicNow() < deadline {
            let choice = random.int(100)
            let durability: Durability = random.chance(1, in: 3) ? .normal : .full
            do {
                if choice < 50 || live.isEmpty {
                    let size = random.int(in: 1...4), length = random.int(3000)
                    let value = TortureModel.batchValue(round: round, thread: thread, number: number, size: size, length: length)
                    var batch = WriteBatch()
                    for member in 0..<size {
                        batch.put(value, forKey: "b/\(round)/\(thread)/\(number)/\(member)", in: "batches", if: .absent)
                    }
                    let info = try store.commit(batch, durability: durability)
                    acks.line("B \(round) \(thread) \(number) \(size) \(info.version)")
                    live.append((number, size))
                    number += 1
                } else if choice < 85 {
                    let counter = random.int(8)
                    while true {
                        let snapshot = try store.snapshot()
                        let version = try snapshot.get("c/\(counter)", in: "counters")?.version ?? 0
                        snapshot.close()
                        var batch = WriteBatch()
                        batch.put(String(version + 1), forKey: "c/\(counter)", in: "counters",
                                  if: version == 0 ? .absent : .version(version))
                        do {
                            let info = try store.commit(batch, durability: durability)
                            acks.line("C \(counter) \(info.recordVersions[0])")
                            break
                        } catch KVError.conditionFailed {
                            continue
                        }
                    }
                } else {
                    let victim = live.remove(at: random.int(live.count))
                    acks.line("bD \(round) \(thread) \(victim.number)")
                    var batch = WriteBatch()
                    for member in 0..<victim.size {
                        batch.delete("b/\(round)/\(thread)/\(victim.number)/\(member)", in: "batches", if: .version(1))
                    }
                    try store.commit(batch, durability: durability)
                    acks.line("D \(round) \(thread) \(victim.number)")
                }
            } catch {
                acks.line("err kv\(thread): \(error)")
                usleep(10_000)
            }
        }
    }

    static func objectSaver(_ context: ObjectContext, thread: Int, lossless: Bool, round: Int, acks: LineWriter,
                            random: inout SeededRandom, until deadline: Double) {
        var number = 0
        var live: [(group: String, ids: [ObjectID], writes: Int)] = []
        context.performAndWait {
            while monotonicNow() < deadline {
                let choice = random.int(100)
                do {
                    if choice < 40 || live.isEmpty {
                        let group = "\(round)-\(thread)-\(number)"
                        number += 1
                        let size = random.int(in: 1...3)
                        let inserted = (0..<size).map { _ -> StoredObject in
                            let object = context.insert(entity: "Item")
                            object["group"] = .string(group)
                            object["size"] = .int(Int64(size))
                            object["writes"] = .int(1)
                            object["payload"] = .string(TortureModel.payload(group: group, writes: 1))
                            return object
                        }
                        try context.save()
                        let ids = inserted.map(\.objectID)
                        acks.line("I \(group) \(size) \(ids.map { String($0.primaryKey ?? 0) }.joined(separator: ","))")
                        live.append((group, ids, 1))
                    } else if choice < 65 {
                        let index = random.int(live.count)
                        let writes = live[index].writes + 1
                        for id in live[index].ids {
                            let object = try context.existingObject(with: id)
                            object["writes"] = .int(Int64(writes))
                            object["payload"] = .string(TortureModel.payload(group: live[index].group, writes: writes))
                        }
                        try context.save()
                        acks.line("U \(live[index].group) \(writes)")
                        live[index].writes = writes
                    } else if choice < 75 {
                        let victim = live.remove(at: random.int(live.count))
                        acks.line("bX \(victim.group)")
                        for id in victim.ids { context.delete(try context.existingObject(with: id)) }
                        try context.save()
                        acks.line("X \(victim.group)")
                    } else {
                        try incrementTally(context, lossless: lossless, acks: acks)
                    }
                } catch {
                    acks.line("err saver\(thread): \(error)")
                    context.rollback()
                    usleep(10_000)
                }
                // Forget loaded objects: every operation reloads what it touches.
                context.reset()
            }
        }
    }

    /// One increment of the thread's tally. Lossless policies retry until their increment is
    /// in; lossy ones save once (the policy may drop the increment) or give up.
    static func incrementTally(_ context: ObjectContext, lossless: Bool, acks: LineWriter) throws {
        let which = lossless ? 1 : 2
        let id = lossless ? TortureModel.losslessTally : TortureModel.lossyTally
        acks.line("bT \(which)")
        while true {
            let tally = try context.existingObject(with: id)
            tally["count"] = .int((tally["count", as: Int64.self] ?? 0) + 1)
            do {
                try context.save()
                acks.line("T \(which)")
                return
            } catch is MergeError {
                // The error policy: nothing was written; read again and retry.
            } catch ContextError.tooManyConflictRetries {
                if !lossless {
                    context.rollback()
                    acks.line("gT \(which)")
                    return
                }
            }
            context.rollback()
            context.reset()
        }
    }

    static func checkpointer(_ store: Store, acks: LineWriter, random: inout SeededRandom, until deadline: Double) {
        let parent = getppid()
        while monotonicNow() < deadline {
            // An orphan (the test run died) stops instead of writing for minutes.
            if getppid() != parent { _exit(3) }
            usleep(UInt32(random.int(in: 1_000...25_000)))
            acks.line("bK")
            do {
                let report = try store.checkpoint()
                acks.line("K \(report.segmentsRemoved)")
            } catch {
                acks.line("err checkpoint: \(error)")
            }
        }
    }

    /// Checks, while the writers run, that every snapshot sees whole batches and counters
    /// whose value is their record version.
    static func verifier(_ store: Store, round: Int, acks: LineWriter, random: inout SeededRandom, until deadline: Double) {
        while monotonicNow() < deadline {
            usleep(UInt32(random.int(in: 1_000...10_000)))
            do {
                let snapshot = try store.snapshot()
                defer { snapshot.close() }
                try snapshot.forEach(in: "counters") { key, value, version in
                    if String(decoding: value, as: UTF8.self) != String(version) {
                        acks.line("bad counter \(String(decoding: key, as: UTF8.self)) has value \(String(decoding: value, as: UTF8.self)) at version \(version)")
                    }
                    return true
                }
                var groups: [String: (seen: Int, size: Int)] = [:]
                try snapshot.forEach(in: "batches", prefix: Array("b/\(round)/".utf8)) { key, value, _ in
                    guard let parsed = TortureModel.parseBatchValue(value) else {
                        acks.line("bad batch value under \(String(decoding: key, as: UTF8.self))")
                        return true
                    }
                    groups[parsed.group, default: (0, parsed.size)].seen += 1
                    return true
                }
                for (group, counts) in groups where counts.seen != counts.size {
                    acks.line("bad snapshot \(snapshot.version) sees \(counts.seen) of \(counts.size) keys of batch \(group)")
                }
            } catch {
                acks.line("err verifier: \(error)")
            }
        }
    }
}
