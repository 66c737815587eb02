/// The digests of a batch's keys seen so far: enough to tell that its keys are all different
/// (different digests mean different keys), without holding the keys.
///
/// An open-addressing table of the digests themselves, probed linearly from the digest's low
/// bits. A digest is already a keyed hash of its key (SipHash with the process's secret
/// seed), so its bits place it as well as any hash of it would, and keys chosen to collide
/// cannot be built without the seed. `Set` hashed each digest again and went through its
/// generic insertion: about 100 instructions a key, a tenth of the commit path's check of a
/// large batch.
package struct DigestSet: ~Copyable {
    private let slots: UnsafeMutableBufferPointer<UInt64>
    private let mask: Int
    /// Whether the digest 0 was inserted (0 marks an empty slot).
    private var hasZero = false

    /// Room for `count` digests, at most three quarters full. With a `count` of 0 it holds
    /// nothing and allocates nothing (a batch of one key has nothing to compare).
    package init(capacity count: Int) {
        guard count > 0 else {
            slots = UnsafeMutableBufferPointer(start: nil, count: 0)
            mask = 0
            return
        }
        var size = 16
        while size * 3 < count * 4 { size *= 2 }
        slots = .allocate(capacity: size)
        slots.initialize(repeating: 0)
        mask = size - 1
    }

    deinit { slots.deallocate() }

    /// Adds `digest`; false when it was there already. At most `capacity` digests.
    package mutating func insert(_ digest: UInt64) -> Bool {
        precondition(!slots.isEmpty, "DigestSet made with no room")
        if digest == 0 {
            defer { hasZero = true }
            return !hasZero
        }
        var index = Int(truncatingIfNeeded: digest) & mask
        while true {
            let slot = slots[index]
            if slot == 0 {
                slots[index] = digest
                return true
            }
            if slot == digest { return false }
            index = (index + 1) & mask
        }
    }
}
