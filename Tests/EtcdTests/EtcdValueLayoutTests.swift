import Contexts
@testable import EtcdStorage
import Foundation
import Testing

/// The bytes an entity record has on etcd (a stamp in front of the value, tombstones) and the
/// txn a plan makes of a batch (which key witnesses it). Frozen: stores on a cluster hold them.
/// No cluster needed.
@Suite("etcd value layout")
struct EtcdValueLayoutTests {
    static let storage = UUID(uuid: (0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF))
    static let stamp = EtcdWriteStamp(storage: storage, attempt: 0x0102_0304_0506_0708)
    static let stampBytes: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF,
                                      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]
    let layout = EtcdKeyLayout(prefix: "p")

    @Test("a stamp is the storage's UUID then the attempt number, big-endian")
    func stampBytes() {
        #expect(Self.stamp.bytes == Self.stampBytes)
        #expect(Self.stamp.isFrom(EtcdWriteStamp.identity(Self.storage)))
        #expect(!Self.stamp.isFrom(EtcdWriteStamp.identity(UUID())))
        #expect(EtcdWriteStamp(storage: Self.storage, attempt: 1) != EtcdWriteStamp(storage: Self.storage, attempt: 2))
    }

    @Test("an entity record is 0x02, the stamp, the value; a tombstone 0x03 and the stamp; other tables hold values as they are")
    func storedForms() throws {
        let live = layout.stored([0xAB, 0xCD], in: "entity:Person", stamp: Self.stamp)
        #expect(Array(live) == [0x02] + Self.stampBytes + [0xAB, 0xCD])
        #expect(try layout.value(live, in: "entity:Person", key: Data()).map(Array.init) == [0xAB, 0xCD])
        #expect(EtcdKeyLayout.stamp(of: live) == Self.stamp)
        #expect(!EtcdKeyLayout.isTombstone(live))

        let tombstone = EtcdKeyLayout.tombstone(Self.stamp)
        #expect(Array(tombstone) == [0x03] + Self.stampBytes)
        #expect(try layout.value(tombstone, in: "entity:Person", key: Data()) == nil)
        #expect(EtcdKeyLayout.isTombstone(tombstone))
        #expect(EtcdKeyLayout.stamp(of: tombstone) == Self.stamp)

        #expect(Array(layout.stored([0xAB], in: "index:Person:name", stamp: Self.stamp)) == [0xAB])
        #expect(Array(EtcdKeyLayout.markerValue(Self.stamp)) == [0x02] + Self.stampBytes)
    }

    @Test("an unstamped, cut-short or older-layout entity record is a corrupt-record error, never absent nor the wrong bytes")
    func damagedRecords() throws {
        let unstamped: [[UInt8]] = [[], [0x00, 0xAB], [0x01], [0x02] + Array(Self.stampBytes.prefix(10)), [0x07] + Self.stampBytes]
        for stored in unstamped {
            #expect(EtcdKeyLayout.stamp(of: Data(stored)) == nil, "\(stored)")
        }
        for stored in unstamped + [[0x03] + Self.stampBytes + [0xAB]] {
            do {
                _ = try layout.value(Data(stored), in: "entity:Person", key: Data("p/entity:Person".utf8))
                Issue.record("\(stored) read as a value or as absent")
            } catch {
                #expect(error.code == .corrupt, "\(stored)")
                #expect(error.message.contains("entity:Person"), "\(error.message)")
            }
        }
        #expect(try layout.value(Data([0x00, 0xAB]), in: "index:Person:name", key: Data()).map(Array.init) == [0x00, 0xAB])
    }

    @Test("a fence's restamped record keeps what readers see: the value, or a tombstone")
    func restamped() throws {
        let fence = EtcdWriteStamp(storage: Self.storage, attempt: 9)
        let live = layout.stored([1, 2, 3], in: "entity:Person", stamp: Self.stamp)
        let fenced = EtcdKeyLayout.restamped(live, with: fence)
        #expect(try layout.value(fenced, in: "entity:Person", key: Data()).map(Array.init) == [1, 2, 3])
        #expect(EtcdKeyLayout.stamp(of: fenced) == fence)
        #expect(EtcdKeyLayout.restamped(EtcdKeyLayout.tombstone(Self.stamp), with: fence) == EtcdKeyLayout.tombstone(fence))
        #expect(EtcdKeyLayout.restamped(nil, with: fence) == EtcdKeyLayout.tombstone(fence))
    }

    @Test("a save of one record is witnessed by it: no marker in its txn, its put stamped")
    func recordWitnessesItsTxn() throws {
        var batch = StorageBatch()
        batch.put([7], forKey: [0, 1], in: "entity:Person", if: .version(4))
        batch.putUnversioned([], forKey: [9], in: "index:Person:age")
        let plan = try EtcdTxnPlan(batch.takeOperations(), layout: layout)
        #expect(plan.witness == 0)
        #expect(plan.txnOps == 2)
        let txn = plan.txn(stamp: Self.stamp, marker: nil, layout: layout)
        #expect(txn.compare.map(\.key) == [layout.key([0, 1], in: "entity:Person")])
        #expect(txn.compare.map(\.version) == [WireInt(4)])
        #expect(txn.success.compactMap { $0.request_put?.value }.map(Array.init) == [[0x02] + Self.stampBytes + [7], []])
        #expect(txn.failure.count == 1)
    }

    @Test("a save with no conditioned entity record write is witnessed by the marker")
    func markerWitnessesTheRest() throws {
        for operations in [{ (batch: inout StorageBatch) in batch.put([1], forKey: [1], in: "default", if: .absent) },
                           { (batch: inout StorageBatch) in batch.put([1], forKey: [1], in: "entity:Person", if: nil) },
                           { (batch: inout StorageBatch) in
                               batch.require(.version(2), forKey: [1], in: "entity:Person")
                               batch.put([1], forKey: [2], in: "meta:x", if: nil)
                           }] {
            var batch = StorageBatch()
            operations(&batch)
            let plan = try EtcdTxnPlan(batch.takeOperations(), layout: layout)
            #expect(plan.witness == nil)
            let marker = layout.commitMarker(Self.storage)
            let txn = plan.txn(stamp: Self.stamp, marker: (marker, 3), layout: layout)
            #expect(txn.compare.last?.key == marker && txn.compare.last?.version == WireInt(3))
            #expect(txn.success.last?.request_put?.key == marker)
            #expect((txn.success.last?.request_put?.value).map { Array($0) } == [0x02] + Self.stampBytes)
            #expect(plan.txnOps == max(txn.compare.count, txn.success.count))
        }
    }
}
