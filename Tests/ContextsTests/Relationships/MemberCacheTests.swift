import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// The member lists a root context keeps with their owners (MemberCache): a prefetch keeps every
/// owner's list, `members(of:)` answers from it while it is current, and every change that can
/// alter a list (the context's own edits, another context's commit, a merge, a refresh, a reset,
/// a query generation moving) makes the next read find the members a fetch finds.
@Suite("Relationships: kept member lists")
struct MemberCacheTests {
    /// The members a fetch (no kept list involved) finds for `owner`, in the fetch's order.
    static func fetched(_ owner: StoredObject, in context: ObjectContext) throws -> [String] {
        try context.fetch(FetchRequest(entityName: "Person", predicate: .references("department", owner.objectID))).map(\.name)
    }

    /// Fetches every department with its employees prefetched; by name.
    static func prefetchDepartments(in context: ObjectContext) throws -> [String: StoredObject] {
        var request = FetchRequest(entityName: "Department")
        request.relationshipKeyPathsForPrefetching = ["employees"]
        return Dictionary(uniqueKeysWithValues: try context.fetch(request).map { ($0.name, $0) })
    }

    /// `members(of:)` and a fetch agree on `owner`'s members, in order; returns them.
    @discardableResult
    static func agreed(_ owner: StoredObject, in context: ObjectContext, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let members = try owner.members(of: "employees").map(\.name)
        #expect(members == (try fetched(owner, in: context)), sourceLocation: sourceLocation)
        return members
    }

    @Test("a prefetch keeps every owner's members (an empty list too) and members(of:) answers with them")
    func prefetchKeepsLists() throws {
        try withOrgStore { store in
            _ = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let departments = try Self.prefetchDepartments(in: context)
                let eng = try #require(departments["Eng"]), ops = try #require(departments["Ops"])
                let keptEng = try #require(context.keptMembers(of: eng, "employees"))
                #expect(keptEng.map(\.name) == ["Ann", "Bob"])
                #expect(context.keptMembers(of: ops, "employees")?.isEmpty == true)
                let members = try eng.members(of: "employees")
                #expect(members.count == keptEng.count && zip(members, keptEng).allSatisfy { $0 === $1 })
                #expect(try Self.fetched(eng, in: context) == ["Ann", "Bob"])
                // A read that missed keeps what it fetched.
                context.reset()
                let again = try context.existingObject(with: eng.objectID)
                #expect(context.keptMembers(of: again, "employees") == nil)
                #expect(try again.members(of: "employees").map(\.name) == ["Ann", "Bob"])
                #expect(context.keptMembers(of: again, "employees")?.map(\.name) == ["Ann", "Bob"])
            }
        }
    }

    @Test("the context's own moves, inserts, deletes and rollback change the lists members(of:) reads")
    func ownChanges() throws {
        try withOrgStore { store in
            _ = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let departments = try Self.prefetchDepartments(in: context)
                let eng = try #require(departments["Eng"]), ops = try #require(departments["Ops"])
                let ann = try #require(try eng.members(of: "employees").first { $0.name == "Ann" })
                ann.setDestination(ops, of: "department")
                #expect(try Self.agreed(eng, in: context) == ["Bob"])
                #expect(try Self.agreed(ops, in: context) == ["Ann"])
                let cy = insert("Person", ["name": "Cy"], in: context)
                eng.addMember(cy, to: "employees")
                #expect(try Self.agreed(eng, in: context) == ["Bob", "Cy"])
                let bob = try #require(try eng.members(of: "employees").first { $0.name == "Bob" })
                context.delete(bob)
                #expect(try Self.agreed(eng, in: context) == ["Cy"])
                context.delete(cy)
                #expect(try Self.agreed(eng, in: context) == [])
                context.rollback()
                #expect(try Self.agreed(eng, in: context) == ["Ann", "Bob"])
                #expect(try Self.agreed(ops, in: context) == [])
                // A save moves the base: the lists read after it are the committed ones.
                ann.setDestination(ops, of: "department")
                try context.save()
                #expect(try Self.agreed(eng, in: context) == ["Bob"])
                #expect(try Self.agreed(ops, in: context) == ["Ann"])
            }
        }
    }

    @Test("another context's save, a merge of it and a refresh reach the lists")
    func changesFromElsewhere() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A"), other = store.context("B")
            let eng = try context.performAndWait { () throws -> StoredObject in
                let eng = try #require(try Self.prefetchDepartments(in: context)["Eng"])
                #expect(try Self.agreed(eng, in: context) == ["Ann", "Bob"])
                return eng
            }
            let note = try other.performAndWait { () throws -> ContextDidSaveNotification? in
                insert("Person", ["name": "Dan"], in: other).setDestination(other.object(with: org.eng), of: "department")
                try other.existingObject(with: org.bob).setDestination(other.object(with: org.ops), of: "department")
                try other.save()
                return other.lastDidSaveNotification
            }
            try context.performAndWait {
                #expect(context.keptMembers(of: eng, "employees") == nil)
                // Bob is registered here, still in Eng in memory: he answers by his own values.
                #expect(try Self.agreed(eng, in: context) == ["Ann", "Bob", "Dan"])
                try context.mergeChanges(fromContextDidSave: try #require(note))
                #expect(try Self.agreed(eng, in: context) == ["Ann", "Dan"])
            }
            try other.performAndWait {
                try other.existingObject(with: org.ann).setDestination(nil, of: "department")
                try other.save()
            }
            try context.performAndWait {
                _ = try Self.agreed(eng, in: context)
                try context.refresh(context.object(with: org.ann), mergeChanges: false)
                #expect(try Self.agreed(eng, in: context) == ["Dan"])
            }
        }
    }

    @Test("a pinned query generation keeps its lists while others save; unpinned, the next read sees their saves")
    func queryGeneration() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A"), other = store.context("B")
            let eng = try context.performAndWait { () throws -> StoredObject in
                try context.setQueryGenerationFrom(.current)
                return try #require(try Self.prefetchDepartments(in: context)["Eng"])
            }
            try other.performAndWait {
                insert("Person", ["name": "Dan"], in: other).setDestination(other.object(with: org.eng), of: "department")
                try other.save()
            }
            try context.performAndWait {
                #expect(context.keptMembers(of: eng, "employees")?.map(\.name) == ["Ann", "Bob"])
                #expect(try Self.agreed(eng, in: context) == ["Ann", "Bob"])
                try context.setQueryGenerationFrom(nil)
                #expect(try Self.agreed(eng, in: context) == ["Ann", "Bob", "Dan"])
            }
        }
    }

    @Test("a child context prefetches through its parent and keeps no list; it reads the parent's unsaved changes")
    func childContext() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let parent = store.context("parent")
            try parent.performAndWait {
                try parent.existingObject(with: org.ann).setDestination(parent.object(with: org.ops), of: "department")
            }
            let child = parent.newChildContext(name: "child")
            try child.performAndWait {
                let departments = try Self.prefetchDepartments(in: child)
                let eng = try #require(departments["Eng"]), ops = try #require(departments["Ops"])
                #expect(child.keptMembers(of: eng, "employees") == nil)
                #expect(try Self.agreed(eng, in: child) == ["Bob"])
                #expect(try Self.agreed(ops, in: child) == ["Ann"])
            }
        }
    }
    @Test("the cache's table finds each owner's list per relationship, through growth, collisions and replacement")
    func ownerListTableAgreesWithADictionary() {
        let entity = EntityDescription("Person", attributes: [AttributeDescription("name", .string)])
        let owners = (0..<3_000).map { _ in StoredObject(entity: entity) }
        let members = (0..<7).map { _ in [StoredObject(entity: entity)] }
        var table = OwnerListTable()
        var model: [String: [StoredObject]] = [:]
        func key(_ owner: Int, _ relationship: String) -> String { "\(owner) \(relationship)" }
        func agrees() -> Bool {
            owners.indices.allSatisfy { owner in
                ["employees", "reports"].allSatisfy { relationship in
                    let found = table.list(of: ObjectIdentifier(owners[owner]), relationship)
                    let expected = model[key(owner, relationship)]
                    return found?.count == expected?.count && zip(found ?? [], expected ?? []).allSatisfy { $0 === $1 }
                }
            }
        }
        #expect(agrees())
        table.reserveCapacity(adding: 100)
        for (position, owner) in owners.enumerated() where position % 3 != 1 {
            let list = members[position % members.count]
            table.set(list, of: ObjectIdentifier(owner), "employees")
            model[key(position, "employees")] = list
            if position % 2 == 0 {
                table.set(members[(position + 1) % members.count], of: ObjectIdentifier(owner), "reports")
                model[key(position, "reports")] = members[(position + 1) % members.count]
            }
        }
        #expect(agrees())
        for position in stride(from: 0, to: owners.count, by: 5) {
            table.set([], of: ObjectIdentifier(owners[position]), "employees")
            model[key(position, "employees")] = []
        }
        #expect(agrees())
        table.removeAll()
        model = [:]
        #expect(agrees())
    }
}

