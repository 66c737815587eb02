@testable import Contexts
import Policies
import Testing

/// A cascade deletes the members whose only relationship is the to-one back to the owner without
/// moving the graph epoch per member (`deleteCascaded`), and moves it once after them: a list
/// kept at the epoch the cascade began at must not be answered once its members are deleted.
@Suite("Relationships: a cascade moves the graph epoch after its members")
struct CascadeEpochTests {
    @Test func aCascadeMovesTheGraphEpochOnceForItsMembers() throws {
        let store = try TestStore(schema: UndecodedRecordTests.schema(employees: .cascade))
        defer { store.close() }
        let departments = try UndecodedRecordTests.seed(store)
        let context = store.objects.newBackgroundContext(name: "A")
        try context.performAndWait {
            let department = try context.existingObject(with: departments[0])
            // `delete(_:)`'s first step, then a list of the members kept at the epoch it leaves.
            department.deletedFlag = true
            let members = try department.members(of: "employees")
            #expect(members.count == 4)
            #expect(context.keptMembers(of: department, "employees") == members)
            let epoch = context.graphEpoch
            context.applyDeleteRules(of: department)
            let deleted = members.filter { $0.isDeleted }
            #expect(deleted.count == 4)
            #expect(context.graphEpoch == epoch &+ 1, "once for the four members")
            #expect(context.keptMembers(of: department, "employees") == nil)
            #expect(context.deletedObjects.count == 5)
        }
    }
}
