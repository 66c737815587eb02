#if canImport(Glibc)
import Glibc
#endif

extension FaultFileSystem {
    /// The file system after a power loss that also reorders unsynced writes *within* a file:
    /// of each file's unsynced range (first to last changed byte), a random length is
    /// considered, and inside it every `sectorSize` block independently holds what was
    /// written, what was there before (zeros where the file was merely extended or
    /// preallocated), or garbage. So a later record can survive while an earlier one did not.
    ///
    /// Reordering *across* files needs no model for the log: it writes one file at a time and
    /// syncs it before creating the next, so at any moment at most one file holds unsynced
    /// bytes (the reliability suite asserts this at every crash point).
    ///
    /// Built on the public API only: the durable state comes from `afterPowerLoss(.dropUnsynced)`,
    /// the unsynced bytes from `contents(of:)`.
    ///
    /// ```swift
    /// let survivor = fileSystem.afterPowerLossReorderingWrites(seed: 7)
    /// ```
    public func afterPowerLossReorderingWrites(seed: UInt64, sectorSize: Int = 512) -> FaultFileSystem {
        var random = SeededRandom(seed: seed)
        let survivor = afterPowerLoss(.dropUnsynced, seed: random.next())
        for path in survivor.paths {
            guard let durable = survivor.contents(of: path), let current = contents(of: path),
                  let unsynced = FileState(current: current, durable: durable).unsyncedRange
            else { continue }
            let kept = Int(random.next(upTo: UInt64(unsynced.count + 1)))
            var bytes = durable
            if bytes.count < unsynced.lowerBound + kept {
                bytes += [UInt8](repeating: 0, count: unsynced.lowerBound + kept - bytes.count)
            }
            var offset = unsynced.lowerBound
            let end = unsynced.lowerBound + kept
            while offset < end {
                // Blocks are aligned to the file, as the page cache writes them back.
                let blockEnd = Swift.min(end, (offset / sectorSize + 1) * sectorSize)
                switch random.next(upTo: 3) {
                case 0: bytes.replaceSubrange(offset..<blockEnd, with: current[offset..<blockEnd])
                case 1:
                    // A block never written back: what was there before (zeros past the
                    // old end of the file).
                    break
                default:
                    for index in offset..<blockEnd { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
                }
                offset = blockEnd
            }
            survivor.setContents(of: path, to: bytes)
        }
        return survivor
    }

    /// Paths whose current bytes differ from what a power loss would keep of them (their
    /// unsynced tail), or whose existence is not durable yet.
    ///
    /// ```swift
    /// #expect(fileSystem.pathsWithUnsyncedState().count <= 1)
    /// ```
    public func pathsWithUnsyncedState() -> [String] {
        let durable = afterPowerLoss(.dropUnsynced, seed: 0)
        return paths.filter { durable.contents(of: $0) != contents(of: $0) }
    }
}
