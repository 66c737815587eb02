import KVEngine
import Policies

// Fetching. Every fetch reads the latest committed state (a fresh snapshot; the seam for
// pinned query generations is `readSnapshot()`), then lays the context's own pending changes
// over it: registered objects answer with their in-memory values, pending deletes are left
// out, pending inserts are added.

extension ObjectContext {
    /// The objects matching `request`, with the context's pending changes applied.
    ///
    /// Each object appears once per context: an object already registered is returned as it is,
    /// unsaved changes included (and the predicate sees those changes). Objects inserted and not
    /// yet saved are included; objects deleted and not yet saved are not.
    ///
    /// ```swift
    /// let people = try context.fetch(FetchRequest(entityName: "Person", sortDescriptors: [.ascending("name")]))
    /// ```
    ///
    /// - Throws: ``ContextError/unknownEntity(_:)``, ``ContextError/corruptValue(_:_:)`` for a
    ///   record that does not decode, or a storage error.
    public func fetch(_ request: FetchRequest) throws(ContextError) -> [StoredObject] {
        checkQueue()
        let entity = try core.entity(named: request.entityName)
        return try matches(for: request, entity: entity).map { candidate in
            switch candidate.source {
            case .registered(let object):
                return object
            case let .stored(id, version):
                let object = StoredObject(entity: entity, id: id)
                object.current = candidate.values
                object.ancestorValues = candidate.values
                object.ancestorVersion = version
                register(object)
                return object
            }
        }
    }

    /// How many objects `fetch(request)` would return, without registering any.
    ///
    /// ```swift
    /// let adults = try context.count(for: FetchRequest(entityName: "Person", predicate: .compare("age", .greaterThanOrEqual, .int(18))))
    /// ```
    ///
    /// - Throws: as ``fetch(_:)``.
    public func count(for request: FetchRequest) throws(ContextError) -> Int {
        checkQueue()
        let entity = try core.entity(named: request.entityName)
        return try matches(for: request, entity: entity).count
    }

    /// A matching object before it is registered.
    struct Candidate {
        enum Source {
            case registered(StoredObject)
            case stored(ObjectID, version: UInt64)
        }
        let source: Source
        let values: PropertyValues
        let baseOrder: Int
    }

    /// The snapshot a fetch reads. Today always the latest commit; a pinned query generation
    /// would return its pinned snapshot here.
    func readSnapshot() throws(ContextError) -> Snapshot {
        try core.snapshot()
    }

    func matches(for request: FetchRequest, entity: EntityDescription) throws(ContextError) -> [Candidate] {
        let snapshot = try readSnapshot()
        defer { snapshot.close() }
        var candidates: [Candidate] = []
        var corrupt: ContextError?
        let table = StorageCore.table(for: entity.name)
        do {
            try snapshot.forEach(in: table) { key, value, version in
                guard let primaryKey = StorageCore.primaryKey(of: key) else { return true }
                let id = ObjectID(entityName: entity.name, primaryKey: primaryKey)
                let values: PropertyValues
                let source: Candidate.Source
                if let object = registry[id] {
                    if object.deletedFlag || object.insertedFlag { return true }
                    if object.isFaultStorage {
                        // Fill the fault from this very snapshot: consistent with the rest of the fetch.
                        do throws(ValueCodecError) {
                            object.current = try ValueCodec.decode(Array(value))
                        } catch {
                            corrupt = .corruptValue(id, error)
                            return false
                        }
                        object.ancestorValues = object.current
                        object.ancestorVersion = version
                        object.isFaultStorage = false
                    }
                    values = object.current
                    source = .registered(object)
                } else {
                    do throws(ValueCodecError) {
                        values = try ValueCodec.decode(Array(value))
                    } catch {
                        corrupt = .corruptValue(id, error)
                        return false
                    }
                    source = .stored(id, version: version)
                }
                if request.predicate?.evaluate(values) ?? true {
                    candidates.append(Candidate(source: source, values: values, baseOrder: candidates.count))
                }
                return true
            }
        } catch {
            throw storageError(error)
        }
        if let corrupt { throw corrupt }
        for object in objectsInOrder
        where object.insertedFlag && object.entity.name == entity.name && (request.predicate?.evaluate(object.current) ?? true) {
            candidates.append(Candidate(source: .registered(object), values: object.current, baseOrder: candidates.count))
        }
        if !request.sortDescriptors.isEmpty {
            candidates.sort { left, right in
                for descriptor in request.sortDescriptors {
                    let order = AttributeOrder.sortOrder(
                        left.values.value(of: descriptor.attribute), right.values.value(of: descriptor.attribute))
                    if order != 0 { return descriptor.ascending ? order < 0 : order > 0 }
                }
                return left.baseOrder < right.baseOrder
            }
        }
        let start = min(max(request.fetchOffset, 0), candidates.count)
        let end = request.fetchLimit.map { start + min(max($0, 0), candidates.count - start) } ?? candidates.count
        return Array(candidates[start..<end])
    }
}
