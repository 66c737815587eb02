/// What the objects of one entity in one context share, held by each object as one reference:
/// the entity's layout, the context's link (nil for an object not inserted yet), and, for the
/// objects of a read, the records that read copied out of its view undecoded.
///
/// One reference instead of three (entity, link, records): a fetched object is made with one
/// retain and freed with one release, and a read's objects with none (their context holds the
/// read's origins: see `StoredObject.borrowsOrigin`). Those are atomic operations, and each waits
/// for the stores before it (the object's fields, the record's copy) to drain: in
/// relationship-traverse the retains and releases took half the time of a member's fetch, read
/// and reset.
///
/// An undecoded record lets a fetched object that is only read skip the buffer of its values
/// (an allocation and a free) and the decoding of attributes never read: a read of an
/// attribute decodes only it, anything else (StoredObject's `current`, a write, a comparison)
/// decodes the record whole first. A record is copied here only after
/// ``ValueCodec/validate(_:layout:referencePosition:reference:valueOffsets:)`` accepted it, so a later decode
/// cannot fail. Each record is its length (four bytes, native order), its values' offsets
/// (two bytes per attribute: a read of one attribute goes straight to its value) and its bytes.
///
/// An origin lives while an object holds it, decoded or not (or its context, for the objects
/// it holds of a read): one object kept from a large read keeps its origin's records (`RecordArena.chunkCapacity` bytes, or its own record) and, for a
/// member prefetch, the owners whose references its decoding shares (`sharing`).
///
/// `@unchecked Sendable`: the records are written only by the arena that made the origin,
/// before any object holds it, and only read after; `layout` and `link` are immutable;
/// `isBorrowed` is used only on its context's queue.
final class ObjectOrigin: @unchecked Sendable {
    let layout: EntityLayout
    /// The context's link (see ``ContextLink``), for its registered objects; nil for objects
    /// made with `StoredObject(entity:)` and not inserted yet.
    let link: ContextLink?
    /// Undecoded records; nil for an origin without any.
    private let records: UnsafeMutableRawPointer?
    /// The strings the records' decoding shares (a member prefetch's: its owners' references);
    /// used only on the context's queue, as the objects are.
    let sharing: SharedStrings?
    /// For a read's origin that its context holds (`ObjectContext.readOrigins`): whether a
    /// registered object still borrows it, as last found. Used only on the context's queue.
    var isBorrowed = false

    /// An origin for objects of `layout` in the context of `link`, with room for `capacity`
    /// bytes of records, decoded with `sharing`.
    init(layout: EntityLayout, link: ContextLink?, capacity: Int = 0, sharing: SharedStrings? = nil) {
        self.layout = layout
        self.link = link
        self.sharing = sharing
        records = capacity > 0 ? UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8) : nil
    }

    deinit {
        records?.deallocate()
    }

    /// Calls `body` with the record at `start` and its values' offsets (one per attribute:
    /// `ValueCodec.validate`'s `valueOffsets`).
    @inline(__always)
    func withRecord<R>(at start: UInt32, _ body: (UnsafeRawBufferPointer, UnsafePointer<UInt16>) throws -> R) rethrows -> R {
        let record = UnsafeRawPointer(records.unsafelyUnwrapped + Int(start))
        let count = record.loadUnaligned(as: UInt32.self)
        let offsets = record + 4
        return try body(UnsafeRawBufferPointer(start: offsets + 2 * layout.count, count: Int(count)),
                        offsets.assumingMemoryBound(to: UInt16.self))
    }

    /// Bytes a record of `count` bytes takes.
    @inline(__always)
    func size(ofRecord count: Int) -> Int { 4 + 2 * layout.count + count }

    /// Writes `bytes`' length, the offsets, then the bytes, at `start` (within the capacity).
    @inline(__always)
    fileprivate func write(_ bytes: UnsafeRawBufferPointer, offsets: UnsafePointer<UInt16>, at start: Int) {
        let destination = records.unsafelyUnwrapped + start
        destination.storeBytes(of: UInt32(bytes.count), as: UInt32.self)
        let offsetBytes = 2 * layout.count
        (destination + 4).copyMemory(from: offsets, byteCount: offsetBytes)
        if !bytes.isEmpty { (destination + 4 + offsetBytes).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    }
}

/// Where one object's record lies: its origin (not retained: the arena holds it, then the
/// context) and where in it.
struct RecordBytes {
    let origin: Unmanaged<ObjectOrigin>
    let start: UInt32
}

/// Copies a read's records into origins of the read's context and entity.
struct RecordArena {
    /// An origin's room for records: records are tens of bytes, so one allocation holds hundreds.
    static let chunkCapacity = 32 * 1024
    /// A record this large gets an origin of its own (so an origin is never mostly unused for it).
    static let ownChunkThreshold = chunkCapacity / 8

    private let layout: EntityLayout
    private let link: ContextLink
    private let sharing: SharedStrings?
    /// Every origin made, held until the arena goes: then by the context the read's objects
    /// are registered in (`ObjectContext.readOrigins`; the objects hold none of their own).
    private(set) var kept: [ObjectOrigin] = []
    /// The origin records go to, one of `kept`.
    private var origin: Unmanaged<ObjectOrigin>? = nil
    /// Bytes used in `origin`, and its capacity.
    private var used = 0
    private var capacity = 0

    /// The bytes of a record's values' offsets.
    private let offsetBytes: Int

    init(layout: EntityLayout, link: ContextLink, sharing: SharedStrings? = nil) {
        self.layout = layout
        self.link = link
        self.sharing = sharing
        offsetBytes = 2 * layout.count
    }

    /// A copy of `bytes` (at most `UInt32.max - 8` of them), and where it lies: valid while
    /// the arena lives, and after as long as an object made with it does.
    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer, offsets: UnsafePointer<UInt16>) -> RecordBytes {
        let size = 4 + offsetBytes + bytes.count
        guard size <= capacity - used, let origin else { return appendInNewOrigin(bytes, offsets: offsets) }
        let start = used
        origin._withUnsafeGuaranteedRef { $0.write(bytes, offsets: offsets, at: start) }
        used = start + size
        return RecordBytes(origin: origin, start: UInt32(start))
    }

    @inline(never)
    private mutating func appendInNewOrigin(_ bytes: UnsafeRawBufferPointer, offsets: UnsafePointer<UInt16>) -> RecordBytes {
        let size = 4 + offsetBytes + bytes.count
        let capacity = size >= Self.ownChunkThreshold ? size : Self.chunkCapacity
        let made = ObjectOrigin(layout: layout, link: link, capacity: capacity, sharing: sharing)
        made.write(bytes, offsets: offsets, at: 0)
        kept.append(made)
        // A record with an origin of its own leaves the current one in use for the next ones.
        if capacity == Self.chunkCapacity {
            origin = Unmanaged.passUnretained(made)
            used = size
            self.capacity = capacity
        }
        return RecordBytes(origin: Unmanaged.passUnretained(made), start: 0)
    }
}
