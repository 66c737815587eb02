/// The undecoded records of objects a read made, copied out of its read view (whose bytes do
/// not outlive it) into chunks shared by those objects: an object holds its chunk and where its
/// record lies there, and decodes an attribute when it is read, or all of its values when they
/// are first needed whole (StoredObject's `current`, a write, a comparison).
///
/// What it saves a fetched object that is only read: the buffer of its values (an allocation
/// and a free), and the decoding of attributes never read; a member of relationship-traverse
/// cost about 1,100 instructions to decode eagerly. A record is copied here only after
/// ``ValueCodec/validate(_:layout:reference:)`` accepted it, so a later decode cannot fail.
///
/// A chunk lives while an object holds it: one object kept from a large read keeps its chunk
/// (`RecordArena.chunkCapacity` bytes, or its own record) until its values are decoded.
///
/// `@unchecked Sendable`: the bytes are written only by the arena that made the chunk, before
/// any object holds it, and only read after; a chunk stays on its context's queue anyway.
///
/// Each record is its length (four bytes, in native order) and its bytes, so that an object
/// keeps only where its record starts.
final class RecordChunk: ManagedBuffer<Int, UInt8>, @unchecked Sendable {
    /// Calls `body` with the record at `start`.
    @inline(__always)
    func withRecord<R>(at start: UInt32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeMutablePointerToElements { elements in
            let record = UnsafeRawPointer(elements + Int(start))
            let count = record.loadUnaligned(as: UInt32.self)
            return try body(UnsafeRawBufferPointer(start: record + 4, count: Int(count)))
        }
    }
}

/// Where one object's record lies in its chunk.
struct RecordBytes {
    let chunk: RecordChunk
    let start: UInt32
}

/// Copies records into chunks, for one read.
struct RecordArena {
    /// A chunk's size: records are tens of bytes, so one allocation holds hundreds.
    static let chunkCapacity = 32 * 1024
    /// A record this large gets a chunk of its own (so a chunk is never mostly unused for it).
    static let ownChunkThreshold = chunkCapacity / 8

    private var chunk: RecordChunk? = nil
    /// Bytes used in `chunk`, and its capacity (kept here, not read from the chunk per record).
    private var used = 0
    private var capacity = 0

    /// A copy of `bytes` (at most `UInt32.max - 4` of them), and where it lies.
    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) -> RecordBytes {
        let size = 4 + bytes.count
        if size > capacity - used || chunk == nil { return appendInNewChunk(bytes) }
        let start = used
        chunk.unsafelyUnwrapped.withUnsafeMutablePointerToElements { elements in
            Self.write(bytes, to: UnsafeMutableRawPointer(elements + start))
        }
        used = start + size
        return RecordBytes(chunk: chunk.unsafelyUnwrapped, start: UInt32(start))
    }

    @inline(never)
    private mutating func appendInNewChunk(_ bytes: UnsafeRawBufferPointer) -> RecordBytes {
        let size = 4 + bytes.count
        let capacity = size >= Self.ownChunkThreshold ? size : Self.chunkCapacity
        let made = unsafeDowncast(RecordChunk.create(minimumCapacity: capacity) { _ in capacity }, to: RecordChunk.self)
        made.withUnsafeMutablePointerToElements { elements in Self.write(bytes, to: UnsafeMutableRawPointer(elements)) }
        // A record with a chunk of its own leaves the current chunk in use for the next ones.
        if capacity == Self.chunkCapacity {
            chunk = made
            used = size
            self.capacity = capacity
        }
        return RecordBytes(chunk: made, start: 0)
    }

    /// `bytes`' length, then the bytes, at `destination`.
    @inline(__always)
    private static func write(_ bytes: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer) {
        destination.storeBytes(of: UInt32(bytes.count), as: UInt32.self)
        if !bytes.isEmpty { (destination + 4).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    }
}
