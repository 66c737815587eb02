import CairnTestSupport
import Contexts
@testable import EtcdStorage
import Foundation
import Policies

/// The schema the etcd suites use.
let etcdSchema: Schema = {
    do {
        return try Schema([
            EntityDescription("Person", attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("age", .int),
                AttributeDescription("city", .string, isOptional: true),
            ]),
        ])
    } catch {
        fatalError("etcd test schema: \(error)")
    }
}()

/// A configuration for a fresh prefix on the shared cluster, with its raised limits.
func freshConfiguration(_ label: String = "etcd") throws -> EtcdConfiguration {
    try EtcdCluster.shared().configuration(prefix: "\(label)-\(UUID().uuidString)")
}

func withEtcdStore<Result>(
    _ configuration: EtcdConfiguration? = nil, _ body: (ObjectStore, EtcdConfiguration) throws -> Result
) throws -> Result {
    let configuration = try configuration ?? freshConfiguration()
    var options = ObjectStore.Options()
    options.saveDurability = .normal
    let objects = try ObjectStore(etcd: configuration, schema: etcdSchema, options: options)
    defer { objects.close() }
    return try body(objects, configuration)
}

@discardableResult
func insertPerson(_ objects: ObjectStore, _ name: String, _ age: Int64) throws -> ObjectID {
    let context = objects.newBackgroundContext(name: "seed")
    return try context.performAndWait {
        let person = context.insert(entity: "Person")
        person["name"] = .string(name)
        person["age"] = .int(age)
        try context.save()
        return person.objectID
    }
}
