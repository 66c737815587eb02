import CairnTestSupport
@testable import Contexts
import Foundation
import KVEngine
import Policies
import Testing

/// A delete rule's read of a to-many's members says whether each member's to-one holds the
/// owner's URI byte for byte (`readMembers`' `namesOwnerExactly`), and the cascade then does not
/// compare them again. The claim must be exactly what comparing each member finds: a member
/// naming its owner in other bytes that compare equal as strings (the entity's name with the
/// Kelvin sign, canonically equivalent to `K`) makes it false.
@Suite("Relationships: a cascade's read knows its members name their owner")
struct CascadeOwnerReferenceTests {
    /// Kiosks and their guests.
    static let cafe = "Kiosk"

    static func schema() -> Schema { try! Schema([
        EntityDescription(cafe, attributes: [AttributeDescription("name", .string)], relationships: [
            RelationshipDescription("guests", destination: "Guest", inverse: "cafe", isToMany: true, deleteRule: .cascade),
        ]),
        EntityDescription("Guest", attributes: [AttributeDescription("name", .string)], relationships: [
            RelationshipDescription("cafe", destination: cafe, inverse: "guests"),
        ]),
    ]) }

    /// One or two kiosks; the first one's guests, some (when `decomposed`) rewritten in the
    /// store to name it with the Kelvin sign for its `K` (the API writes only canonical
    /// references), and guests of no kiosk.
    static func seed(_ store: TestStore, random: inout SeededRandom, decomposed: Bool) throws -> ObjectID {
        let context = store.objects.newBackgroundContext(name: "seed")
        let (kiosk, rewritten) = try context.performAndWait { () throws -> (ObjectID, [(UInt64, String)]) in
            let kiosks = (0..<Int.random(in: 1...2, using: &random)).map { index in
                let kiosk = context.insert(entity: cafe)
                kiosk["name"] = .string("k\(index)")
                return kiosk
            }
            var guests: [(StoredObject, Bool)] = []
            for index in 0..<Int.random(in: 1...40, using: &random) {
                let guest = context.insert(entity: "Guest")
                guest["name"] = .string("g\(index)")
                let kind = Int.random(in: 0..<8, using: &random)
                if kind != 0 { guest.setDestination(kiosks[0], of: "cafe") }
                guests.append((guest, kind == 1 && decomposed))
            }
            try context.save()
            return (kiosks[0].objectID, try guests.filter(\.1).map { (try #require($0.0.objectID.primaryKey), $0.0.name) })
        }
        let reference = kiosk.uriString
        let other = "cairn://\u{212A}iosk/p\(try #require(kiosk.primaryKey))"
        #expect(other == reference && Array(other.utf8) != Array(reference.utf8))
        if !rewritten.isEmpty {
            var batch = WriteBatch()
            for (key, name) in rewritten {
                batch.put(ValueCodec.encode(["name": .string(name), "cafe": .string(other)]), forKey: StorageMapping.key(for: key), in: "entity:Guest")
            }
            try store.objects.store.commit(batch)
        }
        return kiosk
    }

    @Test("the read's claim is each member's comparison with the owner's URI, on random stores")
    func theClaimIsTheComparison() throws {
        var random = SeededRandom(seed: 0xCAFE)
        var claimed = 0, denied = 0
        for round in 0..<24 {
            let store = try TestStore(schema: Self.schema())
            defer { store.close() }
            let id = try Self.seed(store, random: &random, decomposed: round % 2 == 1)
            let context = store.objects.newBackgroundContext(name: "A")
            try context.performAndWait {
                let owner = try context.existingObject(with: id)
                let relationship = try #require(owner.layout.relationships.first { $0.name == "guests" })
                let read = try context.readMembers(of: owner, relationship)
                let position = try #require(try context.core.entity(named: "Guest").layout.relationship(named: "cafe")?.storagePosition)
                let reference = AttributeValue.string(owner.storedID.uriString)
                let compared = read.members.allSatisfy { $0.value(at: position, equals: reference) }
                if read.namesOwnerExactly {
                    #expect(compared, "round \(round)")
                    claimed += 1
                } else if !compared {
                    denied += 1
                }
            }
            // The cascade deletes every guest of the kiosk, whichever way each names it.
            let counting = store.objects.newBackgroundContext(name: "count")
            let guests = try counting.performAndWait {
                try counting.fetch(FetchRequest(entityName: "Guest", predicate: .references("cafe", id))).count
            }
            let deleting = store.objects.newBackgroundContext(name: "B")
            try deleting.performAndWait {
                deleting.delete(try deleting.existingObject(with: id))
                #expect(deleting.deletedObjects.count == guests + 1, "round \(round)")
                try deleting.save()
            }
            let left = try counting.performAndWait {
                try counting.fetch(FetchRequest(entityName: "Guest", predicate: .references("cafe", id))).count
            }
            #expect(left == 0, "round \(round)")
        }
        #expect(claimed > 0 && denied > 0)
    }
}
