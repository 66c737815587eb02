import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// A prefetch of a to-many read in one pass (MemberPrefetch: a walk of the inverse's index, or a
/// scan of the members' table when the owners are most of theirs): its lists
/// are the ones a fetch per owner finds, and the members it makes are ordinary objects of the
/// context: registered and uniqued by ID, loaded, carrying the version read, tracking changes,
/// and forgotten by a reset. A context that holds members takes the fetch's path instead.
@Suite("Relationships: the to-many prefetch's one pass")
struct MemberPrefetchTests {
    /// Departments d0…d(count-1) (primary keys 1…count, so their references include prefixes of
    /// one another: p1, p10, p100), department i with i % 4 employees; the departments' IDs.
    static func seed(_ store: OrgStore, departments count: Int) throws -> [ObjectID] {
        let context = store.context("seed")
        return try context.performAndWait {
            var departments: [StoredObject] = []
            for index in 0..<count {
                let department = insert("Department", ["name": "d\(index)"], in: context)
                departments.append(department)
                for member in 0..<(index % 4) {
                    insert("Person", ["name": "p\(index)-\(member)"], in: context).setDestination(department, of: "department")
                }
            }
            // People of no department: the scan reads their records and keeps none.
            for index in 0..<5 { _ = insert("Person", ["name": "nobody \(index)"], in: context) }
            try context.save()
            return departments.map(\.objectID)
        }
    }

    /// `owners`' members prefetched: each owner's list by name.
    static func prefetched(_ owners: [ObjectID], in context: ObjectContext) throws -> [ObjectID: [String]] {
        var request = FetchRequest(entityName: "Department", predicate: .objectIn(Set(owners)))
        request.relationshipKeyPathsForPrefetching = ["employees"]
        var lists: [ObjectID: [String]] = [:]
        for department in try context.fetch(request) {
            lists[department.objectID] = try #require(context.keptMembers(of: department, "employees")).map(\.name)
        }
        return lists
    }

    /// Each owner's members as a fetch of them finds them, by name.
    static func fetched(_ owners: [ObjectID], in context: ObjectContext) throws -> [ObjectID: [String]] {
        var lists: [ObjectID: [String]] = [:]
        for owner in owners {
            lists[owner] = try context.fetch(FetchRequest(entityName: "Person", predicate: .references("department", owner))).map(\.name)
        }
        return lists
    }

    @Test("every owner's list is its fetch's, in order, for all owners and for scattered ones")
    func listsAreTheFetchs() throws {
        try withOrgStore { store in
            let ids = try Self.seed(store, departments: 120)
            // All; every seventh (the walk passes over others' entries, and starts again past many); one.
            for owners in [ids, ids.enumerated().filter { $0.offset % 7 == 3 }.map(\.element), [ids[101]]] {
                let walked = store.context("walk"), fetching = store.context("fetch")
                let lists = try walked.performAndWait { try Self.prefetched(owners, in: walked) }
                let expected = try fetching.performAndWait { try Self.fetched(owners, in: fetching) }
                #expect(lists == expected)
                #expect(lists.count == owners.count)
            }
        }
    }

    @Test("an owner is found from a reference's bytes: its canonical URI exactly, other forms as strings compare")
    func ownerOfReferenceBytes() throws {
        try withOrgStore { store in
            let ids = try Self.seed(store, departments: 12)
            let context = store.context("A")
            try context.performAndWait {
                let unsaved = context.insert(entity: "Department")
                let owners = [ids[0], ids[9], ids[10], ids[11]].map { context.object(with: $0) } + [unsaved]
                let references = try #require(OwnerReferences(owners: owners))
                func found(_ text: String) -> (owner: Int, exact: Bool)? {
                    Array(text.utf8).withUnsafeBytes { references.owner(ofBytes: $0) }
                }
                for (position, owner) in owners.enumerated() {
                    let result = found(owner.objectID.uriString)
                    #expect(result?.owner == position && result?.exact == true, "\(owner.objectID)")
                }
                let key = try #require(ids[9].primaryKey)
                #expect(found("cairn://Department/p0\(key)") == nil)  // not canonical, and no owner's string
                #expect(found("cairn://Department/p\(try #require(ids[1].primaryKey))") == nil)  // not an owner
                #expect(found("cairn://Person/p\(key)") == nil && found("cairn://Department/p") == nil)
                #expect(found("cairn://Department/p99999999999999999999999") == nil)
                #expect(found("") == nil && found("é") == nil)
                #expect(references.owner(of: ids[10].uriString) == 2 && references.owner(of: "x") == nil)
                // Two owners that are one object: no references (the fetch answers).
                #expect(OwnerReferences(owners: [owners[0], owners[0]]) == nil)
            }
        }
    }

    @Test("the members are registered, uniqued by ID, loaded, at the version read; their references are their owners'")
    func membersAreContextObjects() throws {
        try withOrgStore { store in
            let ids = try Self.seed(store, departments: 8)
            let context = store.context("A")
            try context.performAndWait {
                _ = try Self.prefetched(ids, in: context)
                let department = try context.existingObject(with: ids[3])
                let members = try #require(context.keptMembers(of: department, "employees"))
                #expect(members.count == 3)
                for member in members {
                    #expect(!member.isFault && !member.hasChanges && member.committedVersion == 1)
                    #expect(context.object(with: member.objectID) === member)
                    #expect(try context.existingObject(with: member.objectID) === member)
                    #expect(member.destination(of: "department") === department)
                    #expect(member["department"] == .string(ids[3].uriString))
                }
                // A fetch of the same people gives the same objects, and registers none twice.
                let people = try context.fetch(FetchRequest(entityName: "Person", predicate: .references("department", ids[3])))
                #expect(people.count == 3 && zip(people, members).allSatisfy { $0 === $1 })
                #expect(context.registeredObjects.count == 8 + (0..<8).map { $0 % 4 }.reduce(0, +))
            }
        }
    }

    @Test("a member's change is tracked and saved against the version read: another save between is a conflict")
    func changesAndConflicts() throws {
        try withOrgStore { store in
            let ids = try Self.seed(store, departments: 4)
            let a = store.context("A"), b = store.context("B")
            let member = try a.performAndWait { () throws -> ObjectID in
                _ = try Self.prefetched(ids, in: a)
                let member = try #require(try a.existingObject(with: ids[2]).members(of: "employees").first)
                member["name"] = .string("renamed")
                #expect(member.isUpdated && a.updatedObjects == [member])
                #expect(member.changedValues() == ["name": .string("renamed")])
                return member.objectID
            }
            try b.performAndWait {
                try b.existingObject(with: member)["name"] = .string("elsewhere")
                try b.save()
            }
            let conflict = a.performAndWait { #expect(throws: MergeError.self) { try a.save() } }
            #expect(conflict != nil)
        }
    }

    @Test("a reset forgets the members; the next prefetch makes new ones")
    func resetForgets() throws {
        try withOrgStore { store in
            let ids = try Self.seed(store, departments: 6)
            let context = store.context("A")
            try context.performAndWait {
                _ = try Self.prefetched(ids, in: context)
                let member = try #require(try context.existingObject(with: ids[1]).members(of: "employees").first)
                let id = member.objectID
                context.reset()
                #expect(member.context == nil && context.registeredObjects.isEmpty)
                let lists = try Self.prefetched(ids, in: context)
                #expect(lists[ids[1]] == ["p1-0"])
                let again = context.object(with: id)
                #expect(again !== member && !again.isFault && again.name == "p1-0")
            }
        }
    }

    @Test("a context holding members prefetches through the fetch: its in-memory moves, inserts and deletes count")
    func heldMembersTakeTheFetch() throws {
        try withOrgStore { store in
            let ids = try Self.seed(store, departments: 4)
            let context = store.context("A")
            try context.performAndWait {
                let moved = try #require(try context.existingObject(with: ids[3]).members(of: "employees").first)
                moved.setDestination(context.object(with: ids[1]), of: "department")
                let added = insert("Person", ["name": "new"], in: context)
                added.setDestination(context.object(with: ids[2]), of: "department")
                let lists = try Self.prefetched(ids, in: context)
                #expect(lists == (try Self.fetched(ids, in: context)))
                #expect(lists[ids[1]] == ["p1-0", "p3-0"] && lists[ids[2]] == ["p2-0", "p2-1", "new"])
                #expect(lists[ids[3]] == ["p3-1", "p3-2"])
            }
        }
    }
}
