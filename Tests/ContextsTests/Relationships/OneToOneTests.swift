import Contexts
import Policies
import Testing

/// People and desks: `Person.desk` and `Desk.owner` are a one-to-one pair (both ends stored);
/// `Person.spouse` is its own inverse. Every change keeps both ends equal, in the context at
/// once and in the store after every save, under every policy.
@Suite("Relationships: one-to-one")
struct OneToOneTests {
    static func schema(deskRule: RelationshipDescription.DeleteRule = .nullify) -> Schema {
        do {
            return try Schema([
                EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("desk", destination: "Desk", inverse: "owner", deleteRule: deskRule),
                    RelationshipDescription("spouse", destination: "Person", inverse: "spouse"),
                ]),
                EntityDescription("Desk", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("owner", destination: "Person", inverse: "desk"),
                ]),
            ])
        } catch {
            fatalError("desk schema: \(error)")
        }
    }

    struct Seed {
        let ann, bob, carl, d1, d2: ObjectID
    }

    /// Ann, Bob and Carl; desks D1 and D2; Ann at D2, no one married; committed.
    static func seed(_ store: OrgStore) throws -> Seed {
        let context = store.context("seed")
        return try context.performAndWait {
            let people = ["Ann", "Bob", "Carl"].map { insert("Person", ["name": $0], in: context) }
            let desks = ["D1", "D2"].map { insert("Desk", ["name": $0], in: context) }
            people[0].setDestination(desks[1], of: "desk")
            try context.save()
            return Seed(ann: people[0].objectID, bob: people[1].objectID, carl: people[2].objectID,
                        d1: desks[0].objectID, d2: desks[1].objectID)
        }
    }

    /// The stored pairs as "person-desk" names, sorted; read by a fresh context.
    static func storedDesks(_ store: OrgStore, _ seed: Seed) throws -> [String] {
        let context = store.context("reader")
        return try context.performAndWait {
            var pairs: [String] = []
            for id in [seed.ann, seed.bob, seed.carl] {
                let person = try context.existingObject(with: id)
                if let desk = person.destination(of: "desk") {
                    #expect(desk.destination(of: "owner") === person)
                    pairs.append("\(person.name)-\(desk.name)")
                }
            }
            return pairs.sorted()
        }
    }

    @Test("the schema takes one-to-one pairs and a relationship that is its own inverse")
    func schemaAccepts() throws {
        let schema = Self.schema()
        #expect(schema.entity(named: "Person")?.relationship(named: "spouse")?.inverse == "spouse")
        #expect(schema.entity(named: "Desk")?.relationship(named: "owner")?.isToMany == false)
    }

    @Test("setting either end sets the other at once, and the old partners of both ends lose theirs")
    func bothEndsFollow() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let ann = try context.existingObject(with: seed.ann), bob = try context.existingObject(with: seed.bob)
                let d1 = try context.existingObject(with: seed.d1), d2 = try context.existingObject(with: seed.d2)
                bob.setDestination(d2, of: "desk")  // D2 was Ann's
                #expect(d2.destination(of: "owner") === bob)
                #expect(ann.destination(of: "desk") == nil)
                d1.setDestination(ann, of: "owner")  // from the other end
                #expect(ann.destination(of: "desk") === d1)
                ann.setDestination(d2, of: "desk")  // Ann takes Bob's desk: Bob and D1 are left empty
                #expect(d2.destination(of: "owner") === ann)
                #expect(bob.destination(of: "desk") == nil)
                #expect(d1.destination(of: "owner") == nil)
                #expect(Set(context.updatedObjects.map(\.objectID)) == [seed.ann, seed.bob, seed.d1, seed.d2])
                bob.setDestination(d1, of: "desk")
                try context.save()
            }
            #expect(try Self.storedDesks(store, seed) == ["Ann-D2", "Bob-D1"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a reference written as a value (the subscript) moves the inverse too")
    func subscriptFollows() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let bob = try context.existingObject(with: seed.bob), d2 = try context.existingObject(with: seed.d2)
                bob["desk"] = .string(seed.d2.uriString)
                #expect(d2.destination(of: "owner") === bob)
                #expect(try context.existingObject(with: seed.ann).destination(of: "desk") == nil)
                d2["owner"] = .null
                #expect(bob.destination(of: "desk") == nil)
                bob["desk"] = .string(seed.d1.uriString)
                try context.save()
            }
            #expect(try Self.storedDesks(store, seed) == ["Bob-D1"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a relationship that is its own inverse pairs two objects of one entity")
    func selfInverse() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let ann = try context.existingObject(with: seed.ann), bob = try context.existingObject(with: seed.bob)
                let carl = try context.existingObject(with: seed.carl)
                ann.setDestination(bob, of: "spouse")
                #expect(bob.destination(of: "spouse") === ann)
                carl.setDestination(bob, of: "spouse")
                #expect(ann.destination(of: "spouse") == nil)
                #expect(bob.destination(of: "spouse") === carl)
                try context.save()
            }
            let reader = store.context("reader")
            try reader.performAndWait { () throws -> Void in
                #expect(try reader.existingObject(with: seed.bob).destination(of: "spouse")?.objectID == seed.carl)
                #expect(try reader.existingObject(with: seed.ann).destination(of: "spouse") == nil)
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("delete rules: nullify empties the partner, cascade deletes it, deny fails the save and writes nothing",
          arguments: [RelationshipDescription.DeleteRule.nullify, .cascade, .deny])
    func deleteRules(_ rule: RelationshipDescription.DeleteRule) throws {
        try withOrgStore(schema: Self.schema(deskRule: rule)) { store in
            let seed = try Self.seed(store)
            let context = store.context("editor")
            let denied = try context.performAndWait { () throws -> Bool in
                let ann = try context.existingObject(with: seed.ann)
                context.delete(ann)
                let d2 = try context.existingObject(with: seed.d2)
                switch rule {
                case .nullify: #expect(d2.destination(of: "owner") == nil)
                case .cascade: #expect(Set(context.deletedObjects.map(\.objectID)) == [seed.ann, seed.d2])
                default: break
                }
                do {
                    try context.save()
                    return false
                } catch let error as ValidationError {
                    #expect(error.problem == .deleteDenied(destinations: 1))
                    return true
                }
            }
            #expect(denied == (rule == .deny))
            #expect(try (store.committed(seed.ann) == nil) == !denied)
            #expect(try (store.committed(seed.d2) == nil) == (rule == .cascade))
            if rule == .nullify { #expect(try store.committed(seed.d2)?.values.value(of: "owner") == .null) }
            #expect(try store.problems() == [])
        }
    }

    @Test("a delete takes in the partner the store holds now, though this context read it before it was paired")
    func deleteFromAnOlderRead() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let a = store.context("A", policy: .objectTrump), b = store.context("B")
            try a.performAndWait { _ = try a.existingObject(with: seed.d1) }
            try b.performAndWait {
                try b.existingObject(with: seed.carl).setDestination(try b.existingObject(with: seed.d1), of: "desk")
                try b.save()
            }
            try a.performAndWait {
                a.delete(try a.existingObject(with: seed.d1))  // A still sees D1 without an owner
                try a.save()
            }
            #expect(try store.committed(seed.carl)?.values.value(of: "desk") == .null)
            #expect(try store.problems() == [])
        }
    }

    @Test("one person given two desks by two contexts: the policy settles the person, the losing desk is emptied",
          arguments: policyNames)
    func personGivenTwoDesks(_ policy: String) throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let (result, _) = try RelationshipConflictTests.race(store, policy: policy, read: seed.bob, theirs: { b in
                try b.existingObject(with: seed.bob).setDestination(try b.existingObject(with: seed.d2), of: "desk")
            }, ours: { a in
                try a.existingObject(with: seed.bob).setDestination(try a.existingObject(with: seed.d1), of: "desk")
            })
            #expect(result == RelationshipConflictTests.outcome(policy))
            let oursWins = policy == "objectTrump" || policy == "overwrite"
            #expect(try Self.storedDesks(store, seed) == (oursWins ? ["Bob-D1"] : ["Bob-D2"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("one desk given to two people by two contexts: the policy settles the desk, the losing person is emptied",
          arguments: policyNames)
    func deskGivenTwice(_ policy: String) throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let (result, _) = try RelationshipConflictTests.race(store, policy: policy, read: seed.d1, theirs: { b in
                try b.existingObject(with: seed.bob).setDestination(try b.existingObject(with: seed.d1), of: "desk")
            }, ours: { a in
                try a.existingObject(with: seed.carl).setDestination(try a.existingObject(with: seed.d1), of: "desk")
            })
            #expect(result == RelationshipConflictTests.outcome(policy))
            let oursWins = policy == "objectTrump" || policy == "overwrite"
            #expect(try Self.storedDesks(store, seed) == (oursWins ? ["Ann-D2", "Carl-D1"] : ["Ann-D2", "Bob-D1"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("a pair merged in under an unsaved change: the save empties the partner the store gave the changed end")
    func mergedUnderUnsavedChange() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let viewer = store.context("viewer"), editor = store.context("editor")
            try viewer.performAndWait {
                try viewer.existingObject(with: seed.bob).setDestination(try viewer.existingObject(with: seed.d1), of: "desk")
            }
            let note = try editor.performAndWait {
                try editor.existingObject(with: seed.d2).setDestination(try editor.existingObject(with: seed.bob), of: "owner")
                try editor.save()
                return try #require(editor.lastDidSaveNotification)
            }
            try viewer.performAndWait {
                try viewer.mergeChanges(fromContextDidSave: note)
                try viewer.save()
            }
            let pairs = try Self.storedDesks(store, seed)
            #expect(pairs == ["Bob-D1"] || pairs == ["Bob-D2"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a child context's pair reaches the store through its parent")
    func childPushesPairs() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let parent = store.context("parent")
            try parent.performAndWait {
                let child = parent.newChildContext(name: "child")
                try child.performAndWait {
                    try child.existingObject(with: seed.carl).setDestination(try child.existingObject(with: seed.d2), of: "desk")
                    try child.save()
                }
                #expect(try parent.existingObject(with: seed.ann).destination(of: "desk") == nil)
                try parent.save()
            }
            #expect(try Self.storedDesks(store, seed) == ["Carl-D2"])
            #expect(try store.problems() == [])
        }
    }
}
