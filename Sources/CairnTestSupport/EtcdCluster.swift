import Foundation
import EtcdStorage
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway etcd cluster on 127.0.0.1 for tests: members on free ports, data in a
/// temporary directory, every member's PID recorded and ended by PID (by ``stop()``, at the
/// test process's exit, and by each member's watchdog shell if the test process dies).
///
/// ```swift
/// let cluster = try EtcdCluster.shared()          // one 3-member cluster per test process
/// let url = cluster.url(prefix: "test-\(UUID())")
/// ```
///
/// `Sendable`: the member table is behind its lock.
public final class EtcdCluster: Sendable {
    /// One member: its name, ports and the PID of its `etcd` process (0 while stopped).
    public struct Member: Sendable {
        public let name: String
        public let clientPort: Int
        public let peerPort: Int
        public var pid: Int32
        /// The watchdog shell that started it.
        var watchdog: Process?

        public var endpoint: String { "127.0.0.1:\(clientPort)" }
    }

    /// Why a cluster could not be started.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The cluster's `--max-txn-ops` and `--max-request-bytes`, raised from etcd's defaults.
    public static let maxTxnOps = 4096
    public static let maxRequestBytes = 8 << 20

    public let directory: TemporaryDirectory
    private let members: ConditionLock<[Member]>

    /// Every member PID any cluster of this process started, for the exit handler.
    private static let livePIDs = ConditionLock<Set<Int32>>([])
    /// The data directories of clusters not stopped yet, removed at exit.
    private static let liveDirectories = ConditionLock<Set<String>>([])
    private static let sharedCluster = ConditionLock<Result<EtcdCluster, StartError>?>(nil)

    /// The 3-member cluster shared by every test of this process, started on first use.
    ///
    /// - Throws: ``StartError`` when etcd is not installed (run `make deps`) or the cluster
    ///   does not become healthy: a loud failure, never a skip.
    public static func shared() throws -> EtcdCluster {
        try sharedCluster.withLock { cached in
            if cached == nil {
                cached = Result { () throws(StartError) -> EtcdCluster in try startWithRetries(memberCount: 3) }
            }
            return try cached!.get()
        }
    }

    /// Starts a cluster, trying again on fresh ports when a member dies at startup (a port
    /// taken between choosing it and etcd binding it).
    public static func startWithRetries(memberCount: Int, attempts: Int = 3) throws(StartError) -> EtcdCluster {
        var last = StartError(description: "no attempt")
        for _ in 0..<attempts {
            do { return try EtcdCluster(memberCount: memberCount) } catch {
                last = error
                if error.description.hasPrefix("etcd is not installed") { throw error }
            }
        }
        throw last
    }

    /// Starts `memberCount` members and waits until each answers its health check.
    public init(memberCount: Int) throws(StartError) {
        guard let binary = Self.findEtcd() else {
            throw StartError(description: "etcd is not installed (Debian's etcd-server): run `make deps`")
        }
        do { directory = try TemporaryDirectory(prefix: "cairn-etcd") } catch {
            throw StartError(description: "no temporary directory: \(error)")
        }
        var planned: [Member] = []
        for index in 0..<memberCount {
            let (client, peer) = (Self.freePort(), Self.freePort())
            planned.append(Member(name: "m\(index)", clientPort: client, peerPort: peer, pid: 0))
        }
        members = ConditionLock(planned)
        Self.installExitHandler()
        Self.liveDirectories.withLock { _ = $0.insert(directory.path) }
        do {
            for index in 0..<memberCount { try launch(index, binary: binary, initialState: "new") }
            try waitUntilHealthy(timeout: 60)
        } catch {
            stop()
            throw error
        }
    }

    /// The members' client addresses, `127.0.0.1:PORT`.
    public var endpoints: [String] { members.value.map(\.endpoint) }

    /// The members as they are now.
    public var memberList: [Member] { members.value }

    /// A configuration for every member and `prefix`, with the cluster's raised limits.
    public func configuration(prefix: String) -> EtcdConfiguration {
        var configuration = EtcdConfiguration(endpoints: endpoints, prefix: prefix)
        configuration.maxTxnOps = Self.maxTxnOps
        configuration.maxRequestBytes = Self.maxRequestBytes
        return configuration
    }

    /// An `etcd://` URL for the whole cluster with `prefix`.
    public func url(prefix: String) -> String { "etcd://" + endpoints.joined(separator: ",") + "/" + prefix }

    /// Kills member `index` with SIGKILL and waits for it to be gone.
    public func kill9(member index: Int) {
        let member = members.withLock { list in
            defer { list[index].pid = 0 }
            return list[index]
        }
        guard member.pid > 0 else { return }
        _ = Glibc.kill(member.pid, SIGKILL)
        Self.livePIDs.withLock { _ = $0.remove(member.pid) }
        member.watchdog?.waitUntilExit()
    }

    /// Starts a killed member again on its data directory and ports.
    public func restart(member index: Int) throws(StartError) {
        guard let binary = Self.findEtcd() else { throw StartError(description: "etcd is not installed") }
        try launch(index, binary: binary, initialState: "existing")
        try waitUntilHealthy(timeout: 60)
    }

    /// The member index of the current leader, from each member's status.
    public func leaderIndex() -> Int? {
        let list = members.value
        for (index, member) in list.enumerated() where member.pid > 0 {
            guard let data = Self.post("http://\(member.endpoint)/v3/maintenance/status", body: "{}"),
                  let status = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let leader = status["leader"] as? String,
                  let header = status["header"] as? [String: Any],
                  let own = header["member_id"] as? String
            else { continue }
            if leader == own { return index }
        }
        return nil
    }

    /// Kills every member by PID and removes the data directory.
    public func stop() {
        let list = members.withLock { list in
            defer { for index in list.indices { list[index].pid = 0 } }
            return list
        }
        for member in list where member.pid > 0 {
            _ = Glibc.kill(member.pid, SIGKILL)
            Self.livePIDs.withLock { _ = $0.remove(member.pid) }
            member.watchdog?.waitUntilExit()
        }
        directory.remove()
        Self.liveDirectories.withLock { _ = $0.remove(directory.path) }
    }

    // MARK: - Starting members

    private func launch(_ index: Int, binary: String, initialState: String) throws(StartError) {
        let list = members.value
        let member = list[index]
        let cluster = list.map { "\($0.name)=http://127.0.0.1:\($0.peerPort)" }.joined(separator: ",")
        let arguments = [
            "--name", member.name,
            "--data-dir", "\(directory.path)/\(member.name)",
            "--listen-client-urls", "http://127.0.0.1:\(member.clientPort)",
            "--advertise-client-urls", "http://127.0.0.1:\(member.clientPort)",
            "--listen-peer-urls", "http://127.0.0.1:\(member.peerPort)",
            "--initial-advertise-peer-urls", "http://127.0.0.1:\(member.peerPort)",
            "--initial-cluster", cluster,
            "--initial-cluster-state", initialState,
            "--initial-cluster-token", "cairn-test",
            "--max-txn-ops", "\(Self.maxTxnOps)",
            "--max-request-bytes", "\(Self.maxRequestBytes)",
            "--logger", "zap", "--log-outputs", "\(directory.path)/\(member.name).log",
        ]
        let pidFile = "\(directory.path)/\(member.name).pid"
        unlink(pidFile)
        // The shell starts etcd, records its PID, and kills it if the test process dies
        // without stopping it (a crash, a kill -9 of the test run).
        let script = """
            "$0" "$@" >/dev/null 2>&1 & e=$!; echo $e > \(pidFile)
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $e 2>/dev/null; do sleep 1; done
            kill -9 $e 2>/dev/null; wait $e 2>/dev/null
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, binary] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw StartError(description: "cannot start etcd: \(error)") }
        var pid: Int32 = 0
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
               let value = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                pid = value
                break
            }
            usleep(10_000)
        }
        guard pid > 0 else { throw StartError(description: "etcd member \(member.name) did not record its PID") }
        Self.livePIDs.withLock { _ = $0.insert(pid) }
        members.withLock {
            $0[index].pid = pid
            $0[index].watchdog = process
        }
    }

    private func waitUntilHealthy(timeout: Double) throws(StartError) {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            let running = members.value.filter { $0.pid > 0 }
            if let dead = running.first(where: { Glibc.kill($0.pid, 0) != 0 }) {
                throw StartError(description: "etcd member \(dead.name) exited at startup (see \(directory.path)/\(dead.name).log)")
            }
            let healthy = running.allSatisfy { member in
                guard let data = Self.post("http://\(member.endpoint)/v3/kv/range", body: #"{"key":"aGVhbHRo"}"#) else { return false }
                return String(decoding: data, as: UTF8.self).contains("revision")
            }
            if healthy { return }
            usleep(100_000)
        }
        throw StartError(description: "the etcd cluster in \(directory.path) did not become healthy in \(Int(timeout)) s (see its *.log)")
    }

    // MARK: - Helpers

    private static func findEtcd() -> String? {
        ["/usr/bin/etcd", "/usr/local/bin/etcd", "/usr/sbin/etcd"].first { access($0, X_OK) == 0 }
    }

    /// A port the kernel just handed out on 127.0.0.1 (free unless someone takes it next).
    private static func freePort() -> Int {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static let transport = HTTPTransport()

    /// A POST with a 2-second timeout, through the backend's own transport (URLSession traps
    /// on a connection lost mid-request, which a killed member causes); nil on any failure.
    static func post(_ url: String, body: String) -> Data? {
        guard let target = URL(string: url), let host = target.host, let port = target.port,
              case .reply(200, let data) = transport.post(host: host, port: port, path: target.path, body: Data(body.utf8), timeout: 2)
        else { return nil }
        return data
    }

    private static let exitHandlerInstalled = ConditionLock<Bool>(false)

    private static func installExitHandler() {
        let first = exitHandlerInstalled.withLock { installed in
            defer { installed = true }
            return !installed
        }
        guard first else { return }
        atexit {
            for pid in EtcdCluster.livePIDs.withLock({ $0 }) { _ = Glibc.kill(pid, SIGKILL) }
            // The watchdog shells reap their member within a second; the files can go now.
            for path in EtcdCluster.liveDirectories.withLock({ $0 }) { TemporaryDirectory(existing: path).remove() }
        }
    }
}
