import CairnTestSupport
import Contexts
import EtcdStorage
import Foundation

/// Which backend ``TestStore`` opens: the local engine, or a fresh prefix on the shared
/// loopback etcd cluster. A task-local, so a suite re-runs another suite's test functions on
/// etcd by calling them inside `TestBackend.$current.withValue(.etcd)` (EtcdContractTests).
enum TestBackend: Sendable {
    case engine
    case etcd

    @TaskLocal static var current: TestBackend = .engine

    func open(directory: String, schema: Schema, options: ObjectStore.Options) throws -> ObjectStore {
        switch self {
        case .engine:
            return try ObjectStore(directory: directory, schema: schema, options: options)
        case .etcd:
            return try ObjectStore(etcd: Self.freshPrefix(), schema: schema, options: options)
        }
    }

    /// The version a record deleted at `version` has when re-inserted: the next one on the
    /// engine; one more on etcd, where the tombstone is itself a write (etcd's version counts
    /// it). Either way a key's versions never repeat.
    func reinsertedVersion(deletedAt version: UInt64) -> UInt64 {
        self == .engine ? version + 1 : version + 2
    }

    /// A configuration for a prefix no other test uses, on the shared cluster.
    static func freshPrefix() throws -> EtcdConfiguration {
        try EtcdCluster.shared().configuration(prefix: "contexts-\(UUID().uuidString)")
    }
}
