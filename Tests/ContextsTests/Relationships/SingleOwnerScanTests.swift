import CairnTestSupport
@testable import Contexts
import KVEngine
import Policies
import Testing

/// A delete rule's read of one owner's members (`readMembers`) scans the members' table between
/// the owner's first and last members' keys, and gives that up for the walk when the owner's
/// members turn out few among the records read (`MemberPrefetch.GiveUp`). Whichever way it
/// goes, it must read what the owner's own fetch reads, in that order.
@Suite("Relationships: one owner's members read by a bounded scan or the walk")
struct SingleOwnerScanTests {
    @Test("on random stores (members in runs, clustered, sparse, or none) the read is the fetch's")
    func theReadIsTheFetchs() throws {
        var random = SeededRandom(seed: 0x5CA7)
        for round in 0..<24 {
            try withOrgStore { store in
                let seeding = store.context("seed")
                // One or two departments; people saved in runs of random lengths, each run of
                // one department or of none, so that a department's members are clustered,
                // spread, or sparse between others.
                let departments = try seeding.performAndWait { () throws -> [ObjectID] in
                    let departments = (0..<Int.random(in: 1...2, using: &random)).map {
                        insert("Department", ["name": "d\($0)"], in: seeding)
                    }
                    var made = 0
                    for _ in 0..<Int.random(in: 1...12, using: &random) {
                        let owner = Int.random(in: -1..<departments.count, using: &random)
                        for _ in 0..<Int.random(in: 1...(round % 3 == 0 ? 4 : 150), using: &random) {
                            let person = insert("Person", ["name": "p\(made)"], in: seeding)
                            if owner >= 0 { person.setDestination(departments[owner], of: "department") }
                            made += 1
                        }
                    }
                    try seeding.save()
                    return departments.map(\.objectID)
                }
                for id in departments {
                    let reading = store.context("read"), fetching = store.context("fetch")
                    let read = try reading.performAndWait { () throws -> [ObjectID] in
                        let owner = try reading.existingObject(with: id)
                        let relationship = try #require(owner.layout.relationships.first { $0.name == "employees" })
                        let read = try reading.readMembers(of: owner, relationship)
                        #expect(read.wholeAt != nil, "the prefetch answers: the context holds no member")
                        return read.members.map(\.objectID)
                    }
                    let fetched = try fetching.performAndWait { () throws -> [ObjectID] in
                        let owner = try fetching.existingObject(with: id)
                        let relationship = try #require(owner.layout.relationships.first { $0.name == "employees" })
                        return try fetching.fetch(owner.memberRequest(relationship)).map(\.objectID)
                    }
                    #expect(read == fetched, "round \(round)")
                }
            }
        }
    }

    @Test("a member whose record does not decode fails the cascade's save with corruptValue naming it, wherever it lies")
    func aCorruptMemberFailsTheCascade() throws {
        for corrupt in [0, 5, 9] {
            try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
                let seeding = store.context("seed")
                let (department, member) = try seeding.performAndWait { () throws -> (ObjectID, ObjectID) in
                    let department = insert("Department", ["name": "d"], in: seeding)
                    let people = (0..<10).map { insert("Person", ["name": "p\($0)"], in: seeding) }
                    for person in people { person.setDestination(department, of: "department") }
                    try seeding.save()
                    return (department.objectID, people[corrupt].objectID)
                }
                var batch = WriteBatch()
                batch.put([0x01, 0x09], forKey: StorageMapping.key(for: try #require(member.primaryKey)), in: "entity:Person")
                try store.objects.store.commit(batch)
                let context = store.context("A")
                try context.performAndWait {
                    context.delete(try context.existingObject(with: department))
                    do {
                        try context.save()
                        Issue.record("expected corruptValue")
                    } catch ContextError.corruptValue(let reported, let error) {
                        #expect(reported == member && error.problem == .lengthOutOfRange(9))
                    }
                }
            }
        }
    }
}
