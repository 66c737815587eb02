/// A small, fast, seedable random number generator (SplitMix64), so that every randomised
/// test can print its seed and a failing seed can be replayed exactly.
///
/// ```swift
/// var random = SeededRandom(seed: 42)
/// let delay = random.next(upTo: 300)
/// ```
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// A seed from the environment variable `name` when set (to replay), else a fresh one.
    public static func seed(fromEnvironment name: String = "CAIRN_SEED") -> UInt64 {
        if let text = getenvString(name), let value = UInt64(text) { return value }
        return UInt64.random(in: 1...UInt64.max)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A number in 0..<bound (0 when bound is 0).
    public mutating func next(upTo bound: UInt64) -> UInt64 {
        bound == 0 ? 0 : next() % bound
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// The value of an environment variable, if set.
public func getenvString(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
