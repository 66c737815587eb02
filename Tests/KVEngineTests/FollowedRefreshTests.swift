import CairnTestSupport
import Foundation
import KVEngine
import Testing

/// A reader decodes the commits one refresh reads straight into its overlay, keeping no list
/// of them (`StoreCore.refresh`): a later write of a key still hides an earlier one, and the
/// reader still counts the commits it holds above LMDB's.
@Suite struct FollowedRefreshTests {
    @Test func aRefreshsCommitsShowTheirLastWriteOfEachKeyAndCountAsCommits() throws {
        var options = lazyOptions()
        options.durability = .normal
        try withStore(options) { store, directory in
            try store.put("applied", "a")
            try store.flush()
            // Rewritten, deleted, deleted and written again: one refresh reads them all.
            try store.put("k", "1")
            try store.put("k", "2")
            try store.put("gone", "x")
            var delete = WriteBatch()
            delete.delete("gone")
            try store.commit(delete)
            try store.put("back", "x")
            var deleteBack = WriteBatch()
            deleteBack.delete("back")
            try store.commit(deleteBack)
            try store.put("back", "y")
            try store.put("k", "3")
            try withCopy(of: directory) { path in
                let reader = try openReader(path)
                defer { reader.close() }
                let snapshot = try reader.snapshot()
                defer { snapshot.close() }
                #expect(text(try snapshot.get("k")?.value) == "3")
                #expect(try snapshot.get("gone") == nil)
                #expect(text(try snapshot.get("back")?.value) == "y")
                #expect(text(try snapshot.get("applied")?.value) == "a")
                let stats = try reader.stats()
                #expect(stats.commitVersion == 9)
                #expect(stats.overlayCommits == 8, "the reader holds \(stats.overlayCommits) commits above LMDB's")
            }
        }
    }
}
