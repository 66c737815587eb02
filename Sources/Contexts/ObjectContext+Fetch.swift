import KVEngine
import Policies

// Fetching. Every fetch reads the context's base (the latest commit, the pinned query
// generation, or the parent's view for a child: ObjectContext+Reading.swift), then lays the
// context's own pending changes over it: registered objects answer with their in-memory values,
// pending deletes are left out, pending inserts are added.

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

    func matches(for request: FetchRequest, entity: EntityDescription) throws(ContextError) -> [Candidate] {
        var candidates: [Candidate] = []
        try forEachVisible(of: entity) { item in
            let values: PropertyValues
            let source: Candidate.Source
            switch item {
            case .registered(let object):
                values = object.current
                source = .registered(object)
            case .base(let record):
                values = record.values
                source = .stored(record.id, version: record.version)
            }
            if request.predicate?.evaluate(values) ?? true {
                candidates.append(Candidate(source: source, values: values, baseOrder: candidates.count))
            }
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
