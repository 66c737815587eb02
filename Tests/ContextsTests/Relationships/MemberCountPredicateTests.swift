import CairnTestSupport
import Contexts
import Policies
import Testing

/// `.hasMembers` and `.memberCount` on a to-many: answered through the inverse to-one's index,
/// and always the same objects as counting each owner's members one by one.
@Suite("Relationships: member-count predicates")
struct MemberCountPredicateTests {
    @Test("hasMembers and memberCount see saved members and pending changes alike")
    func pendingChanges() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let staffed = FetchRequest(entityName: "Department", predicate: .hasMembers("employees"))
                #expect(try context.fetch(staffed).map(\.name) == ["Eng"])
                #expect(try context.count(for: FetchRequest(entityName: "Department", predicate: .memberCount("employees", .equal, 0))) == 1)
                // The count is read from the to-one's index, nulls left out.
                let referencing = FetchRequest(entityName: "Person", predicate: .compare("department", .greaterThan, .string("")))
                #expect(try context.explain(referencing).access == .index(attributes: ["department"]))
                try context.existingObject(with: org.bob).setDestination(try context.existingObject(with: org.ops), of: "department")
                #expect(try context.fetch(staffed).map(\.name).sorted() == ["Eng", "Ops"])
                let carl = insert("Person", ["name": "Carl"], in: context)
                carl.setDestination(try context.existingObject(with: org.ops), of: "department")
                let two = FetchRequest(entityName: "Department", predicate: .memberCount("employees", .greaterThanOrEqual, 2))
                #expect(try context.fetch(two).map(\.name) == ["Ops"])
                context.delete(try context.existingObject(with: org.ann))
                #expect(try context.fetch(FetchRequest(entityName: "Department", predicate: .not(.hasMembers("employees")))).map(\.name) == ["Eng"])
                let hr = insert("Department", ["name": "HR"], in: context)
                hr.addMember(carl, to: "employees")
                #expect(try context.fetch(FetchRequest(entityName: "Department", predicate: .memberCount("employees", .equal, 1),
                                                       sortDescriptors: [.ascending("name")])).map(\.name) == ["HR", "Ops"])
            }
        }
    }

    @Test("objectIn matches the objects named, pending inserts included and deletes left out, also beside an index")
    func objectIn() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let carl = insert("Person", ["name": "Carl"], in: context)
                context.delete(try context.existingObject(with: org.bob))
                let named = FetchPredicate.objectIn([org.ann, org.bob, carl.objectID, org.eng])
                #expect(try context.fetch(FetchRequest(entityName: "Person", predicate: named, sortDescriptors: [.ascending("name")])).map(\.name) == ["Ann", "Carl"])
                // The index serves the reference; the count must still test the IDs.
                let inEng = FetchRequest(entityName: "Person", predicate: .and([.references("department", org.eng), .objectIn([org.bob, carl.objectID])]))
                #expect(try context.explain(inEng).access == .index(attributes: ["department"]))
                #expect(try context.count(for: inEng) == 0)
                #expect(try context.count(for: FetchRequest(entityName: "Person", predicate: .and([.references("department", org.eng), .objectIn([org.ann])]))) == 1)
                #expect(!named.evaluate(["name": .string("Ann")]))
            }
        }
    }

    @Test("a member count on what is no to-many of the entity is a typed error")
    func unknownToMany() throws {
        try withOrgStore { store in
            let context = store.context("A")
            context.performAndWait {
                for (entity, name) in [("Person", "department"), ("Department", "staff"), ("Project", "lead")] {
                    #expect {
                        try context.fetch(FetchRequest(entityName: entity, predicate: .memberCount(name, .greaterThan, 1)))
                    } throws: { error in
                        guard case ContextError.unknownAttribute(entity: entity, attribute: name) = error else { return false }
                        return true
                    }
                }
            }
        }
    }

    /// A random org (some people in no department), random unsaved edits on top, then every
    /// operator and count, alone, negated and combined with an attribute, against the members
    /// counted one owner at a time.
    @Test("every operator and count matches the owners whose members, counted one by one, compare so")
    func sameAsCountingEachOwner() throws {
        let seed = SeededRandom.seed()
        print("MemberCountPredicateTests seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        try withOrgStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let departments = (0..<6).map { insert("Department", ["name": "D\($0)"], in: context) }
                var people: [StoredObject] = []
                for index in 0..<40 {
                    let person = insert("Person", ["name": "P\(index)"], in: context)
                    let pick = Int(random.next(upTo: UInt64(departments.count + 2)))
                    if pick < departments.count { person.setDestination(departments[pick], of: "department") }
                    people.append(person)
                }
                try context.save()
                for _ in 0..<15 {
                    let person = people[Int(random.next(upTo: UInt64(people.count)))]
                    guard !person.isDeleted else { continue }
                    switch random.next(upTo: 3) {
                    case 0: context.delete(person)
                    case 1: person.setDestination(nil, of: "department")
                    default: person.setDestination(departments[Int(random.next(upTo: UInt64(departments.count)))], of: "department")
                    }
                }
                let all = try context.fetch(FetchRequest(entityName: "Department"))
                var counts: [ObjectID: Int] = [:]
                for department in all { counts[department.objectID] = try department.members(of: "employees").count }
                for comparison in FetchPredicate.Operator.allCases {
                    for count in 0...4 {
                        let holds = { (id: ObjectID) in FetchPredicate.compare("n", comparison, .int(Int64(count))).evaluate(["n": .int(Int64(counts[id]!))]) }
                        let predicate = FetchPredicate.memberCount("employees", comparison, count)
                        let cases: [(FetchPredicate, (StoredObject) -> Bool)] = [
                            (predicate, { holds($0.objectID) }),
                            (.not(predicate), { !holds($0.objectID) }),
                            (.and([predicate, .compare("name", .notEqual, .string("D0"))]), { holds($0.objectID) && $0.name != "D0" }),
                        ]
                        for (predicate, expected) in cases {
                            let fetched = Set(try context.fetch(FetchRequest(entityName: "Department", predicate: predicate)).map(\.objectID))
                            #expect(fetched == Set(all.filter(expected).map(\.objectID)), "\(predicate), seed \(seed)")
                        }
                    }
                }
            }
        }
    }
}
