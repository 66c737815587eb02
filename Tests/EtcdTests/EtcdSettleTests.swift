import CairnTestSupport
import Contexts
@testable import EtcdStorage
import Foundation
import Policies
import Testing

/// Settling a txn whose reply never came (EtcdStorage+Settle.swift), each case staged on the
/// shared cluster: the attempt's txn is sent by hand (applied, its reply ignored) or not at
/// all (lost on the way, or still in flight), then `settle` must tell which, from the witness
/// record alone, without resending it.
@Suite("etcd settling unanswered txns")
struct EtcdSettleTests {
    static let table = "entity:Person"
    static let key: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]

    /// A one-record update (or insert, from version 0) as the commit path would send it.
    static func attempt(_ storage: EtcdStorage, value: UInt8, from version: Int64) throws -> (WireTxnRequest, EtcdWriteStamp) {
        var batch = StorageBatch()
        batch.put([value], forKey: key, in: table, if: version == 0 ? .absent : .version(UInt64(version)))
        let plan = try EtcdTxnPlan(batch.takeOperations(), layout: storage.layout)
        let stamp = storage.nextStamp()
        return (plan.txn(stamp: stamp, marker: nil, layout: storage.layout), stamp)
    }

    static func send(_ storage: EtcdStorage, _ txn: WireTxnRequest) throws -> WireTxnResponse {
        try storage.client.call("kv/txn", txn, as: WireTxnResponse.self, isWrite: true)
    }

    /// The record's value and version now.
    static func read(_ storage: EtcdStorage) throws -> (value: [UInt8]?, version: UInt64) {
        let view = try storage.readView()
        defer { view.close() }
        var found: ([UInt8]?, UInt64) = (nil, 0)
        try view.visitValues(forKeys: [StorageKey(table: table, key: key)]) { _, value, version in found = (value.map { Array($0) }, version) }
        return found
    }

    /// `body` with two storages on a fresh prefix: ours, and another writer's.
    static func withStorages(_ configuration: EtcdConfiguration? = nil, _ body: (EtcdStorage, EtcdStorage) throws -> Void) throws {
        let configuration = try configuration ?? freshConfiguration("settle")
        let ours = EtcdStorage(configuration: configuration)
        let theirs = EtcdStorage(configuration: configuration)
        defer { ours.close(); theirs.close() }
        try body(ours, theirs)
    }

    @Test("applied, reply lost: settled as applied at its revision")
    func appliedIsFound() throws {
        try Self.withStorages { ours, _ in
            let (txn, stamp) = try Self.attempt(ours, value: 1, from: 0)
            let reply = try Self.send(ours, txn)
            try #require(reply.succeeded == true)
            let settled = try ours.settle(witness: txn.compare[0].key, comparedVersion: 0, stamp: stamp)
            #expect(settled == .applied(revision: try #require(reply.header?.revision?.value)))
        }
    }

    @Test("applied, then overwritten twice by another writer: found back in the witness's history")
    func appliedIsFoundInHistory() throws {
        // A cluster of its own: the compaction must not expire other tests' read views.
        let cluster = try EtcdCluster.startWithRetries(memberCount: 1)
        defer { cluster.stop() }
        try Self.withStorages(EtcdConfiguration(endpoints: cluster.endpoints, prefix: "settle")) { ours, theirs in
            let (txn, stamp) = try Self.attempt(ours, value: 1, from: 0)
            let revision = try #require(try Self.send(ours, txn).header?.revision?.value)
            for (value, version) in [(UInt8(2), Int64(1)), (3, 2)] {
                #expect(try Self.send(theirs, try Self.attempt(theirs, value: value, from: version).0).succeeded == true)
            }
            #expect(try ours.settle(witness: txn.compare[0].key, comparedVersion: 0, stamp: stamp) == .applied(revision: revision))

            // Once that history is compacted away, the outcome is unknown: said so, never guessed.
            let now = Int64(try ours.commitVersion())
            _ = try ours.client.call("kv/compaction", WireCompactionRequest(revision: WireInt(now)), as: WireStatusResponse.self, isWrite: true)
            #expect {
                try ours.settle(witness: txn.compare[0].key, comparedVersion: 0, stamp: stamp)
            } throws: { error in
                (error as? StorageError)?.code == .outcomeUnknown && "\(error)".contains("compacted")
            }
        }
    }

    @Test("never arrived: fenced; arriving late it cannot apply, and readers see the record unchanged")
    func inFlightIsFenced() throws {
        try Self.withStorages { ours, theirs in
            #expect(try Self.send(theirs, try Self.attempt(theirs, value: 5, from: 0).0).succeeded == true)
            let (txn, stamp) = try Self.attempt(ours, value: 6, from: 1)
            #expect(try ours.settle(witness: txn.compare[0].key, comparedVersion: 1, stamp: stamp) == .fenced)
            let fenced = try Self.read(ours)
            #expect(fenced.value == [5] && fenced.version == 2, "the fence moves the version, not the value")
            // The lost txn turns up after all: its compare can no longer hold.
            #expect(try Self.send(ours, txn).succeeded != true)
            #expect(try Self.read(ours).value == [5])
            // Settled again, it is still not applied (a new settlement knows no fence of its
            // own, so the earlier fence counts as another writer's).
            #expect(try ours.settle(witness: txn.compare[0].key, comparedVersion: 1, stamp: stamp) == .lost)
        }
    }

    @Test("an insert that never arrived: fenced by a tombstone, which reads as absent")
    func inFlightInsertIsFenced() throws {
        try Self.withStorages { ours, _ in
            let (txn, stamp) = try Self.attempt(ours, value: 1, from: 0)
            #expect(try ours.settle(witness: txn.compare[0].key, comparedVersion: 0, stamp: stamp) == .fenced)
            #expect(try Self.read(ours).value == nil)
            #expect(try Self.send(ours, txn).succeeded != true)
        }
    }

    @Test("another writer moved the witness first, with the same bytes: lost, not mistaken for ours")
    func anotherWriterWins() throws {
        try Self.withStorages { ours, theirs in
            #expect(try Self.send(theirs, try Self.attempt(theirs, value: 5, from: 0).0).succeeded == true)
            // Both increment from version 1 to the same value; theirs lands.
            let (txn, stamp) = try Self.attempt(ours, value: 6, from: 1)
            #expect(try Self.send(theirs, try Self.attempt(theirs, value: 6, from: 1).0).succeeded == true)
            #expect(try ours.settle(witness: txn.compare[0].key, comparedVersion: 1, stamp: stamp) == .lost)
            #expect(try Self.send(ours, txn).succeeded != true)
        }
    }

    // MARK: - Through the commit path, a txn lost by a proxy

    /// A configuration on a fresh prefix whose client talks to the cluster through a lossy proxy.
    static func withProxy(_ body: (EtcdConfiguration, LossyProxy) throws -> Void) throws {
        let cluster = try EtcdCluster.shared()
        let proxy = LossyProxy(upstream: cluster.endpoints[0])
        defer { proxy.stop() }
        var configuration = cluster.configuration(prefix: "lossy-\(UUID().uuidString)")
        configuration.endpoints = [proxy.endpoint]
        try body(configuration, proxy)
    }

    /// Sets Ann's age and saves: the version the save left her at, and the conflicts it met.
    static func saveAge(_ objects: ObjectStore, _ id: ObjectID, _ age: Int64) throws -> (version: UInt64, conflicts: Int) {
        let context = objects.newBackgroundContext(name: "saver")
        return try context.performAndWait {
            let person = try context.existingObject(with: id)
            person["age"] = .int(age)
            try context.save()
            return (person.committedVersion, context.lastSaveConflicts.count)
        }
    }

    /// Saves Ann (age 30) at age 31 through a proxy armed with `fault`, then reads her back
    /// elsewhere: the save's version and conflicts, and the age and version stored; `after`
    /// runs before the read.
    static func saveAge31(through fault: LossyProxy.Fault, after: (LossyProxy) throws -> Void = { _ in })
        throws -> (saved: (version: UInt64, conflicts: Int), age: AttributeValue, version: UInt64) {
        var result: (saved: (version: UInt64, conflicts: Int), age: AttributeValue, version: UInt64)?
        try withProxy { configuration, proxy in
            try withEtcdStore(configuration) { objects, _ in
                let id = try insertPerson(objects, "Ann", 30)
                proxy.arm(fault)
                let saved = try saveAge(objects, id, 31)
                #expect(proxy.fired == 1)
                try after(proxy)
                let reader = objects.newBackgroundContext(name: "reader")
                let (age, version) = try reader.performAndWait {
                    let person = try reader.existingObject(with: id)
                    return (person["age"], person.committedVersion)
                }
                result = (saved, age, version)
            }
        }
        return try #require(result)
    }

    /// Whether a held txn's late reply says it did not apply.
    static func failedLate(_ proxy: LossyProxy) -> Bool {
        let late = String(decoding: proxy.releaseHeld(), as: UTF8.self)
        return late.contains("\"header\"") && !late.contains("\"succeeded\":true")
    }

    @Test("a save that applied but whose reply was lost is acknowledged once, not sent again")
    func saveWithLostReply() throws {
        let outcome = try Self.saveAge31(through: .dropReply)
        #expect(outcome.saved.version == 2, "one write of the record: the txn was settled as applied, not resent")
        #expect(outcome.age == .int(31) && outcome.version == 2)
    }

    @Test("a save whose txn never arrived is fenced and made again; arriving late, the txn cannot apply")
    func saveWithHeldRequest() throws {
        let outcome = try Self.saveAge31(through: .holdRequest) { proxy in
            #expect(Self.failedLate(proxy), "the held txn applied late")
        }
        #expect(outcome.saved.version == 3 && outcome.saved.conflicts == 0, "the fence, then the save again: \(outcome.saved)")
        #expect(outcome.age == .int(31) && outcome.version == 3)
    }

    @Test("an unconditioned put, witnessed by the marker: a lost reply is applied once, a held txn fenced")
    func markerWitnessedPut() throws {
        try Self.withProxy { configuration, proxy in
            let records = EtcdKeyValueStore(configuration)
            defer { records.close() }
            try records.put([1], forKey: [7], in: "plain")
            proxy.arm(.dropReply)
            try records.put([2], forKey: [7], in: "plain")
            proxy.arm(.holdRequest)
            try records.put([3], forKey: [7], in: "plain")
            #expect(proxy.fired == 2)
            #expect(Self.failedLate(proxy), "the held put applied late")
            #expect(try records.get([7], in: "plain") == [3])
        }
    }
}
