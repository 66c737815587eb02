import Policies

// A hook for tests and the kill loop: the index consistency checker. `package`: not public API.

extension ObjectStore {
    /// What disagrees between the records and the indexes, read in one view: each declared
    /// index must hold exactly one entry per record of its entity (the key its values make)
    /// and nothing else, each uniqueness constraint one entry (owned by its record) per record
    /// with no null among its values, and the store's index list must name exactly the
    /// declared indexes and constraints.
    /// Empty when consistent.
    ///
    /// ```swift
    /// #expect(try objects.indexProblems() == [])
    /// ```
    package func indexProblems() throws -> [String] {
        let view = try coordinator.storage.readView()
        defer { view.close() }
        var problems: [String] = []
        var listed = Set<String>()
        try view.forEach(in: StorageMapping.indexListTable, from: nil, to: nil, reverse: false) { key, _, _ in
            listed.insert(String(decoding: key, as: UTF8.self))
            return true
        }
        var declared = Set<String>()
        for entity in schema.entities {
            let layout = entity.layout
            guard !layout.indexes.isEmpty else { continue }
            var expected: [Set<[UInt8]>] = Array(repeating: [], count: layout.indexes.count)
            var expectedOwners: [[[UInt8]: [UInt8]]] = Array(repeating: [:], count: layout.uniquenessConstraints.count)
            try view.forEach(in: layout.tableName, from: nil, to: nil, reverse: false) { key, value, _ in
                guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
                let values = try ValueCodec.decode(value, layout: layout)
                for (position, index) in layout.indexes.enumerated() {
                    expected[position].insert(IndexKeyEncoding.entryKey(values, index: index, primaryKey: primaryKey))
                }
                for (position, constraint) in layout.uniquenessConstraints.enumerated() {
                    guard let entryKey = constraint.entryKey(values) else { continue }
                    if expectedOwners[position].updateValue(Array(key), forKey: entryKey) != nil {
                        problems.append("\(constraint.tableName): two records hold the same values")
                    }
                }
                return true
            }
            for (position, constraint) in layout.uniquenessConstraints.enumerated() {
                declared.insert(constraint.tableName)
                var found: [[UInt8]: [UInt8]] = [:]
                try view.forEach(in: constraint.tableName, from: nil, to: nil, reverse: false) { key, value, _ in
                    found[Array(key)] = Array(value)
                    return true
                }
                if found != expectedOwners[position] {
                    problems.append("\(constraint.tableName): \(found.count) entries, not one per constrained record "
                        + "(\(expectedOwners[position].count)) owned by it")
                }
            }
            for (position, index) in layout.indexes.enumerated() {
                declared.insert(index.tableName)
                var found = Set<[UInt8]>()
                try view.forEach(in: index.tableName, from: nil, to: nil, reverse: false) { key, value, _ in
                    found.insert(Array(key))
                    if !value.isEmpty { problems.append("\(index.tableName): an entry has a \(value.count)-byte value") }
                    return true
                }
                let missing = expected[position].subtracting(found), stale = found.subtracting(expected[position])
                if !missing.isEmpty { problems.append("\(index.tableName): \(missing.count) record(s) without their entry") }
                if !stale.isEmpty { problems.append("\(index.tableName): \(stale.count) entr(y/ies) matching no record") }
            }
        }
        if listed != declared {
            problems.append("the index list \(listed.sorted()) is not the declared indexes \(declared.sorted())")
        }
        return problems
    }
}
