import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Departments and their employees: a to-one `Person.department` with the to-many inverse
/// `Department.employees`, whose delete rule each test chooses; and `Person.projects` (to-many)
/// with `Project.lead` (to-one), cascading from the person.
enum OrgModel {
    static func schema(employeesRule: RelationshipDescription.DeleteRule = .nullify,
                       departmentRule: RelationshipDescription.DeleteRule = .nullify) -> Schema {
        do {
            return try Schema([
                EntityDescription("Department", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true,
                                            deleteRule: employeesRule),
                ]),
                EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("department", destination: "Department", inverse: "employees",
                                            deleteRule: departmentRule),
                    RelationshipDescription("projects", destination: "Project", inverse: "lead", isToMany: true,
                                            deleteRule: .cascade),
                ]),
                EntityDescription("Project", attributes: [AttributeDescription("title", .string)], relationships: [
                    RelationshipDescription("lead", destination: "Person", inverse: "projects"),
                ]),
            ])
        } catch {
            fatalError("org schema: \(error)")
        }
    }
}

/// An object store of the org schema in a fresh temporary directory (a `TestStore` of it).
final class OrgStore: Sendable {
    let base: TestStore
    var directory: TemporaryDirectory { base.directory }
    var objects: ObjectStore { base.objects }

    init(schema: Schema = OrgModel.schema()) throws {
        base = try TestStore(schema: schema)
    }

    func close() {
        base.close()
    }

    func context(_ name: String, policy: any MergePolicy = .error) -> ObjectContext {
        objects.newBackgroundContext(name: name, mergePolicy: policy)
    }

    /// Eng with Ann and Bob, and Ops with nobody, committed; their IDs.
    func seedOrg() throws -> (eng: ObjectID, ops: ObjectID, ann: ObjectID, bob: ObjectID) {
        let context = self.context("seed")
        return try context.performAndWait {
            let eng = insert("Department", ["name": "Eng"], in: context)
            let ops = insert("Department", ["name": "Ops"], in: context)
            let ann = insert("Person", ["name": "Ann"], in: context)
            let bob = insert("Person", ["name": "Bob"], in: context)
            ann.setDestination(eng, of: "department")
            eng.addMember(bob, to: "employees")
            try context.save()
            return (eng.objectID, ops.objectID, ann.objectID, bob.objectID)
        }
    }

    /// The names of the stored members of `owner`'s to-many, sorted, read by a fresh context.
    func storedMembers(of owner: ObjectID, _ relationship: String = "employees") throws -> [String] {
        let context = self.context("reader")
        return try context.performAndWait {
            try context.existingObject(with: owner).members(of: relationship).map(\.name).sorted()
        }
    }

    /// The committed values and version of `id`, nil when absent.
    func committed(_ id: ObjectID) throws -> (values: PropertyValues, version: UInt64)? {
        try objects.committedState(of: id)
    }

    /// Both checkers together: the graph and the indexes (the to-many's system index included).
    func problems() throws -> [String] {
        try objects.relationshipProblems() + objects.indexProblems()
    }
}

func withOrgStore<Result>(schema: Schema = OrgModel.schema(), _ body: (OrgStore) throws -> Result) throws -> Result {
    let store = try OrgStore(schema: schema)
    defer { store.close() }
    return try body(store)
}

/// Inserts an object of `entity` with string attributes `values` into `context` (not saved).
@discardableResult
func insert(_ entity: String, _ values: [String: String], in context: ObjectContext) -> StoredObject {
    let object = context.insert(entity: entity)
    for (name, value) in values { object[name] = .string(value) }
    return object
}

extension StoredObject {
    /// The `name` attribute as a String ("" when it is not one).
    var name: String {
        if case .string(let name) = self["name"] { return name }
        return ""
    }
}
