import CairnTestSupport
import Contexts
import Glibc
import Locking
import Policies
import Testing

/// The storage seam's own promises (Docs/Architecture.md, "The storage seam"): a failed
/// conditional commit writes nothing and reports every failed condition with the record's
/// current version; commit observers see every commit that wrote; failures keep the backend's
/// code and operation.
@Suite("Storage seam")
struct StorageSeamTests {
    static func key(_ value: UInt8) -> [UInt8] { [0, 0, 0, 0, 0, 0, 0, value] }

    @Test("a failed commit writes nothing and lists every failed condition with the current version")
    func failedConditions() throws {
        let store = try TestStore()
        defer { store.close() }
        let storage = store.objects.storage
        var first = StorageBatch()
        first.put([1], forKey: Self.key(1), in: "seam", if: .absent)
        first.put([2], forKey: Self.key(2), in: "seam", if: .absent)
        guard case let .committed(version, recordVersions) = try storage.commit(first, durability: .normal) else {
            Issue.record("the first batch's conditions hold")
            return
        }
        #expect(recordVersions == [1, 1])
        #expect(try storage.commitVersion() == version)

        var second = StorageBatch()
        second.put([9], forKey: Self.key(1), in: "seam", if: .absent)          // present at 1
        second.put([9], forKey: Self.key(2), in: "seam", if: .version(5))      // present at 1
        second.delete(Self.key(3), in: "seam", if: .version(1))                 // absent
        second.put([9], forKey: Self.key(4), in: "seam", if: nil)               // would succeed
        guard case .conditionsFailed(let failures) = try storage.commit(second, durability: .normal) else {
            Issue.record("the second batch's conditions fail")
            return
        }
        let current = Dictionary(uniqueKeysWithValues: failures.map { ($0.key.key, $0.currentVersion) })
        #expect(current == [Self.key(1): 1, Self.key(2): 1, Self.key(3): 0])
        #expect(try storage.commitVersion() == version, "nothing was committed")

        let view = try storage.readView()
        defer { view.close() }
        var seen: [[UInt8]: UInt64] = [:]
        try view.visitValues(forKeys: (1...4).map { StorageKey(table: "seam", key: Self.key($0)) }) { index, value, recordVersion in
            if let value { seen[Self.key(UInt8(index + 1))] = UInt64(value.first!) * 100 + recordVersion }
        }
        #expect(seen == [Self.key(1): 101, Self.key(2): 201], "values and versions as the first batch left them")
    }

    @Test("reading records by primary key gives what reading their storage keys gives, absent ones included")
    func recordsByPrimaryKey() throws {
        let store = try TestStore()
        defer { store.close() }
        // Value 10 × n at key n, for n = 2, 3, 5, in one unconditional commit.
        _ = try store.objects.storage.commit(
            [2, 3, 5].reduce(into: StorageBatch()) { $0.put([$1 * 10], forKey: Self.key($1), in: "seam", if: nil) }, durability: .normal)
        let view = try store.objects.storage.readView()
        defer { view.close() }
        // Out of order and repeated: the engine's view rewrites one key buffer per record.
        let primaryKeys: [UInt64] = [5, 1, 2, 5, 4, 3]
        var byKey: [String] = [], byPrimaryKey: [String] = []
        try view.visitValues(forKeys: primaryKeys.map { StorageKey(table: "seam", key: Self.key(UInt8($0))) }) { index, value, version in
            byKey.append("\(index):\(value.map { Array($0) } ?? []):\(version)")
        }
        try view.visitRecords(in: "seam", primaryKeys: primaryKeys) { index, value, version in
            byPrimaryKey.append("\(index):\(value.map { Array($0) } ?? []):\(version)")
        }
        #expect(byPrimaryKey == byKey)
        #expect(byPrimaryKey == ["0:[50]:1", "1:[]:0", "2:[20]:1", "3:[50]:1", "4:[]:0", "5:[30]:1"])
    }

    @Test("every commit that writes reaches the commit observers with its version and keys")
    func commitObservers() throws {
        let store = try TestStore()
        defer { store.close() }
        let notices = ConditionLock<[StorageCommitNotice]>([])
        store.objects.storage.addCommitObserver { notice in notices.withLock { $0.append(notice) } }
        let context = store.context("A")
        let ids = try context.performAndWait { () throws -> [ObjectID] in
            let first = context.insert(entity: "Counter")
            let second = context.insert(entity: "Counter")
            try context.save()
            return [first.objectID, second.objectID]
        }
        let seen = notices.withLock { $0 }
        #expect(seen.count == 1, "one save, one commit")
        #expect(seen.first?.version == (try store.objects.storage.commitVersion()))
        let keys = Set(seen.first?.writtenKeys ?? [])
        #expect(keys == Set(ids.map { StorageKey(table: "entity:Counter", key: Self.key(UInt8($0.primaryKey!))) }))

        var checkOnly = StorageBatch()
        checkOnly.require(.absent, forKey: Self.key(200), in: "seam")
        _ = try store.objects.storage.commit(checkOnly, durability: .normal)
        #expect(notices.withLock { $0.count } == 1, "a commit that writes nothing is not a change")
    }

    @Test("opening a held store fails with the backend's code and the operation")
    func lockedStore() throws {
        let store = try TestStore()
        defer { store.close() }
        let thrown = #expect(throws: ContextError.self, "a second open of a held store must fail") {
            _ = try ObjectStore(directory: store.directory.path, schema: testSchema)
        }
        guard case .storage(let error)? = thrown, case .locked = error.code else {
            Issue.record("expected a storage error with the code .locked, got \(String(describing: thrown))")
            return
        }
        #expect(error.operation == "open")
        #expect(error.message.contains(store.directory.path))
    }
}
