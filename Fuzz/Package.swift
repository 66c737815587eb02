// swift-tools-version:6.0
import PackageDescription

// Cairn's fuzz targets: a package of its own, so that normal builds never see them.
// Build and run with `make fuzz` (libFuzzer under AddressSanitizer); see Docs/Testing.md.
//
// The two decoder targets reach `package` symbols of the engine and of Contexts through
// `@testable import`, which works because debug builds compile every module with
// -enable-testing. Plain `import` cannot reach them: this is a package of its own, and
// `package` access ends at Cairn's package boundary (the engine's tests, inside it, use plain
// imports). The segment and scenario-file targets use the public API only.
let package = Package(
    name: "CairnFuzz",
    dependencies: [
        .package(name: "Cairn", path: ".."),
    ],
    targets: [
        // LogRecordReader.read and LogRecordCodec.decodePayload on arbitrary bytes.
        .executableTarget(
            name: "fuzz-log-record",
            dependencies: [.product(name: "KVEngine", package: "Cairn")],
            path: "Sources/LogRecordFuzzer"
        ),
        // The Contexts value codec (ValueCodec.decode) on arbitrary bytes.
        .executableTarget(
            name: "fuzz-value-codec",
            dependencies: [.product(name: "Contexts", package: "Cairn"), .product(name: "Policies", package: "Cairn")],
            path: "Sources/ValueCodecFuzzer"
        ),
        // A whole store opened on a log segment built from the input (public API only).
        .executableTarget(
            name: "fuzz-log-segment",
            dependencies: [.product(name: "KVEngine", package: "Cairn")],
            path: "Sources/LogSegmentFuzzer"
        ),
        // The merge-scenario file parser of `cairn scenario` (ScenarioFormat) on arbitrary
        // bytes (public API only).
        .executableTarget(
            name: "fuzz-scenario-file",
            dependencies: [
                .product(name: "ScenarioFormat", package: "Cairn"),
                .product(name: "Contexts", package: "Cairn"),
                .product(name: "Policies", package: "Cairn"),
            ],
            path: "Sources/ScenarioFileFuzzer"
        ),
    ],
    swiftLanguageModes: [.v6]
)
