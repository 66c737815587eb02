import Foundation

// Which txn attempt wrote a record: the writing storage's identity (a UUID per open storage)
// and that storage's attempt number, 24 bytes in front of every entity record's value
// (EtcdKeyLayout.swift). No two attempts anywhere share a stamp, so a record carrying one
// names the one attempt that wrote it: what settles a txn that got no reply
// (EtcdStorage+Settle.swift) and what tells a storage's watch its own commits (EtcdWatcher.swift).
//
//   bytes 0..<16   the storage's UUID
//   bytes 16..<24  the attempt number, big-endian (1, 2, … per open storage)
//
// The bytes reach the cluster and are frozen; EtcdValueLayoutTests pins them.

/// The stamp of one txn attempt: who wrote, and which of its attempts.
struct EtcdWriteStamp: Sendable, Equatable {
    static let byteCount = 24

    /// The 24 bytes, as stored.
    let bytes: [UInt8]

    init(storage: UUID, attempt: UInt64) {
        var bytes = [UInt8]()
        bytes.reserveCapacity(Self.byteCount)
        withUnsafeBytes(of: storage.uuid) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: attempt.bigEndian) { bytes.append(contentsOf: $0) }
        self.bytes = bytes
    }

    /// A stamp read back from a stored value.
    init?(_ stored: some Collection<UInt8>) {
        guard stored.count == Self.byteCount else { return nil }
        bytes = Array(stored)
    }

    /// Whether the storage whose UUID is `identity` wrote it.
    func isFrom(_ identity: [UInt8]) -> Bool {
        bytes.prefix(16).elementsEqual(identity)
    }

    /// A storage's UUID as the stamp's first 16 bytes.
    static func identity(_ storage: UUID) -> [UInt8] {
        withUnsafeBytes(of: storage.uuid) { Array($0) }
    }
}
