import CairnTestSupport
import Foundation
import Testing

/// Every shared scenario file again, through `cairn scenario FILE --store etcd://...`: each
/// policy's run on a fresh prefix of the loopback cluster must meet the file's expectations
/// exactly as on a temporary directory.
@Suite("Scenarios on etcd")
struct EtcdScenarioTests {
    static let files: [String] = {
        guard let directory = Bundle.module.url(forResource: "Scenarios", withExtension: nil)?.path,
              let names = try? FileManager.default.contentsOfDirectory(atPath: directory)
        else { return [] }
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }()

    @Test("the shared scenario files are there to run")
    func filesFound() {
        #expect(Self.files.count >= 5, "Scenarios resource: \(Self.files)")
    }

    @Test("each shared scenario meets its expectations on etcd under every policy", arguments: files)
    func scenarioOnEtcd(file: String) throws {
        let cluster = try EtcdCluster.shared()
        let path = try #require(Bundle.module.url(forResource: "Scenarios", withExtension: nil)).path + "/" + file
        let run = try cairn("scenario", path, "--store", cluster.url(prefix: "tool-\(UUID().uuidString)"))
        #expect(run.status == 0, "\(run)")
        #expect(!run.errorOutput.contains("differs"), "\(run)")
        // The same file on a temporary directory prints the same report (temporary IDs are
        // random UUIDs in either, so they are masked).
        let local = try cairn("scenario", path)
        #expect(Self.maskingTemporaryIDs(local.output) == Self.maskingTemporaryIDs(run.output), "etcd: \(run.output)\nlocal: \(local.output)")
    }

    static func maskingTemporaryIDs(_ text: String) -> String {
        text.replacingOccurrences(of: "/t[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}", with: "/t<temporary>",
                                  options: .regularExpression)
    }

    @Test("a malformed --store URL is a usage error naming the expected form")
    func badURL() throws {
        let path = try #require(Bundle.module.url(forResource: "Scenarios", withExtension: nil)).path + "/" + (Self.files.first ?? "x")
        let run = try cairn("scenario", path, "--store", "etcd://nohostport/prefix")
        #expect(run.status == 1, "\(run)")
        #expect(run.errorOutput.contains("etcd://HOST:PORT"), "\(run)")
    }
}
