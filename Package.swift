// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Cairn",
    products: [
        .library(name: "KVEngine", targets: ["KVEngine"]),
        .library(name: "Policies", targets: ["Policies"]),
        .library(name: "Contexts", targets: ["Contexts"]),
        .library(name: "KeyValueQueue", targets: ["KeyValueQueue"]),
        // The object layer's second backend: an etcd v3 cluster through its JSON gateway.
        .library(name: "EtcdStorage", targets: ["EtcdStorage"]),
        // The scenario-file parser, a product so that the fuzz package (Fuzz/) can link it.
        .library(name: "ScenarioFormat", targets: ["ScenarioFormat"]),
        .executable(name: "cairn", targets: ["cairn"]),
    ],
    targets: [
        // LMDB from Debian's liblmdb-dev, found through pkg-config.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // The package's lock and queue hand-off types, shared by every layer.
        .target(name: "Locking"),
        // The storage engine: imports only CLMDB and Locking.
        .target(name: "KVEngine", dependencies: ["CLMDB", "Locking"]),
        // Pure conflict logic: imports nothing of ours.
        .target(name: "Policies"),
        // The object layer. Only its Storage/ folder sees KVEngine (Docs/Architecture.md).
        .target(name: "Contexts", dependencies: ["KVEngine", "Policies", "Locking"]),
        // The object layer on etcd v3 (Docs/Etcd.md): implements the Contexts storage seam with
        // Foundation's networking; Contexts itself never sees it.
        .target(name: "EtcdStorage", dependencies: ["Contexts", "Locking"]),
        // The FMDB-style serial queue over the raw key-value store: the engine, and Policies for
        // its whole-value merge policies.
        .target(name: "KeyValueQueue", dependencies: ["KVEngine", "Policies", "Locking"]),
        // Merge-scenario files (JSON) read into checked values; `cairn scenario` runs them.
        // Needs Contexts only for the schema types (Schema, EntityDescription, AttributeType).
        .target(name: "ScenarioFormat", dependencies: ["Contexts", "Policies"]),
        .executableTarget(name: "cairn", dependencies: ["KVEngine", "Policies", "Contexts", "EtcdStorage", "ScenarioFormat", "Locking"]),
        // The benchmark lives outside the library targets; SQLite is a bench-only peer.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(
            name: "cairn-bench",
            dependencies: ["KVEngine", "Policies", "Contexts", "EtcdStorage", "CairnTestSupport", "CLMDB", "CSQLite"]
        ),
        // Fault-injecting file system, temporary directories, seeded randomness, a loopback etcd cluster.
        .target(name: "CairnTestSupport", dependencies: ["KVEngine", "EtcdStorage", "Locking"]),
        .testTarget(name: "KVEngineTests", dependencies: ["KVEngine", "Locking", "CairnTestSupport"]),
        .testTarget(name: "PoliciesTests", dependencies: ["Policies"]),
        .testTarget(name: "ScenarioFormatTests", dependencies: ["ScenarioFormat", "Contexts", "Policies"]),
        .testTarget(name: "ContextsTests", dependencies: ["Contexts", "EtcdStorage", "KeyValueQueue", "KVEngine", "Policies", "CairnTestSupport", "Locking"]),
        // The etcd backend's client, limits, failures and multi-process behaviour, on a
        // 3-member loopback cluster the tests start (CairnTestSupport's EtcdCluster).
        .testTarget(name: "EtcdTests", dependencies: ["EtcdStorage", "Contexts", "Policies", "CairnTestSupport", "Locking"]),
        // The typed-model API (Sources/Contexts/Typed) and the classic patterns ported to it.
        .testTarget(name: "TypedModelTests", dependencies: ["Contexts", "KeyValueQueue", "KVEngine", "Policies", "CairnTestSupport"]),
        .testTarget(
            name: "CairnToolTests",
            // Contexts and Policies only to make object stores for `cairn fetch` and `dump`.
            dependencies: ["KVEngine", "Contexts", "EtcdStorage", "Policies", "CairnTestSupport", "Locking"],
            resources: [.copy("Scenarios")]
        ),
        // Short versions of the reliability suites (kill -9, power loss, I/O errors, corruption,
        // isolation history, resource limits); `make torture` runs them at full size.
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["KVEngine", "Contexts", "Policies", "CairnTestSupport", "Locking"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
