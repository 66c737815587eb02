import CairnTestSupport
import Foundation
import Testing

/// `cairn put`, `get`, `delete`, `scan` and `dump` on an `etcd://` store.
@Suite("Key-value commands on etcd")
struct EtcdKeyValueCommandTests {
    @Test("put, get, scan with a prefix and in reverse, dump, delete: the same records through any member")
    func roundTrip() throws {
        let cluster = try EtcdCluster.shared()
        let prefix = "kv-\(UUID().uuidString)"
        let url = cluster.url(prefix: prefix)
        for (key, value) in [("a1", "one"), ("a2", "two\\tTAB"), ("b1", "three")] {
            let run = try cairn("put", url, key, value)
            #expect(run.status == 0, "\(run)")
        }
        let viaOther = "etcd://\(cluster.endpoints[2])/\(prefix)"
        let got = try cairn("get", viaOther, "a2")
        #expect(got.status == 0 && got.output == "two\\tTAB\n", "\(got)")
        let missing = try cairn("get", url, "zz")
        #expect(missing.status == 2, "\(missing)")
        let scanned = try cairn("scan", url, "--prefix", "a", "--reverse")
        #expect(scanned.output == "a2\ttwo\\tTAB\na1\tone\n", "\(scanned)")
        let dumped = try cairn("dump", url)
        #expect(dumped.output == "a1\tone\na2\ttwo\\tTAB\nb1\tthree\n", "\(dumped)")
        #expect(try cairn("delete", url, "a1").status == 0)
        let after = try cairn("scan", url, "--limit", "1")
        #expect(after.output == "a2\ttwo\\tTAB\n", "\(after)")
        let bad = try cairn("put", "etcd://nope/x", "k", "v")
        #expect(bad.status == 1 && bad.errorOutput.contains("HOST:PORT"), "\(bad)")
    }

    @Test("ingest on etcd acknowledges each line once the cluster has it, and dump reads them all back")
    func ingest() throws {
        let cluster = try EtcdCluster.shared()
        let url = cluster.url(prefix: "ingest-\(UUID().uuidString)")
        let lines = (1...40).map { "k\(String(format: "%02d", $0))\tvalue \($0)\n" }.joined()
        let run = try cairn(["ingest", url, "--writers", "4"], input: lines)
        #expect(run.status == 0, "\(run)")
        let acknowledged = Set(run.lines.filter { $0.hasPrefix("ok ") }.map { String($0.dropFirst(3)) })
        #expect(acknowledged == Set((1...40).map { "k" + String(format: "%02d", $0) }), "\(run)")
        let dumped = try cairn("dump", url)
        #expect(dumped.output == lines, "\(dumped)")
    }
}
