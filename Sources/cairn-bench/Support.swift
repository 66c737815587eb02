import Foundation
import KVEngine

/// The benchmark's data: 16-byte keys and 100-byte values, the same for every system.
enum Dataset {
    static func key(_ index: Int) -> [UInt8] {
        var key = Array("k".utf8)
        let digits = String(index)
        key += Array(repeating: UInt8(ascii: "0"), count: 15 - digits.utf8.count) + Array(digits.utf8)
        return key
    }

    static func value(_ index: Int) -> [UInt8] {
        var value = [UInt8](repeating: 0, count: 100)
        var state = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15
        for position in 0..<100 {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            value[position] = UInt8(97 + (state % 26))
        }
        return value
    }

    /// 0..<count in a seeded random order.
    static func shuffled(_ count: Int, seed: UInt64) -> [Int] {
        var generator = SplitMix(state: seed)
        var order = Array(0..<count)
        order.shuffle(using: &generator)
        return order
    }
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// The directory every workload's stores are made in; removed when the process exits.
let scratchRoot = NSTemporaryDirectory() + "cairn-bench-\(getpid())"

/// A fresh directory under the benchmark's scratch root.
func scratchDirectory(_ name: String) -> String {
    let path = scratchRoot + "/\(name)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func removeDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Runs `body(index)` on `count` threads at once; returns when all are done.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

/// Cairn's store options for the benchmark: defaults, full durability.
func cairnOptions() -> Store.Options {
    var options = Store.Options()
    options.mapSize = benchMapSize
    return options
}

/// LMDB map size for every system; CAIRN_BENCH_MAP_MB lowers it for tools like valgrind
/// that cannot reserve 64 GiB of address space.
let benchMapSize: Int = ProcessInfo.processInfo.environment["CAIRN_BENCH_MAP_MB"].flatMap { Int($0) }.map { $0 << 20 } ?? 64 << 30

/// A box a workload can fill in `prepare` and use in `run`.
///
/// `@unchecked Sendable`: the harness calls prepare, run and finish one after another on
/// one thread.
final class Slot<Value>: @unchecked Sendable {
    var value: Value?
    init(_ value: Value? = nil) { self.value = value }
}
