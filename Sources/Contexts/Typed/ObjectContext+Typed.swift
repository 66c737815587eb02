import Foundation
import Policies

// Typed inserts, fetches, lookups and deletes: a CairnModel struct in, ModelObjects out. The
// untyped API does the work; this file translates (FetchDescriptor.translation) and finishes
// on the objects what the store could not do.

extension ObjectContext {
    /// Inserts a new object holding `value`, with a temporary ID until it is saved.
    ///
    /// ```swift
    /// let ann = try context.insert(Person(name: "Ann", age: 30, city: "Oslo"))
    /// try context.save()
    /// ```
    ///
    /// - Throws: ``ContextError/unknownEntity(_:)`` when the schema lacks the model's entity,
    ///   ``TypedModelError``, `EncodingError`; nothing is inserted when it throws.
    @discardableResult
    public func insert<Model: CairnModel>(_ value: Model) throws -> ModelObject<Model> {
        checkQueue()
        let entity = try core.entity(named: Model.entity.name)
        let values = try Model.entity.values(of: value)
        let object = StoredObject(inserting: origin(for: entity.layout))
        object.current = ObjectValues(values, layout: entity.layout)
        object.insertedFlag = true
        register(object)
        return ModelObject(checked: object)
    }

    /// The objects of `Model` that `descriptor` selects, with the context's pending changes
    /// applied (as ``fetch(_:)``: each object once, registered objects as they are).
    ///
    /// ```swift
    /// let adults = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 18 }))
    /// ```
    ///
    /// What the store cannot run (``FetchDescriptor/translation``) is finished on the objects:
    /// the store's broader fetch registers its objects, and only the matches are returned.
    ///
    /// - Throws: as ``fetch(_:)``; what the predicate's evaluation throws; `DecodingError` when
    ///   a stored object does not fit `Model` and the predicate or sort needs its value.
    public func fetch<Model: CairnModel>(_ descriptor: FetchDescriptor<Model>) throws -> [ModelObject<Model>] {
        checkQueue()
        let translation = descriptor.translation
        let objects = try fetch(translation.request)
        guard translation.evaluatesPredicateOnObjects || translation.sortsOnObjects else {
            return objects.map { ModelObject(checked: $0) }
        }
        var matches: [(object: StoredObject, value: Model)] = []
        for object in objects {
            let value = try PropertyValuesDecoder.decode(Model.self, from: object.values)
            if let predicate = descriptor.predicate, translation.evaluatesPredicateOnObjects, try !predicate.evaluate(value) {
                continue
            }
            matches.append((object, value))
        }
        if translation.sortsOnObjects {
            // Swift's sort is stable, so ties keep the store's order (the base order).
            matches.sort { first, second in
                for sort in descriptor.sortBy {
                    switch sort.compare(first.value, second.value) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return false
            }
        }
        let offset = min(max(descriptor.fetchOffset ?? 0, 0), matches.count)
        let end = descriptor.fetchLimit.map { min(offset + max($0, 0), matches.count) } ?? matches.count
        return matches[offset..<end].map { ModelObject(checked: $0.object) }
    }

    /// The values of the objects `descriptor` selects, unsaved changes included.
    ///
    /// ```swift
    /// let people: [Person] = try context.fetchValues(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)]))
    /// ```
    ///
    /// - Throws: as ``fetch(_:)-(FetchDescriptor<Model>)``, and `DecodingError`.
    public func fetchValues<Model: CairnModel>(_ descriptor: FetchDescriptor<Model>) throws -> [Model] {
        try fetch(descriptor).map { try $0.value }
    }

    /// The objects of `Model` matching `predicate`, sorted: the same as a ``FetchDescriptor``.
    ///
    /// ```swift
    /// let oslo = try context.fetch(Person.self, where: #Predicate { $0.city == "Oslo" }, sortBy: [SortDescriptor(\.name)])
    /// ```
    ///
    /// - Throws: as ``fetch(_:)-(FetchDescriptor<Model>)``.
    public func fetch<Model: CairnModel>(
        _ type: Model.Type, where predicate: Predicate<Model>? = nil, sortBy: [SortDescriptor<Model>] = [],
        fetchLimit: Int? = nil, fetchOffset: Int? = nil
    ) throws -> [ModelObject<Model>] {
        try fetch(FetchDescriptor(predicate: predicate, sortBy: sortBy, fetchLimit: fetchLimit, fetchOffset: fetchOffset))
    }

    /// How many objects `fetch(descriptor)` would return. A predicate that translates whole is
    /// counted in the store, registering nothing.
    ///
    /// ```swift
    /// let adults = try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 18 }))
    /// ```
    ///
    /// - Throws: as ``fetch(_:)-(FetchDescriptor<Model>)``.
    public func fetchCount<Model: CairnModel>(_ descriptor: FetchDescriptor<Model>) throws -> Int {
        checkQueue()
        var countable = descriptor
        countable.sortBy = []  // order changes no count
        let translation = countable.translation
        if !translation.evaluatesPredicateOnObjects { return try count(for: translation.request) }
        return try fetch(countable).count
    }

    /// The object of `Model` with `id`, loaded now.
    ///
    /// ```swift
    /// let ann = try context.existingObject(Person.self, with: annID)
    /// ```
    ///
    /// - Throws: as ``existingObject(with:)``; ``TypedModelError/wrongEntity(model:entity:)``
    ///   for an ID of another entity.
    public func existingObject<Model: CairnModel>(_ type: Model.Type, with id: ObjectID) throws -> ModelObject<Model> {
        guard id.entityName == Model.entity.name else {
            throw TypedModelError.wrongEntity(model: "\(Model.self)", entity: id.entityName)
        }
        return ModelObject(checked: try existingObject(with: id))
    }

    /// The object of `Model` with `id`: registered, or a fault loaded on first read (whose
    /// reads throw ``ContextError/objectNotFound(_:)`` if the record is gone by then).
    ///
    /// ```swift
    /// let ann = try context.object(Person.self, with: annID)
    /// ```
    ///
    /// - Throws: ``TypedModelError/wrongEntity(model:entity:)`` for an ID of another entity.
    public func object<Model: CairnModel>(_ type: Model.Type, with id: ObjectID) throws(TypedModelError) -> ModelObject<Model> {
        guard id.entityName == Model.entity.name else {
            throw TypedModelError.wrongEntity(model: "\(Model.self)", entity: id.entityName)
        }
        return ModelObject(checked: object(with: id))
    }

    /// Deletes the object in the context; the next save deletes its record (``delete(_:)``).
    ///
    /// ```swift
    /// context.delete(ann)
    /// try context.save()
    /// ```
    public func delete<Model: CairnModel>(_ object: ModelObject<Model>) {
        delete(object.object)
    }

    /// How `descriptor` runs in this context: the plan of its translated request.
    ///
    /// ```swift
    /// print(try context.explain(FetchDescriptor<Person>(predicate: #Predicate { $0.age > 30 })))
    /// // index (age): 30 < age; count(for:) counts entries
    /// ```
    ///
    /// - Throws: as ``explain(_:)``.
    public func explain<Model: CairnModel>(_ descriptor: FetchDescriptor<Model>) throws(ContextError) -> FetchPlan {
        try explain(descriptor.translation.request)
    }
}
