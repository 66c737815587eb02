import CairnTestSupport
import Foundation
import Testing
@testable import Contexts

/// The object layer's measured tricks each rely on an invariant, stated in one comment where
/// the trick lives; these pin the ones other suites do not (those comments name the tests).
@Suite struct ContainedTricksTests {
    /// `ObjectIDTable`: its keys hash as `ObjectID` does, so equal IDs (an ID and its copy
    /// rebuilt from its URI) meet and different ones (another entity, another key) stay apart.
    @Test func theContextsIDTableFindsEqualIDsAsASetDoes() {
        var ids: [ObjectID] = []
        for key in UInt64(0)..<2_000 {
            ids.append(ObjectID(entityName: "Person", primaryKey: key))
            ids.append(ObjectID(entityName: "Account", primaryKey: key))  // same key, other entity
        }
        for _ in 0..<500 { ids.append(.temporary(entityName: "Person")) }
        var table = ObjectIDTable<Int>()
        for (index, id) in ids.enumerated() { table[id] = index }
        #expect(table.count == ids.count && Set(ids).count == ids.count)
        var misses = 0
        for (index, id) in ids.enumerated() {
            let rebuilt = ObjectID(uriString: id.uriString)!
            let key = ObjectIDTable<Int>.Key(id: id), rebuiltKey = ObjectIDTable<Int>.Key(id: rebuilt)
            if table[rebuilt] != index || key != rebuiltKey || key.hashValue != rebuiltKey.hashValue
                || key._rawHashValue(seed: index) != rebuiltKey._rawHashValue(seed: index)
            { misses += 1 }
        }
        #expect(misses == 0)
        #expect(table[ObjectID(entityName: "Tag", primaryKey: 1)] == nil)
        #expect(table[ObjectID(entityName: "Account", primaryKey: 2_000)] == nil)
        table[ids[0]] = nil
        #expect(table.count == ids.count - 1 && table[ids[0]] == nil && table[ids[1]] == 1)
    }
}
