@testable import EtcdStorage
import Foundation
import Glibc
import Locking

/// A TCP proxy on 127.0.0.1 in front of one etcd member that loses one write txn on purpose,
/// the way a killed member or a broken network does, so the commit path's settling of an
/// unanswered txn can be tested end to end:
///
///   .dropReply     the txn reaches etcd (and applies); its reply is thrown away and the
///                  client's connection closed
///   .holdRequest   the txn is kept here and the client's connection closed; `releaseHeld()`
///                  delivers it later, as a request stuck in a network or a raft log would be
///
/// Only an HTTP request to /v3/kv/txn that writes (`request_put`) is faulted; everything else
/// passes through. Threads and sockets end with `stop()`.
///
/// `@unchecked Sendable`: the listener descriptor and ports are immutable; the rest is behind
/// `state`'s lock.
final class LossyProxy: @unchecked Sendable {
    enum Fault { case none, dropReply, holdRequest }

    private struct State {
        var fault = Fault.none
        var fired = 0
        var held: Data?
        var sockets: [Int32] = []
        var stopped = false
    }

    let endpoint: String
    private let listener: Int32
    private let upstreamPort: UInt16
    private let state = ConditionLock<State>(State())

    /// Listens on a free port, forwarding to `upstream` ("127.0.0.1:PORT").
    init(upstream: String) {
        upstreamPort = UInt16(upstream.split(separator: ":").last.flatMap { Int($0) } ?? 0)
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                precondition(bind(listening, pointer, length) == 0 && listen(listening, 16) == 0, "proxy: bind/listen errno \(errno)")
                getsockname(listening, pointer, &length)
            }
        }
        listener = listening
        endpoint = "127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        Thread { [self] in acceptLoop() }.start()
    }

    /// Faults the next write txn.
    func arm(_ fault: Fault) { state.withLock { $0.fault = fault } }

    /// How many txns were faulted.
    var fired: Int { state.value.fired }

    /// Sends the held txn to etcd on a connection of its own; the reply's body.
    func releaseHeld() -> Data {
        guard let held = state.withLock({ $0.held }) else { return Data() }
        let upstream = Self.connectUpstream(upstreamPort)
        defer { close(upstream) }
        _ = held.withUnsafeBytes { send(upstream, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = HTTPTransport.find([13, 10, 13, 10], in: reply, from: 0),
               let length = HTTPResponseHead(reply[0..<end])?.contentLength, reply.count >= end + 4 + length {
                return Data(reply[(end + 4)..<(end + 4 + length)])
            }
            let count = recv(upstream, &buffer, buffer.count, 0)
            if count <= 0 { return Data(reply) }
            reply.append(contentsOf: buffer[0..<count])
        }
    }

    func stop() {
        let sockets = state.withLock { state -> [Int32] in
            state.stopped = true
            return state.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func connectUpstream(_ port: UInt16) -> Int32 {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return upstream
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                close(listener)
                return
            }
            let upstream = Self.connectUpstream(upstreamPort)
            let stopped = state.withLock { state -> Bool in
                state.sockets += [client, upstream]
                return state.stopped
            }
            if stopped { shutdown(client, Int32(SHUT_RDWR)) }
            // One flag per connection: set, the reply to the request just forwarded is dropped.
            let dropping = ConditionLock<Bool>(false)
            // The second of the two pumps to end closes both descriptors (only then: a closed
            // number may be reused at once).
            let running = ConditionLock<Int>(2)
            let finish: @Sendable () -> Void = { [self] in
                guard running.withLock({ count -> Bool in count -= 1; return count == 0 }) else { return }
                state.withLock { $0.sockets.removeAll { $0 == client || $0 == upstream } }
                close(client)
                close(upstream)
            }
            Thread { [self] in requests(from: client, to: upstream, dropping: dropping); finish() }.start()
            Thread { [self] in replies(from: upstream, to: client, dropping: dropping); finish() }.start()
        }
    }

    /// Client to etcd, faulting the first write txn after `arm`.
    private func requests(from client: Int32, to upstream: Int32, dropping: ConditionLock<Bool>) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            let chunk = Data(buffer[0..<count])
            let text = String(decoding: chunk, as: UTF8.self)
            let isWrite = text.hasPrefix("POST /v3/kv/txn") && text.contains("request_put")
            let fault = state.withLock { state -> Fault in
                guard isWrite, state.fault != .none else { return .none }
                defer { state.fault = .none; state.fired += 1 }
                if state.fault == .holdRequest { state.held = chunk }
                return state.fault
            }
            switch fault {
            case .holdRequest:
                shutdown(client, Int32(SHUT_RDWR))
            case .dropReply:
                dropping.withLock { $0 = true }
                fallthrough
            case .none:
                _ = chunk.withUnsafeBytes { send(upstream, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
        shutdown(upstream, Int32(SHUT_RDWR))
    }

    /// etcd to client; a dropped reply closes the client's connection instead.
    private func replies(from upstream: Int32, to client: Int32, dropping: ConditionLock<Bool>) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(upstream, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            if dropping.value {
                shutdown(client, Int32(SHUT_RDWR))
                break
            }
            _ = buffer.withUnsafeBytes { send(client, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
        }
        shutdown(client, Int32(SHUT_RDWR))
    }
}
