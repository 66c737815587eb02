// An HTTP/1.1 response's status line and the three headers the transport acts on, read over
// the received bytes. Every etcd request reads one: through String (split, lowercased,
// trimmed), with a zeroed 64 KiB receive buffer, a request took about 480,000 instructions
// on the client; over the bytes, about 86,000 (callgrind, the etcd-gateway client of
// `cairn-bench --quick --only etcd-save-1`).

/// The head of one response: everything before the blank line.
struct HTTPResponseHead: Equatable {
    var status: Int
    var contentLength: Int?
    var chunked = false
    /// False when the server said `Connection: close`.
    var keepAlive = true
}

extension HTTPResponseHead {
    /// Parses `bytes`, the head without its final blank line; nil when the status line is not
    /// `HTTP/x.y NNN …`.
    init?(_ bytes: ArraySlice<UInt8>) {
        var lines = Self.lines(of: bytes).makeIterator()
        guard let statusLine = lines.next(), statusLine.starts(with: Array("HTTP/".utf8)),
              let space = statusLine.firstIndex(of: UInt8(ascii: " ")),
              let status = Self.decimal(statusLine[(space + 1)...].prefix { $0 != UInt8(ascii: " ") })
        else { return nil }
        self.status = status
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = line[line.startIndex..<colon]
            let value = Self.trimmed(line[(colon + 1)...])
            if Self.equalsIgnoringCase(name, "content-length") {
                contentLength = Self.decimal(value)
            } else if Self.equalsIgnoringCase(name, "transfer-encoding") {
                if Self.containsIgnoringCase(value, "chunked") { chunked = true }
            } else if Self.equalsIgnoringCase(name, "connection") {
                if Self.equalsIgnoringCase(value, "close") { keepAlive = false }
            }
        }
    }

    private static func lines(of bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 13, index + 1 < bytes.endIndex, bytes[index + 1] == 10 {
                lines.append(bytes[start..<index])
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        lines.append(bytes[start..<bytes.endIndex])
        return lines
    }

    /// A non-negative decimal number, nil when it is empty, has other bytes, or overflows.
    static func decimal(_ bytes: some Collection<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return bytes[bytes.startIndex..<bytes.startIndex]
        }
        return bytes[first...last]
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    /// `lowercase` is all lowercase ASCII.
    private static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { wanted in
            bytes.count == wanted.count && zip(bytes, wanted).allSatisfy { lowercased($0) == $1 }
        }
    }

    private static func containsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { wanted in
            guard bytes.count >= wanted.count else { return false }
            var start = bytes.startIndex
            while start + wanted.count <= bytes.endIndex {
                if zip(bytes[start...], wanted).allSatisfy({ lowercased($0) == $1 }) { return true }
                start += 1
            }
            return false
        }
    }
}
