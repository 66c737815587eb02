import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

// A minimal HTTP/1.1 POST over POSIX sockets, for the etcd gateway. Not URLSession: on Linux,
// FoundationNetworking stops the process ("Transfer completed, but there's no response") when
// a connection is lost right after a request is sent, which is exactly what a killed etcd
// member does, and a storage backend must turn that into an error, never a trap.
//
// Keep-alive connections are pooled per endpoint. Every wait (connect, send, receive) is
// bounded by poll() against one deadline per request.

/// What one POST came to.
package enum HTTPExchange: Sendable {
    case reply(status: Int, Data)
    /// No connection could be made: the server never saw the request.
    case notSent(String)
    /// The request was (or may have been) sent, and no complete reply came back.
    case noReply(String)
}

/// Pooled HTTP/1.1 connections to `host:port` endpoints.
///
/// `Sendable`: the idle-connection pool is behind its lock; a connection is used by one
/// request at a time (taken out of the pool while in use).
package final class HTTPTransport: Sendable {
    package init() {}

    /// Idle keep-alive sockets by "host:port" (guarded by the lock).
    private let idle = ConditionLock<[String: [Int32]]>([:])
    /// The most idle sockets kept per endpoint.
    static let maxIdlePerEndpoint = 16

    deinit { closeAll() }

    package func closeAll() {
        let sockets = idle.withLock { pool in
            defer { pool = [:] }
            return pool.values.flatMap { $0 }
        }
        for socket in sockets { Glibc.close(socket) }
    }

    /// POSTs `body` to `path` on `host:port`, waiting at most `timeout` seconds in all.
    package func post(host: String, port: Int, path: String, body: Data, timeout: Double) -> HTTPExchange {
        let endpoint = "\(host):\(port)"
        let deadline = Self.now() + timeout
        var socket: Int32
        if let reused = idle.withLock({ $0[endpoint]?.popLast() }) {
            socket = reused
        } else {
            switch Self.connect(host: host, port: port, deadline: deadline) {
            case .success(let made): socket = made
            case .failure(let reason): return .notSent(reason.text)
            }
        }
        var request = Data("POST \(path) HTTP/1.1\r\nHost: \(endpoint)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        request.append(body)
        if let failure = Self.sendAll(socket, request, deadline: deadline) {
            Glibc.close(socket)
            return .noReply(failure)
        }
        switch Self.readResponse(socket, deadline: deadline) {
        case .success(let response):
            if response.keepAlive {
                let kept = idle.withLock { pool -> Bool in
                    guard pool[endpoint, default: []].count < Self.maxIdlePerEndpoint else { return false }
                    pool[endpoint, default: []].append(socket)
                    return true
                }
                if !kept { Glibc.close(socket) }
            } else {
                Glibc.close(socket)
            }
            return .reply(status: response.status, response.body)
        case .failure(let reason):
            Glibc.close(socket)
            return .noReply(reason.text)
        }
    }

    package struct Failure: Error {
        package let text: String
    }

    private struct Response {
        var status: Int
        var body: Data
        var keepAlive: Bool
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Waits until `socket` is ready for `events` or the deadline passes.
    static func wait(_ socket: Int32, for events: Int16, deadline: Double) -> Bool {
        while true {
            let remaining = deadline - now()
            guard remaining > 0 else { return false }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(max(1, min(remaining * 1000, 60_000))))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    static func connect(host: String, port: Int, deadline: Double) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let address = found else {
            return .failure(Failure(text: "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))"))
        }
        defer { freeaddrinfo(found) }
        let socket = Glibc.socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else { return .failure(Failure(text: "socket: errno \(errno)")) }
        var noDelay: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else {
                let code = errno
                Glibc.close(socket)
                return .failure(Failure(text: "connect to \(host):\(port): \(String(cString: strerror(code)))"))
            }
            guard wait(socket, for: Int16(POLLOUT), deadline: deadline) else {
                Glibc.close(socket)
                return .failure(Failure(text: "connect to \(host):\(port) timed out"))
            }
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else {
                Glibc.close(socket)
                return .failure(Failure(text: "connect to \(host):\(port): \(String(cString: strerror(code)))"))
            }
        }
        return .success(socket)
    }

    static func sendAll(_ socket: Int32, _ data: Data, deadline: Double) -> String? {
        data.withUnsafeBytes { bytes -> String? in
            var sent = 0
            while sent < bytes.count {
                let written = send(socket, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                if written > 0 { sent += written; continue }
                if written < 0 && (errno == EAGAIN || errno == EINTR) {
                    guard wait(socket, for: Int16(POLLOUT), deadline: deadline) else { return "send timed out" }
                    continue
                }
                return "send: \(String(cString: strerror(errno)))"
            }
            return nil
        }
    }

    /// Reads one response: status line, headers, and a Content-Length or chunked body.
    private static func readResponse(_ socket: Int32, deadline: Double) -> Result<Response, Failure> {
        var buffer = [UInt8]()
        buffer.reserveCapacity(4096)
        func fill() -> Failure? {
            guard wait(socket, for: Int16(POLLIN), deadline: deadline) else { return Failure(text: "no reply in time") }
            let count = receive(socket, appendingTo: &buffer)
            if count > 0 { return nil }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { return nil }
            return Failure(text: count == 0 ? "connection closed before the reply" : "recv: \(String(cString: strerror(errno)))")
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int? = nil
        while headerEnd == nil {
            if let failure = fill() { return .failure(failure) }
            headerEnd = find(separator, in: buffer, from: 0)
        }
        guard let head = HTTPResponseHead(buffer[0..<headerEnd!]) else {
            return .failure(Failure(text: "malformed status line"))
        }
        var keepAlive = head.keepAlive
        var position = headerEnd! + 4
        var body = Data()
        if head.chunked {
            while true {
                var lineEnd = find([13, 10], in: buffer, from: position)
                while lineEnd == nil {
                    if let failure = fill() { return .failure(failure) }
                    lineEnd = find([13, 10], in: buffer, from: position)
                }
                guard let size = chunkSize(buffer[position..<lineEnd!]) else {
                    return .failure(Failure(text: "malformed chunk size"))
                }
                position = lineEnd! + 2
                while buffer.count < position + size + 2 {
                    if let failure = fill() { return .failure(failure) }
                }
                if size == 0 { break }
                body.append(contentsOf: buffer[position..<(position + size)])
                position += size + 2
            }
        } else if let contentLength = head.contentLength {
            while buffer.count < position + contentLength {
                if let failure = fill() { return .failure(failure) }
            }
            body.append(contentsOf: buffer[position..<(position + contentLength)])
        } else {
            // No length: the body runs to the end of the connection.
            keepAlive = false
            while true {
                guard wait(socket, for: Int16(POLLIN), deadline: deadline) else { return .failure(Failure(text: "no reply in time")) }
                let count = receive(socket, appendingTo: &buffer)
                if count == 0 { break }
                if count < 0 && errno != EINTR && errno != EAGAIN {
                    return .failure(Failure(text: "recv: \(String(cString: strerror(errno)))"))
                }
            }
            body.append(contentsOf: buffer[position...])
        }
        return .success(Response(status: head.status, body: body, keepAlive: keepAlive))
    }

    /// One recv() appended to `buffer`: the count, 0 at the end of the stream, -1 with errno.
    /// Through a buffer of the stack, not a zeroed array per call (64 KiB of memset a request).
    static func receive(_ socket: Int32, appendingTo buffer: inout [UInt8]) -> Int {
        withUnsafeTemporaryAllocation(byteCount: 32 << 10, alignment: 1) { space in
            let count = recv(socket, space.baseAddress, space.count, 0)
            if count > 0 { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: space[0..<count])) }
            return count
        }
    }

    /// A chunk-size line's hexadecimal size (extensions after ";" ignored).
    static func chunkSize(_ line: ArraySlice<UInt8>) -> Int? {
        let digits = line.prefix { $0 != UInt8(ascii: ";") }
        return Int(String(decoding: digits, as: UTF8.self).trimmingCharacters(in: .whitespaces), radix: 16)
    }

    /// The first index at or after `start` where `pattern` begins in `buffer`.
    static func find(_ pattern: [UInt8], in buffer: [UInt8], from start: Int) -> Int? {
        guard !pattern.isEmpty, buffer.count >= pattern.count else { return nil }
        var index = start
        while index + pattern.count <= buffer.count {
            if buffer[index] == pattern[0] {
                var matched = 1
                while matched < pattern.count && buffer[index + matched] == pattern[matched] { matched += 1 }
                if matched == pattern.count { return index }
            }
            index += 1
        }
        return nil
    }
}

/// A streamed HTTP/1.1 reply (etcd's watch): the request is sent and the headers read when it
/// opens; then the body's chunks are read as they come. One reader at a time; `close()` may
/// be called from any thread and makes the next read return `.closed`.
///
/// `@unchecked Sendable`: the descriptor is immutable and closed only in deinit; `buffer` is
/// touched only by the one reading thread; the closed flag is behind its lock.
package final class HTTPStream: @unchecked Sendable {
    package enum Read {
        case data(Data)
        /// Nothing arrived within the wait; the stream is still open.
        case idle
        case closed(String)
    }

    private let socket: Int32
    private let isClosed = ConditionLock<Bool>(false)
    /// Received bytes not yet handed out (reading thread only).
    private var buffer: [UInt8]
    private let chunked: Bool

    private init(socket: Int32, buffer: [UInt8], chunked: Bool) {
        self.socket = socket
        self.buffer = buffer
        self.chunked = chunked
    }

    /// POSTs `body` to `path` and reads the reply's headers.
    package static func open(host: String, port: Int, path: String, body: Data, timeout: Double) -> Result<HTTPStream, HTTPTransport.Failure> {
        let deadline = HTTPTransport.now() + timeout
        let socket: Int32
        switch HTTPTransport.connect(host: host, port: port, deadline: deadline) {
        case .success(let made): socket = made
        case .failure(let failure): return .failure(failure)
        }
        var request = Data("POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        request.append(body)
        if let failure = HTTPTransport.sendAll(socket, request, deadline: deadline) {
            Glibc.close(socket)
            return .failure(HTTPTransport.Failure(text: failure))
        }
        var buffer: [UInt8] = []
        while true {
            if let end = HTTPTransport.find([13, 10, 13, 10], in: buffer, from: 0) {
                guard let head = HTTPResponseHead(buffer[0..<end]), head.status == 200 else {
                    Glibc.close(socket)
                    return .failure(HTTPTransport.Failure(text: "watch refused: \(String(decoding: buffer[0..<min(end, 40)], as: UTF8.self))"))
                }
                return .success(HTTPStream(socket: socket, buffer: Array(buffer[(end + 4)...]), chunked: head.chunked))
            }
            guard HTTPTransport.wait(socket, for: Int16(POLLIN), deadline: deadline) else {
                Glibc.close(socket)
                return .failure(HTTPTransport.Failure(text: "no watch reply in time"))
            }
            let count = HTTPTransport.receive(socket, appendingTo: &buffer)
            if count > 0 { continue } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                Glibc.close(socket)
                return .failure(HTTPTransport.Failure(text: "watch connection closed"))
            }
        }
    }

    /// The next body bytes, waiting at most `wait` seconds.
    package func read(wait: Double) -> Read {
        if isClosed.value { return .closed("closed") }
        if let data = takeChunk() { return .data(data) }
        guard HTTPTransport.wait(socket, for: Int16(POLLIN), deadline: HTTPTransport.now() + wait) else {
            return isClosed.value ? .closed("closed") : .idle
        }
        let count = HTTPTransport.receive(socket, appendingTo: &buffer)
        if count > 0 { return takeChunk().map(Read.data) ?? .idle }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return .idle }
        return .closed(count == 0 ? "the member closed the watch" : "recv: \(String(cString: strerror(errno)))")
    }

    /// One whole chunk from the buffer (or everything, when the body is not chunked).
    private func takeChunk() -> Data? {
        guard chunked else {
            guard !buffer.isEmpty else { return nil }
            defer { buffer.removeAll() }
            return Data(buffer)
        }
        guard let lineEnd = HTTPTransport.find([13, 10], in: buffer, from: 0),
              let size = HTTPTransport.chunkSize(buffer[0..<lineEnd]),
              buffer.count >= lineEnd + 2 + size + 2
        else { return nil }
        let data = Data(buffer[(lineEnd + 2)..<(lineEnd + 2 + size)])
        buffer.removeFirst(lineEnd + 2 + size + 2)
        return data
    }

    package func close() {
        let first = isClosed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        // shutdown wakes a reader in poll; the descriptor itself is closed only by deinit,
        // so a reader never touches a number the process may have reused.
        if first { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    deinit { Glibc.close(socket) }
}
