import Testing
import KVEngine

/// `DigestSet` is how the commit path tells that a batch's keys are all different; a wrong
/// answer either way would check a repeated key against the stored state instead of the
/// batch's own earlier write. These compare it with `Set` on the same digests.
@Suite struct DigestSetTests {
    @Test func itAgreesWithASetOnRandomAndRepeatedDigests() {
        var random = SystemRandomNumberGenerator()
        let distinct = (0..<5_000).map { _ in random.next() as UInt64 }
        // Each digest twice, the second time well after the first, and some twice in a row.
        let digests = distinct + distinct.prefix(2_000) + distinct.suffix(100).flatMap { [$0, $0] }
        var seen = DigestSet(capacity: digests.count)
        var reference = Set<UInt64>()
        for digest in digests {
            let inserted = seen.insert(digest)  // (`#expect` cannot take a noncopyable value)
            #expect(inserted == reference.insert(digest).inserted)
        }
    }

    /// Digests sharing their low bits land in the same slot and are found by probing; the
    /// table filled to its stated capacity still answers.
    @Test func collidingDigestsAreToldApartUpToCapacity() {
        let count = 1_000
        let digests = (1...UInt64(count)).map { $0 << 40 | 0x5 }
        var seen = DigestSet(capacity: count)
        var answers: [Bool] = []
        for digest in digests { answers.append(seen.insert(digest)) }
        #expect(answers.allSatisfy { $0 })
        answers = []
        for digest in digests { answers.append(seen.insert(digest)) }
        #expect(answers.allSatisfy { !$0 })
    }

    /// 0 marks an empty slot, so the digest 0 is kept apart.
    @Test func theDigestZeroIsADigestLikeAnyOther() {
        var seen = DigestSet(capacity: 4)
        let answers = [seen.insert(0), seen.insert(16), seen.insert(0), seen.insert(16), seen.insert(32)]
        #expect(answers == [true, true, false, false, true])
    }
}
