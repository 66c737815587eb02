import CLMDB

// How a record is stored as an LMDB value. FROZEN: part of the on-disk format;
// LogFormatTests pins the bytes.
//
//    0          4                  12
//   +----------+------------------+----------------------+
//   | crc32c   | record version   | value                |
//   | u32      | u64              | (rest of the value)  |
//   +----------+------------------+----------------------+
//
// The CRC covers the key, then bytes 4..end. LMDB has no page checksums, so this is what
// turns a flipped byte in the data file into a typed error naming the table and key
// instead of a silently wrong value. Covering the key catches a damaged key in a scan.
//
// A TOMBSTONE is a deleted record: the top bit of the version field is set, the rest is
// the version the record had when it was deleted, and the value is empty. Readers treat
// it as absent; a put on its key continues from its version, so a key's record version
// never repeats and a writer holding an old version can never pass a version check
// against a re-inserted record (no ABA).

package enum RecordCodec {
    package static let headerSize = 12
    /// Set in the stored version field of a tombstone.
    package static let tombstoneFlag: UInt64 = 1 << 63

    /// The size of the stored form of `valueCount` bytes.
    package static func storedSize(valueCount: Int) -> Int { headerSize + valueCount }

    /// Writes the stored form of (`version`, `value`) for `key` into `destination`.
    static func encode(key: [UInt8], version: UInt64, value: [UInt8], into destination: UnsafeMutableRawBufferPointer) {
        destination.storeBytes(of: version.littleEndian, toByteOffset: 4, as: UInt64.self)
        value.withUnsafeBytes { raw in
            if raw.count > 0 {
                (destination.baseAddress! + headerSize).copyMemory(from: raw.baseAddress!, byteCount: raw.count)
            }
        }
        let crc = key.withUnsafeBytes { keyBytes in
            crc32c(UnsafeRawBufferPointer(rebasing: destination[4...]), extending: crc32c(keyBytes))
        }
        destination.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self)
    }

    /// Writes a tombstone for `key`, deleted at record version `version`.
    package static func encodeTombstone(key: [UInt8], version: UInt64, into destination: UnsafeMutableRawBufferPointer) {
        encode(key: key, version: version | tombstoneFlag, value: [], into: destination)
    }

    /// The stored form as a new array (for tests and tools).
    package static func encode(key: [UInt8], version: UInt64, value: [UInt8]) -> [UInt8] {
        var stored = [UInt8](repeating: 0, count: storedSize(valueCount: value.count))
        stored.withUnsafeMutableBytes { encode(key: key, version: version, value: value, into: $0) }
        return stored
    }

    /// Verifies and splits a stored record; throws `corruptRecord` when it does not check.
    /// `isTombstone`: the record was deleted at `version`; `value` is empty.
    @inline(__always)
    package static func decode(key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer, table: String)
        throws(KVError) -> (version: UInt64, value: UnsafeRawBufferPointer, isTombstone: Bool)
    {
        guard stored.count >= headerSize else { throw shortRecord(key: key, stored: stored, table: table) }
        let actual = cairn_crc32c_pair(key.baseAddress, key.count, stored.baseAddress! + 4, stored.count - 4)
        return try split(key: key, stored: stored, checksum: actual, table: table)
    }

    /// `decode` for a caller that has the key's CRC-32C already (`crc32c(key)`): the checksum
    /// extends it over the rest of the record, the key's bytes not summed again.
    @inline(__always)
    static func decode(key: UnsafeRawBufferPointer, keyCRC: UInt32, stored: UnsafeRawBufferPointer, table: String)
        throws(KVError) -> (version: UInt64, value: UnsafeRawBufferPointer, isTombstone: Bool)
    {
        guard stored.count >= headerSize else { throw shortRecord(key: key, stored: stored, table: table) }
        let actual = cairn_crc32c_extend(keyCRC, stored.baseAddress! + 4, stored.count - 4)
        return try split(key: key, stored: stored, checksum: actual, table: table)
    }

    private static func shortRecord(key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer, table: String) -> KVError {
        KVError.corruptRecord(table: table, key: Array(key), reason: "stored value is \(stored.count) bytes, shorter than a record header")
    }

    /// The version and value of a stored record, `checksum` being the CRC of its key and its
    /// bytes after the checksum field; throws `corruptRecord` when the stored one differs.
    @inline(__always)
    private static func split(key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer, checksum actual: UInt32, table: String)
        throws(KVError) -> (version: UInt64, value: UnsafeRawBufferPointer, isTombstone: Bool)
    {
        let storedCRC = UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        guard storedCRC == actual else {
            throw KVError.corruptRecord(table: table, key: Array(key), reason: "record checksum mismatch")
        }
        let field = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 4, as: UInt64.self))
        return (field & ~tombstoneFlag, UnsafeRawBufferPointer(rebasing: stored[headerSize...]), field & tombstoneFlag != 0)
    }
}
