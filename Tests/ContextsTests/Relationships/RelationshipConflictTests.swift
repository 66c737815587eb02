import Contexts
import Policies
import Testing

/// The spec's "Conflicts on relationships", every row under the five built-in policies. B saves
/// first, A second from an older read; after every save the stored graph must be consistent.
@Suite("Relationships: conflicts under every policy")
struct RelationshipConflictTests {
    /// A's save outcome per policy: "ok" or "conflict".
    static func outcome(_ policy: String) -> String { policy == "error" ? "conflict" : "ok" }

    /// A reads `read` (so its later save is from an older read) and runs `first`; B runs `theirs`
    /// and saves; A runs `ours` and saves under `policy`. A's outcome, and A for checking what it holds.
    static func race(
        _ store: OrgStore, policy: String, read: ObjectID, first: (ObjectContext) throws -> Void = { _ in },
        theirs: (ObjectContext) throws -> Void, ours: (ObjectContext) throws -> Void = { _ in }
    ) throws -> (outcome: String, context: ObjectContext) {
        let a = store.context("A", policy: policiesByName[policy]!), b = store.context("B")
        try a.performAndWait {
            _ = try a.existingObject(with: read)
            try first(a)
        }
        try b.performAndWait {
            try theirs(b)
            try b.save()
        }
        let outcome = try a.performAndWait {
            try ours(a)
            return try save(a)
        }
        return (outcome, a)
    }

    /// Runs A's save, returning "ok" or "conflict" (a MergeError).
    static func save(_ context: ObjectContext) throws -> String {
        do {
            try context.save()
            return "ok"
        } catch is MergeError {
            return "conflict"
        }
    }

    @Test("a move is a change of both ends: a rename of the old department from an older read conflicts on it",
          arguments: policyNames)
    func moveVersusRename(_ policy: String) throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let (result, _) = try Self.race(store, policy: policy, read: org.eng, theirs: { b in
                try b.existingObject(with: org.ann).setDestination(try b.existingObject(with: org.ops), of: "department")
            }, ours: { a in
                try a.existingObject(with: org.eng)["name"] = .string("R&D")
            })
            #expect(result == Self.outcome(policy))
            let expectedName = ["storeTrump", "objectTrump", "overwrite"].contains(policy) ? "R&D" : "Eng"
            #expect(try store.committed(org.eng)?.values.value(of: "name") == .string(expectedName))
            #expect(try store.storedMembers(of: org.eng) == ["Bob"])
            #expect(try store.storedMembers(of: org.ops) == ["Ann"])
            #expect(try store.problems() == [])
        }
    }

    @Test("two contexts add different members to one to-many: a conflict under error, both additions kept under the others",
          arguments: policyNames)
    func concurrentAdditions(_ policy: String) throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let (result, a) = try Self.race(store, policy: policy, read: org.ops, theirs: { b in
                try b.existingObject(with: org.ops).addMember(try b.existingObject(with: org.ann), to: "employees")
            }, ours: { a in
                try a.existingObject(with: org.ops).addMember(try a.existingObject(with: org.bob), to: "employees")
            })
            #expect(result == Self.outcome(policy))
            if result == "conflict" { #expect(a.performAndWait { a.lastSaveConflicts.map(\.kind) } == [.updateUpdate]) }
            #expect(try store.storedMembers(of: org.ops) == (policy == "error" ? ["Ann"] : ["Ann", "Bob"]))
            #expect(try store.storedMembers(of: org.eng) == (policy == "error" ? ["Bob"] : []))
            #expect(try store.problems() == [])
        }
    }

    @Test("a to-one moved by two contexts is resolved like an attribute changed on both sides", arguments: policyNames)
    func toOneMovedTwice(_ policy: String) throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let lab = try store.context("seed").performAndWait { () throws -> ObjectID in
                let context = store.context("lab")
                return try context.performAndWait {
                    let lab = insert("Department", ["name": "Lab"], in: context)
                    try context.save()
                    return lab.objectID
                }
            }
            let (result, _) = try Self.race(store, policy: policy, read: org.ann, theirs: { b in
                try b.existingObject(with: org.ann).setDestination(try b.existingObject(with: org.ops), of: "department")
            }, ours: { a in
                try a.existingObject(with: org.ann).setDestination(try a.existingObject(with: lab), of: "department")
            })
            #expect(result == Self.outcome(policy))
            let oursWins = policy == "objectTrump" || policy == "overwrite"
            #expect(try store.storedMembers(of: oursWins ? lab : org.ops) == ["Ann"])
            #expect(try store.storedMembers(of: oursWins ? org.ops : lab) == [])
            #expect(try store.storedMembers(of: org.eng) == ["Bob"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a reference to an object deleted in the store is an update/delete conflict on it: the store's side removes the reference, ours re-inserts it",
          arguments: policyNames)
    func referenceToDeletedDestination(_ policy: String) throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            var cy: ObjectID?
            let (result, a) = try Self.race(store, policy: policy, read: org.ops, theirs: { b in
                b.delete(try b.existingObject(with: org.ops))
            }, ours: { a in
                let person = insert("Person", ["name": "Cy"], in: a)
                person.setDestination(try a.existingObject(with: org.ops), of: "department")
                cy = person.objectID
            })
            #expect(result == Self.outcome(policy))
            if result == "conflict" { #expect(a.performAndWait { a.lastSaveConflicts.map(\.kind) } == [.updateDelete]) }
            let saved = try a.performAndWait { try #require(cy.map { a.object(with: $0).objectID }) }
            switch policy {
            case "error":
                #expect(try store.committed(saved) == nil)
            case "storeTrump", "rollback":
                #expect(try store.committed(org.ops) == nil)
                #expect(try store.committed(saved)?.values.value(of: "department") == .null)
            default:  // objectTrump, overwrite: the department is re-inserted with ours, keeping its ID
                #expect(try store.committed(org.ops)?.values.value(of: "name") == .string("Ops"))
                #expect(try store.storedMembers(of: org.ops) == ["Cy"])
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("a delete of a department against a store update that added a member: a delete that wins nullifies that member too",
          arguments: policyNames)
    func deleteVersusAddedMember(_ policy: String) throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let (result, a) = try Self.race(store, policy: policy, read: org.ops, first: { a in
                a.delete(try a.existingObject(with: org.ops))
            }, theirs: { b in
                try b.existingObject(with: org.ops).addMember(try b.existingObject(with: org.ann), to: "employees")
            })
            #expect(result == Self.outcome(policy))
            if result == "conflict" { #expect(a.performAndWait { a.lastSaveConflicts.map(\.kind) } == [.deleteUpdate]) }
            switch policy {
            case "error", "storeTrump", "rollback":  // failed, or the delete is cancelled
                #expect(try store.storedMembers(of: org.ops) == ["Ann"])
            default:  // the delete wins, and Ann, added meanwhile, is nullified in the same commit
                #expect(try store.committed(org.ops) == nil)
                #expect(try store.committed(org.ann)?.values.value(of: "department") == .null)
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("a cascade that wins against a store update deletes the member that update added", arguments: ["objectTrump", "overwrite"])
    func cascadeVersusAddedMember(_ policy: String) throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
            let org = try store.seedOrg()
            let (result, _) = try Self.race(store, policy: policy, read: org.ops, first: { a in
                a.delete(try a.existingObject(with: org.ops))
            }, theirs: { b in
                try b.existingObject(with: org.ops).addMember(try b.existingObject(with: org.ann), to: "employees")
            })
            #expect(result == "ok")
            #expect(try store.committed(org.ops) == nil)
            #expect(try store.committed(org.ann) == nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("a cascade that read its members whole at the delete, against a store update that added one: a winning delete removes it too",
          arguments: policyNames)
    func cascadeOfMembersVersusAddedMember(_ policy: String) throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
            let org = try store.seedOrg()
            var carl: ObjectID? = nil
            let (result, _) = try Self.race(store, policy: policy, read: org.eng, first: { a in
                a.delete(try a.existingObject(with: org.eng))  // A holds no person: Ann and Bob read whole
            }, theirs: { b in
                let added = insert("Person", ["name": "Carl"], in: b)
                added.setDestination(try b.existingObject(with: org.eng), of: "department")
                try b.obtainPermanentIDs(for: [added])
                carl = added.objectID
            })
            #expect(result == Self.outcome(policy))
            switch policy {
            case "error":
                #expect(try store.storedMembers(of: org.eng) == ["Ann", "Bob", "Carl"])
            case "storeTrump", "rollback":  // the delete of Eng is cancelled
                #expect(try store.committed(org.eng) != nil)
                #expect(try store.storedMembers(of: org.eng).contains("Carl"))
            default:
                for id in [org.eng, org.ann, org.bob, carl!] { #expect(try store.committed(id) == nil) }
            }
            #expect(try store.problems() == [])
        }
    }
}

/// A cascade against a store update of a member: the member's delete/update conflict is
/// resolved like any other, and a cancelled delete leaves the member without its deleted owner.
@Suite("Relationships: cascade against a member's update")
struct CascadeConflictTests {
    @Test("the store updated a member the cascade deletes: error fails, a cancelled delete nullifies it, a winning delete removes it",
          arguments: policyNames)
    func cascadeVersusMemberUpdate(_ policy: String) throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
            let org = try store.seedOrg()
            let (result, _) = try RelationshipConflictTests.race(store, policy: policy, read: org.eng, first: { a in
                a.delete(try a.existingObject(with: org.eng))
            }, theirs: { b in
                try b.existingObject(with: org.ann)["name"] = .string("Anne")
            })
            #expect(result == RelationshipConflictTests.outcome(policy))
            #expect(try store.committed(org.bob) == nil || policy == "error")
            switch policy {
            case "error":
                #expect(try store.storedMembers(of: org.eng) == ["Anne", "Bob"])
            case "storeTrump", "rollback":  // Ann's delete is cancelled: she stays, without a department
                #expect(try store.committed(org.eng) == nil)
                #expect(try store.committed(org.ann)?.values.value(of: "name") == .string("Anne"))
                #expect(try store.committed(org.ann)?.values.value(of: "department") == .null)
            default:
                #expect(try store.committed(org.eng) == nil && store.committed(org.ann) == nil)
            }
            #expect(try store.problems() == [])
        }
    }
}
