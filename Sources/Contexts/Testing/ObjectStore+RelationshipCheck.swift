import Policies

// A hook for tests: the relationship graph checker. `package`: not public API.

extension ObjectStore {
    /// What is wrong with the stored graph, read in one view: every stored to-one must name a
    /// record of its destination entity (none may point at a deleted object), and a one-to-one's
    /// destination must name the object back. The to-many ends
    /// are derived from the to-ones, so no member can have an inverse pointing elsewhere; their
    /// index entries are `indexProblems()`'s to check. Many-to-many links must be symmetric and
    /// name stored objects (`linkProblems`). Empty when consistent.
    ///
    /// ```swift
    /// #expect(try objects.relationshipProblems() == [])
    /// ```
    package func relationshipProblems() throws -> [String] {
        let view = try coordinator.storage.readView()
        defer { view.close() }
        var keysByEntity: [String: Set<UInt64>] = [:]
        var references: [(source: String, relationship: String, target: ObjectID)] = []
        // One-to-one ends by (the object's URI, the reference's position): the target's URI.
        var pairEnds: [String: String] = [:]
        var pairs: [(source: ObjectID, end: OneToOneEnd, target: ObjectID)] = []
        for entity in schema.entities {
            let layout = entity.layout
            var keys = Set<UInt64>()
            try view.forEach(in: layout.tableName, from: nil, to: nil, reverse: false) { key, value, _ in
                guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
                keys.insert(primaryKey)
                let values = try ValueCodec.decode(value, layout: layout)
                for relationship in layout.relationships {
                    guard let position = relationship.storagePosition, values[position] != .null else { continue }
                    let source = "\(entity.name) p\(primaryKey)"
                    guard let target = StoredObject.referencedID(values[position]), !target.isTemporaryID else {
                        references.append((source, relationship.name, ObjectID(entityName: "", primaryKey: 0)))
                        continue
                    }
                    references.append((source, relationship.name, target))
                    if let end = schema.oneToOneEnd(entity.name, relationship.name) {
                        let id = ObjectID(entityName: entity.name, primaryKey: primaryKey)
                        pairEnds["\(id.uriString) \(end.position)"] = target.uriString
                        pairs.append((id, end, target))
                    }
                }
                return true
            }
            keysByEntity[entity.name] = keys
        }
        let dangling: [String] = references.compactMap { reference in
            guard let key = reference.target.primaryKey, keysByEntity[reference.target.entityName]?.contains(key) == true else {
                return "\(reference.source).\(reference.relationship) points at \(reference.target), which the store does not hold"
            }
            return nil
        }
        let asymmetric: [String] = pairs.compactMap { pair in
            let back = pairEnds["\(pair.target.uriString) \(pair.end.inversePosition)"]
            guard back == pair.source.uriString else {
                return "\(pair.source).\(pair.end.name) names \(pair.target), whose \(pair.end.inverse) names \(back ?? "nothing")"
            }
            return nil
        }
        return try dangling + asymmetric + linkProblems(in: view, keys: keysByEntity)
    }
}
