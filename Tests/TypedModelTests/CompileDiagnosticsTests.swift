import CairnTestSupport
import Foundation
import Testing

/// Type-checks snippets against the built `Contexts` module with the toolchain's `swiftc`, to
/// pin what the compiler says: the isolation of `viewContext` and the advice for a throwing
/// `perform` are compile-time promises, which no run-time test can see.
///
/// Runs when the test binary sits beside the build's `Modules` folder (a `swift test` build)
/// and `swiftc` is on the PATH.
@Suite("Compile-time diagnostics")
struct CompileDiagnosticsTests {
    /// The build folder holding `Modules/Contexts.swiftmodule`, and the package root.
    static let paths: (modules: String, root: String)? = {
        let build = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var modules = build.appendingPathComponent("Modules")
        if !FileManager.default.fileExists(atPath: modules.appendingPathComponent("Contexts.swiftmodule").path) {
            modules = build  // older layouts keep the modules beside the binaries
        }
        guard FileManager.default.fileExists(atPath: modules.appendingPathComponent("Contexts.swiftmodule").path) else { return nil }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (modules.path, root.path)
    }()

    /// The toolchain's `swiftc`, found on the PATH.
    static let swiftc: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map { $0 + "/swiftc" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The diagnostics of type-checking `source` in Swift 6 mode.
    static func diagnostics(of source: String) throws -> String {
        let paths = try #require(Self.paths)
        let directory = try TemporaryDirectory(prefix: "cairn-diagnostics")
        defer { directory.remove() }
        let file = directory.path + "/snippet.swift"
        try ("import Contexts\nimport Policies\n" + source).write(toFile: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.swiftc))
        process.arguments = ["-swift-version", "6", "-typecheck", "-I", paths.modules, "-I", paths.root + "/Sources/CLMDB", file]
        let output = Pipe()
        process.standardError = output
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    @Test("the spellings that must compile compile without a diagnostic", .enabled(if: paths != nil && swiftc != nil))
    func validSpellings() throws {
        let text = try Self.diagnostics(of: """
            @MainActor func onMain(_ objects: ObjectStore) -> ObjectContext { objects.viewContext }
            func fromTask(_ objects: ObjectStore) async throws -> Int {
                let view = await objects.viewContext
                return try await view.perform { try view.count(for: FetchRequest(entityName: "Person")) }
            }
            func synchronous(_ context: ObjectContext) throws {
                try context.performAndWait { try context.save() }
                context.perform { try? context.save() }
            }
            func asynchronous(_ context: ObjectContext) async throws {
                try await context.perform { try context.save() }
            }
            """)
        #expect(text.isEmpty, "\(text)")
    }

    @Test("viewContext off the main actor is a compile error", .enabled(if: paths != nil && swiftc != nil))
    func viewContextOffMain() throws {
        let text = try Self.diagnostics(of: "func offMain(_ objects: ObjectStore) -> ObjectContext { objects.viewContext }\n")
        #expect(text.contains("error: main actor-isolated property 'viewContext' can not be referenced from a nonisolated context"), "\(text)")
    }

    @Test("a throwing perform in synchronous code names performAndWait, not an async call", .enabled(if: paths != nil && swiftc != nil))
    func throwingPerformInSyncCode() throws {
        let text = try Self.diagnostics(of: "func save(_ context: ObjectContext) { context.perform { try context.save() } }\n")
        #expect(text.contains("try context.performAndWait { try … }"), "\(text)")
        #expect(!text.contains("'async' call"), "\(text)")
    }
}
