import Foundation

/// A member prefetch's owners by their references (their IDs' URIs): which owner a member's
/// stored reference names, found from its bytes without making a string.
///
/// A canonical permanent reference (`cairn://<Entity>/p<key>`, every one a save writes) is
/// read as its key; anything else is compared as a string, as the fetch's `inverse IN owners`
/// compares it.
package final class OwnerReferences {
    /// The owners' IDs, by position: not the owners, which the objects of the read keep this
    /// for (their decoding's `sharing`), so that a reset finds its owners referenced only by
    /// its own lists (``SpareObjects``).
    private let ids: [ObjectID]
    /// Each owner's reference, by owner position: made only when asked for (a walk's index
    /// prefixes, a reference that is not canonical). Making them cost about 1,300 instructions
    /// an owner, more than a scan spends on each owner's ten members.
    package private(set) lazy var references: [String] = ids.map(\.uriString)
    private let ownerByKey: [UInt64: Int]
    /// The owners by key as an array from `denseBase` (-1: no owner), when the keys are close
    /// together; then `ownerByKey` is empty.
    private let dense: [Int32]?
    private let denseBase: UInt64
    /// `cairn://<Entity>/p`: the bytes every canonical permanent reference to an owner starts with.
    private let keyPrefix: [UInt8]
    /// The owner last found from a canonical reference (-1: none yet), and that reference's
    /// byte count and bytes: as four words (see `words(of:)`) when 8 to 32 of them, compared
    /// without a call, otherwise in `lastBytes`.
    @exclusivity(unchecked) private var lastExact = -1
    @exclusivity(unchecked) private var lastCount = 0
    @exclusivity(unchecked) private var lastWords: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    @exclusivity(unchecked) private var lastBytes: [UInt8] = []
    /// The owners by reference string, made when a reference is not canonical (none usually).
    private var ownerByReference: [String: Int]? = nil

    /// The owners' references; nil when two owners are one object.
    package init?(owners: [StoredObject]) {
        ids = owners.map(\.storedID)
        keyPrefix = Array("cairn://\(owners.first?.entity.name ?? "")/p".utf8)
        // Keys close together (the usual: owners fetched by a range or all of them): an array
        // by key, one load per member instead of a hash; two owners with one key are one object
        // (a context holds one object per ID).
        var low = UInt64.max, high: UInt64 = 0, allPermanent = true
        for owner in owners {
            guard let key = owner.primaryKey else {
                allPermanent = false
                break
            }
            low = min(low, key)
            high = max(high, key)
        }
        if allPermanent, !owners.isEmpty, high - low < UInt64(4 * owners.count + 64) {
            var dense = [Int32](repeating: -1, count: Int(high - low) + 1)
            for (position, owner) in owners.enumerated() {
                let slot = Int(owner.primaryKey! - low)
                guard dense[slot] < 0 else { return nil }
                dense[slot] = Int32(position)
            }
            self.dense = dense
            denseBase = low
            ownerByKey = [:]
            return
        }
        var ownerByKey: [UInt64: Int] = [:]
        ownerByKey.reserveCapacity(owners.count)
        var distinct = Set<ObjectIdentifier>(minimumCapacity: owners.count)
        for (position, owner) in owners.enumerated() {
            guard distinct.insert(ObjectIdentifier(owner)).inserted else { return nil }
            if let key = owner.primaryKey { ownerByKey[key] = position }
        }
        self.ownerByKey = ownerByKey
        dense = nil
        denseBase = 0
    }

    /// The owner that the reference with these bytes names, or nil; `exact`: its reference has
    /// exactly these bytes.
    @inline(__always)
    package func owner(ofBytes bytes: UnsafeRawBufferPointer) -> (owner: Int, exact: Bool)? {
        // Members come owner by owner (a scan in key order, a walk by owner): the last owner's
        // bytes first, one comparison instead of reading the key (inlined: nine members in ten).
        if lastCount == bytes.count, lastExact >= 0, (8...32).contains(bytes.count), Self.words(of: bytes) == lastWords {
            return (lastExact, true)
        }
        return owner(ofOtherBytes: bytes)
    }

    /// `owner(ofBytes:)` past its inlined comparison with the last owner's reference.
    @inline(never)
    private func owner(ofOtherBytes bytes: UnsafeRawBufferPointer) -> (owner: Int, exact: Bool)? {
        let short = (8...32).contains(bytes.count)
        if !short, lastExact >= 0, lastCount == bytes.count, lastBytes.withUnsafeBytes({ $0.elementsEqual(bytes) }) {
            return (lastExact, true)
        }
        if let key = canonicalKey(bytes) {
            // A canonical reference is its owner's URI byte for byte, or no owner's.
            guard let owner = ownerOfKey(key) else { return nil }
            lastExact = owner
            lastCount = bytes.count
            if short {
                lastWords = Self.words(of: bytes)
            } else {
                lastBytes.removeAll(keepingCapacity: true)
                lastBytes.append(contentsOf: bytes)
            }
            return (owner, true)
        }
        guard let text = String(validating: bytes, as: UTF8.self), let owner = owner(of: text) else { return nil }
        return (owner, references[owner].utf8.elementsEqual(bytes))
    }

    /// The 8 to 32 `bytes` as four words, the i-th loaded at `min(8 i, count - 8)`: equal words
    /// of two byte strings of one count are equal bytes.
    @inline(__always)
    private static func words(of bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64) {
        let last = bytes.count - 8
        return (bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: min(8, last), as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: min(16, last), as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: last, as: UInt64.self))
    }

    /// The key of a canonical permanent reference to the owners' entity (`keyPrefix`, then the
    /// key's digits: no leading zero but "0" itself, no overflow); nil for anything else.
    private func canonicalKey(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        let prefix = keyPrefix.count
        guard bytes.count > prefix, bytes.count <= prefix + 20,
              keyPrefix.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress!, prefix) == 0 }),
              bytes[prefix] != UInt8(ascii: "0") || bytes.count == prefix + 1
        else { return nil }
        var key: UInt64 = 0
        for position in prefix..<bytes.count {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit <= 9 else { return nil }
            let (times, overflowTimes) = key.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(digit))
            guard !overflowTimes && !overflowSum else { return nil }
            key = sum
        }
        return key
    }

    /// The owner of primary key `key`, or nil.
    @inline(__always)
    private func ownerOfKey(_ key: UInt64) -> Int? {
        if let dense {
            guard key >= denseBase, key - denseBase < UInt64(dense.count) else { return nil }
            let owner = dense[Int(key - denseBase)]
            return owner < 0 ? nil : Int(owner)
        }
        return ownerByKey[key]
    }

    /// The owner whose reference equals `reference` as strings do, or nil.
    package func owner(of reference: String) -> Int? {
        if ownerByReference == nil {
            ownerByReference = Dictionary(references.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        }
        return ownerByReference![reference]
    }

    /// The decoding's sharing for the reference at `position`: a member's reference to an
    /// owner is that owner's string, one for all its members (a cascade then compares each
    /// member's with the owner's at once, and its decode allocates none).
    func sharing(at position: Int) -> SharedStrings {
        // Held strongly: the objects made with it keep it, and it keeps `self`.
        SharedStrings(position: position) { [self] bytes in
            guard let (owner, exact) = owner(ofBytes: bytes), exact else { return nil }
            return references[owner]
        }
    }
}
