import CairnTestSupport
import KVEngine
import Testing

/// A key rewritten before it is applied keeps its replaced version in the overlay only while
/// a snapshot open at the time may read it (`OverlayVersions.push`).
@Suite struct OverlayRewriteTests {
    /// The overlay's versions of `key`: (newest value, older values), oldest first.
    private func versions(_ store: Store, _ key: String) -> (newest: String?, older: [String?])? {
        store.core.overlay.withLock { state in
            state.entries[TableKey(table: WriteBatch.defaultTable, key: bytes(key))].map { versions in
                (text(versions.newest.value), versions.older.map { text($0.value) })
            }
        }
    }

    private func overlayBytes(_ store: Store) -> Int { store.core.overlay.withLock { $0.bytes } }

    @Test func aReplacedVersionIsKeptOnlyForSnapshotsThatMayReadIt() throws {
        try withStore(lazyOptions()) { store, _ in
            try store.put("k", "one")
            let oneVersion = overlayBytes(store)
            // No snapshot open: the rewrite replaces the version in place.
            try store.put("k", "two")
            #expect(versions(store, "k")?.newest == "two")
            #expect(versions(store, "k")?.older == [])
            #expect(overlayBytes(store) == oneVersion)

            // A snapshot open across the rewrite still reads what it saw.
            let pinned = try store.snapshot()
            try store.put("k", "three")
            #expect(versions(store, "k")?.older == ["two"])
            #expect(overlayBytes(store) == 2 * oneVersion + 2)  // "three" is a byte longer
            #expect(text(try pinned.get("k")?.value) == "two")
            #expect(try pinned.get("k")?.version == 2)
            let latest = try store.snapshot()
            #expect(text(try latest.get("k")?.value) == "three")
            latest.close()
            pinned.close()

            // Closed again: "three" is replaced in place; "two" waits for the apply's prune.
            try store.put("k", "four")
            #expect(versions(store, "k")?.newest == "four")
            #expect(versions(store, "k")?.older == ["two"])
            let reader = try store.snapshot()
            #expect(text(try reader.get("k")?.value) == "four")
            #expect(try reader.get("k")?.version == 4)
            reader.close()
            try store.flush()
            #expect(versions(store, "k") == nil)
            #expect(overlayBytes(store) == 0)
            let applied = try store.snapshot()
            defer { applied.close() }
            #expect(text(try applied.get("k")?.value) == "four")
        }
    }

    /// The commit path reads a key's state without copying its entry; it must answer as the
    /// reads' `visible` does, for every snapshot interval.
    @Test func theStateReadInPlaceMatchesTheVisibleEntry() {
        let entries = [
            OverlayEntry(commitVersion: 3, recordVersion: 1, value: [1]),
            OverlayEntry(commitVersion: 5, recordVersion: 1, value: nil),
            OverlayEntry(commitVersion: 8, recordVersion: 2, value: [2, 2]),
        ]
        let versions = OverlayVersions(newest: entries[2], older: Array(entries[..<2]))
        for floor in UInt64(0)...9 {
            for version in floor...10 {
                let expected = versions.visible(floor: floor, version: version)?.state
                #expect(versions.visibleState(floor: floor, version: version) == expected, "floor \(floor), version \(version)")
            }
        }
        #expect(versions.visibleState(floor: 4, version: 6) == .deleted(1))
        #expect(versions.visibleState(floor: 0, version: 4) == .live(1))
        #expect(versions.visibleState(floor: 8, version: 10) == nil)
    }
}
