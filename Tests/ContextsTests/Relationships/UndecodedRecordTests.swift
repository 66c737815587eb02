import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// The members a prefetch makes keep their records undecoded (ObjectOrigin.swift): a read of an
/// attribute decodes only it, anything else decodes the record whole first. Every way of
/// reading, changing, comparing, refreshing and saving such an object must answer as it does
/// for the same object decoded at once (a fetch with a predicate decodes at once).
@Suite("Undecoded records: prefetched members answer as decoded objects")
struct UndecodedRecordTests {
    static let schema = schema(employees: .nullify)

    static func schema(employees rule: RelationshipDescription.DeleteRule,
                       department backRule: RelationshipDescription.DeleteRule = .nullify) -> Schema { try! Schema([
        EntityDescription("Department", attributes: [AttributeDescription("name", .string)], relationships: [
            RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true, deleteRule: rule),
        ]),
        EntityDescription("Person", attributes: [
            AttributeDescription("name", .string),
            AttributeDescription("bio", .string, isOptional: true),
            AttributeDescription("age", .int),
            AttributeDescription("photo", .bytes, isOptional: true),
            AttributeDescription("when", .date, isOptional: true),
            AttributeDescription("ok", .bool, isOptional: true),
        ], relationships: [
            RelationshipDescription("department", destination: "Department", inverse: "employees", deleteRule: backRule),
        ]),
    ]) }

    static let attributes = ["name", "bio", "age", "photo", "when", "ok", "department"]

    /// Three departments of four people with every kind of value: short and long strings (a
    /// long one decodes the record whole when read; one of 70,000 bytes), UTF-8 beyond ASCII,
    /// empty and non-empty bytes, absent values.
    static func seed(_ store: TestStore) throws -> [ObjectID] {
        let context = store.objects.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            var departments: [ObjectID] = []
            for index in 0..<3 {
                let department = context.insert(entity: "Department")
                department["name"] = .string("d\(index)")
                for member in 0..<4 {
                    let person = context.insert(entity: "Person")
                    person["name"] = .string(member == 1 ? "Åse Ødegård \(index)" : "p\(index)-\(member)")
                    person["age"] = .int(Int64(10 * index + member))
                    if member != 2 { person["bio"] = .string("a biography longer than a small string, \(index)-\(member)") }
                    // A record of its own origin, whose later values lie past 16-bit offsets.
                    if index == 2 && member == 3 { person["bio"] = .string(String(repeating: "long ", count: 14_000)) }
                    if member == 0 { person["photo"] = .bytes([1, 2, UInt8(index)]) }
                    if member == 3 { person["photo"] = .bytes([]) }
                    if member % 2 == 0 { person["when"] = .date(Date(timeIntervalSinceReferenceDate: Double(member))) }
                    if member != 1 { person["ok"] = .bool(member == 0) }
                    person.setDestination(department, of: "department")
                }
                try context.save()
                departments.append(department.objectID)
            }
            return departments
        }
    }

    /// The members of `departments` (all when nil: the prefetch scans; otherwise it walks the
    /// index), prefetched into `context`: their records undecoded.
    static func prefetched(in context: ObjectContext, of departments: Set<ObjectID>? = nil) throws -> [StoredObject] {
        var request = FetchRequest(entityName: "Department", predicate: departments.map { .objectIn($0) })
        request.relationshipKeyPathsForPrefetching = ["employees"]
        var members: [StoredObject] = []
        for department in try context.fetch(request) {
            members += try department.members(of: "employees")
        }
        let undecoded = members.filter { $0.holdsUndecodedRecord }.count
        #expect(undecoded == members.count)
        return members
    }

    /// Every person, decoded at once (a fetch with a predicate), by ID.
    static func decoded(in context: ObjectContext) throws -> [ObjectID: StoredObject] {
        let people = try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("age", .greaterThanOrEqual, .int(0))))
        return Dictionary(uniqueKeysWithValues: people.map { ($0.objectID, $0) })
    }

    /// What an object shows of itself, to compare two.
    static func state(_ object: StoredObject) -> String {
        func sorted(_ values: PropertyValues) -> String {
            values.keys.sorted().map { "\($0)=\(values.value(of: $0))" }.joined(separator: ",")
        }
        return "\(sorted(object.values)) \(sorted(object.committedValues)) \(sorted(object.changedValues())) "
            + "\(object.committedVersion) \(object.hasChanges) \(object.isUpdated) \(object.isFault) "
            + "\(object.destination(of: "department")?.objectID as ObjectID?)"
    }

    @Test("reads, in any order, give the decoded object's values and state")
    func reads() throws {
        let store = try TestStore(schema: Self.schema)
        defer { store.close() }
        let departments = try Self.seed(store)
        let context = store.objects.newBackgroundContext(name: "lazy"), other = store.objects.newBackgroundContext(name: "eager")
        let expected = try other.performAndWait { try Self.decoded(in: other).mapValues { object in
            (Self.attributes.map { object[$0] }, Self.state(object))
        } }
        // Each attribute read first, then the others (a long string or bytes decodes it whole);
        // members of all departments (a scan) and of one (a walk).
        for first in Self.attributes {
            for owners in [nil, [departments[1]]] as [Set<ObjectID>?] {
                try context.performAndWait {
                let members = try Self.prefetched(in: context, of: owners)
                #expect(members.count == (owners == nil ? 12 : 4))
                for member in members {
                    let (values, state) = try #require(expected[member.objectID])
                    #expect(member[first] == values[Self.attributes.firstIndex(of: first)!], "\(first) of \(member.objectID)")
                    #expect(Self.attributes.map { member[$0] } == values, "\(member.objectID)")
                    #expect(Self.state(member) == state, "\(member.objectID)")
                    #expect(member.description.contains("age"))
                }
                context.reset()
                }
            }
        }
    }

    /// `ObjectOrigin.sharing`: a prefetched member decoded whole holds its owner's reference
    /// as the string the other members of that owner hold, not a copy of its own (a cascade
    /// of 10,000 members allocated and compared 10,000 copies).
    @Test("members decoded whole share their owner's reference string")
    func decodedMembersShareTheirOwnersReference() throws {
        let store = try TestStore(schema: Self.schema)
        defer { store.close() }
        let departments = try Self.seed(store)
        let context = store.objects.newBackgroundContext(name: "lazy")
        try context.performAndWait {
            for owners in [nil, [departments[1]]] as [Set<ObjectID>?] {
                var storage: [String: Set<UInt>] = [:]
                for member in try Self.prefetched(in: context, of: owners) {
                    let reference = try #require(member.current.dictionary(member.entity.layout).values.lazy.compactMap { value -> String? in
                        if case .string(let text) = value, text.hasPrefix("cairn://") { return text }
                        return nil
                    }.first)
                    let address = try #require(reference.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) })
                    storage[reference, default: []].insert(address)
                }
                #expect(storage.count == (owners == nil ? 3 : 1))
                #expect(storage.values.allSatisfy { $0.count == 1 }, "one string per owner: \(storage)")
                context.reset()
            }
        }
    }

    @Test("writes, rollbacks, refreshes and saves track changes against the record read")
    func writes() throws {
        let store = try TestStore(schema: Self.schema)
        defer { store.close() }
        _ = try Self.seed(store)
        let context = store.objects.newBackgroundContext(name: "lazy")
        try context.performAndWait {
            var members = try Self.prefetched(in: context)
            let first = members[0], second = members[1], third = members[2]
            let name = first["name"], age = second["age"]
            first["name"] = .string("renamed")
            #expect(first.changedValues() == ["name": .string("renamed")])
            #expect(first.committedValues["name"] == name && first.isUpdated)
            first["name"] = name
            #expect(!first.isUpdated && first.changedValues().isEmpty)
            second["age"] = .int(99)
            second["bio"] = .null
            #expect(Set(second.changedValues().keys) == ["age", "bio"])
            #expect(context.updatedObjects == [second])
            context.rollback()
            #expect(second["age"] == age && !second.hasChanges && context.updatedObjects.isEmpty)
            third["ok"] = .bool(false)
            try context.refresh(third, mergeChanges: false)
            #expect(!third.hasChanges)
            context.reset()

            // A save writes the change, checked against the version read.
            members = try Self.prefetched(in: context)
            members[3]["age"] = .int(1_000)
            members[4].setDestination(nil, of: "department")
            try context.save()
            #expect(members[3].committedVersion == 2 && !members[3].hasChanges)
            context.reset()
            let again = try Self.decoded(in: context)
            #expect(again[members[3].objectID]?["age"] == .int(1_000))
            #expect(again[members[4].objectID]?.destination(of: "department") == nil)
        }
    }

    /// `employees` cascading: a cascaded member's to-one is compared in its record
    /// (`StoredObject.value(at:equals:)`), its rule for it decided once for all the members
    /// (`deleteCascaded`: a person's only relationship), and its index entry's key made from
    /// the last one when their records hold the same reference bytes (`RecentIndexKeys`).
    @Test("a cascade deletes undecoded members and each one's index entry, keeping their records undecoded",
          arguments: [RelationshipDescription.DeleteRule.nullify, .cascade, .noAction, .deny])
    func cascadeOfUndecodedMembers(department backRule: RelationshipDescription.DeleteRule) throws {
        for owners in [1, 2, 3] {
            let store = try TestStore(schema: Self.schema(employees: .cascade, department: backRule))
            defer { store.close() }
            let departments = try Self.seed(store)
            let reader = store.objects.newBackgroundContext(name: "reader")
            let firstMembers = try reader.performAndWait {
                Set(try reader.existingObject(with: departments[0]).members(of: "employees").map(\.objectID))
            }
            let context = store.objects.newBackgroundContext(name: "lazy")
            try context.performAndWait {
                // The first owner's members are prefetched (undecoded), the others' fetched
                // (which decodes every member the context holds); one save deletes them all,
                // one owner's reference after another's.
                let deletedDepartments = try departments.prefix(owners).map { try context.existingObject(with: $0) }
                for department in deletedDepartments { context.delete(department) }
                // The owner is left as its members' to-one rule leaves it: changed by a nullify.
                #expect(deletedDepartments.allSatisfy { $0.isUpdated == (backRule == .nullify) }, "\(backRule)")
                let people = context.deletedObjects.filter { $0.entity.name == "Person" }
                #expect(people.count == 4 * owners && context.deletedObjects.count == 5 * owners)
                let first = people.filter { firstMembers.contains($0.objectID) }
                #expect(first.count == 4)
                // Compared in place, not decoded: only the first member is read (its string
                // is then the one the members decoded later share).
                let decoded = owners == 1 ? 1 : 4
                #expect(first.filter { !$0.holdsUndecodedRecord }.count == decoded)
                try context.save()
                // (A deny rule's check reads the member's to-one whole.)
                if backRule != .deny {
                    #expect(first.filter { !$0.holdsUndecodedRecord }.count == decoded, "a delete's save reads no values")
                }
            }
            let indexProblems = try store.objects.indexProblems(), relationshipProblems = try store.objects.relationshipProblems()
            #expect(indexProblems == [] && relationshipProblems == [], "\(owners) owners")
            let check = store.objects.newBackgroundContext(name: "check")
            let (people, kept) = try check.performAndWait { () throws -> (Int, [Int]) in
                (try check.count(for: FetchRequest(entityName: "Person")),
                 try departments.dropFirst(owners).map { try check.existingObject(with: $0).members(of: "employees").count })
            }
            #expect(people == 4 * (3 - owners) && kept == Array(repeating: 4, count: 3 - owners))
        }
    }
}
