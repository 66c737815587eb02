import Policies

// Inserting, deleting, looking objects up by ID, and the context's change lists.

extension ObjectContext {
    /// Inserts a new object of `entity`, holding the entity's default values and a temporary ID
    /// until it is saved.
    ///
    /// An entity the schema does not have stops the process (a programming error).
    ///
    /// ```swift
    /// let person = context.insert(entity: "Person")
    /// person["name"] = .string("Ann")
    /// ```
    @discardableResult
    public func insert(entity entityName: String) -> StoredObject {
        checkQueue()
        let object = StoredObject(inserting: origin(for: entityDescription(named: entityName).layout))
        object.insertedFlag = true
        register(object)
        return object
    }

    /// Inserts a new object of `entity` with a primary key of your choice: its ID is permanent
    /// at once (`cairn://<entity>/p<primaryKey>`).
    ///
    /// If a record with that key already exists when the context saves, the save fails with
    /// ``ContextError/primaryKeyInUse(_:)`` and writes nothing. Keys you choose are skipped by
    /// the allocator when it meets them.
    ///
    /// ```swift
    /// let ann = context.insert(entity: "Person", primaryKey: 1)
    /// ann.objectID.uriString   // "cairn://Person/p1"
    /// ```
    @discardableResult
    public func insert(entity entityName: String, primaryKey: UInt64) -> StoredObject {
        checkQueue()
        let entity = entityDescription(named: entityName)
        let id = ObjectID(entityName: entity.name, primaryKey: primaryKey)
        if let existing = registry[id] {
            contextMisuse(
                "ObjectContext '\(name)': cannot insert \(id): the context already holds that object "
                    + "(\(existing.deletedFlag ? "deleted, not yet saved" : "registered")); save first")
        }
        let object = StoredObject(origin: origin(for: entity.layout), id: id)
        object.current = entity.layout.defaultValues
        object.insertedFlag = true
        object.hasChosenKey = true
        register(object)
        return object
    }

    /// Inserts an object made with ``StoredObject/init(entity:)``.
    ///
    /// An object already in a context (this one or another) stops the process.
    ///
    /// ```swift
    /// let person = StoredObject(entity: schema.entity(named: "Person")!)
    /// try person.setValues(from: Person(name: "Ann", age: 30))
    /// context.insert(person)
    /// ```
    public func insert(_ object: StoredObject) {
        checkQueue()
        guard case .unattached = object.lifecycle else {
            if object.link === link, case .registered = object.lifecycle {
                contextMisuse("ObjectContext '\(name)': StoredObject \(object.storedID) is already inserted in this context")
            }
            checkOwnership(object, "insert(_:)")
            return
        }
        guard core.schema.entity(named: object.entity.name) == object.entity else {
            contextMisuse(
                "ObjectContext '\(name)': StoredObject's entity \(object.entity.name) is not the schema's entity of that name")
        }
        object.origin = origin(for: object.layout)
        object.insertedFlag = true
        register(object)
    }

    /// Deletes `object` in the context; the next save deletes its record. Deleting an object
    /// inserted since the last save just drops it (it is then forgotten).
    ///
    /// The relationships' delete rules apply at once (ObjectContext+DeleteRules.swift): nullified
    /// members lose their to-one, cascaded destinations are deleted too (so `deletedObjects`
    /// lists them), and a `deny` is checked by the save.
    ///
    /// ```swift
    /// context.delete(person)
    /// try context.save()
    /// ```
    public func delete(_ object: StoredObject) {
        delete(object, cascadedFrom: nil)
    }

    /// `delete(_:)` of an object that `owner`'s cascade deletes (nil: any other delete).
    func delete(_ object: StoredObject, cascadedFrom owner: CascadeOwner?) {
        checkQueue()
        checkOwnership(object, "delete(_:)")
        // Deleted already: a cascade that comes back to it ends here.
        if object.deletedFlag { return }
        let hasRules = !object.entity.layout.relationships.isEmpty
        if object.insertedFlag {
            if hasRules {
                object.deletedFlag = true
                applyDeleteRules(of: object, cascadedFrom: owner)
            }
            forget(object, reason: "its insertion was deleted before being saved")
            return
        }
        // The delete is conditional on the version read, so it needs the record loaded.
        if object.isFaultStorage { fulfillFault(object) }
        object.deletedFlag = true
        if hasRules { applyDeleteRules(of: object, cascadedFrom: owner) }
    }

    /// The object with `id`: the registered one, or a new fault that loads on first use
    /// (stopping the process if the record is gone then).
    ///
    /// Use ``existingObject(with:)`` when the object may have been deleted. A temporary ID this
    /// context does not know, or an unknown entity, stops the process.
    ///
    /// ```swift
    /// let person = context.object(with: id)
    /// print(person["name"])
    /// ```
    public func object(with id: ObjectID) -> StoredObject {
        checkQueue()
        if let object = registeredObject(for: id) { return object }
        if id.isTemporaryID {
            // A child may know a temporary ID from its parent's pending inserts: load it now.
            let entity = entityDescription(named: id.entityName)
            let record: BaseState?
            do {
                record = parent == nil ? nil : try baseState(of: id, entity: entity)
            } catch {
                contextMisuse("ObjectContext '\(name)': StoredObject \(id) could not be loaded: \(error)")
            }
            guard let record else { contextMisuse("ObjectContext '\(name)': \(ContextError.unknownTemporaryID(id))") }
            return adopt(record, askedFor: id, entity: entity)
        }
        let object = StoredObject(origin: origin(for: entityDescription(named: id.entityName).layout), id: id)
        object.isFaultStorage = true
        register(object)
        return object
    }

    /// The object with `id`, loaded now; throws when its record does not exist.
    ///
    /// A registered object is returned as it is (with its unsaved changes). In a child context
    /// the record is the parent's (its unsaved changes included), and a temporary ID of an
    /// object the parent has inserted is found too.
    ///
    /// ```swift
    /// do {
    ///     let person = try context.existingObject(with: id)
    /// } catch ContextError.objectNotFound {
    ///     // deleted meanwhile
    /// }
    /// ```
    ///
    /// - Throws: ``ContextError/objectNotFound(_:)``, ``ContextError/unknownTemporaryID(_:)``,
    ///   ``ContextError/unknownEntity(_:)``, or a storage error.
    public func existingObject(with id: ObjectID) throws(ContextError) -> StoredObject {
        checkQueue()
        if let object = registeredObject(for: id) {
            guard object.isFaultStorage else { return object }
            guard let record = try baseState(of: object.storedID, entity: object.entity) else {
                forget(object, reason: "it was found deleted in the store")
                throw ContextError.objectNotFound(id)
            }
            load(record, into: object)
            return object
        }
        if id.isTemporaryID && parent == nil { throw ContextError.unknownTemporaryID(id) }
        let entity = try core.entity(named: id.entityName)
        guard let record = try baseState(of: id, entity: entity) else {
            throw id.isTemporaryID ? ContextError.unknownTemporaryID(id) : ContextError.objectNotFound(id)
        }
        return adopt(record, askedFor: id, entity: entity)
    }

    /// Registers the object of a base record that was asked for by `id` (which the base may know
    /// by a newer, permanent ID): the already registered object when there is one.
    private func adopt(_ record: BaseState, askedFor id: ObjectID, entity: EntityDescription) -> StoredObject {
        if record.id != id, id.isTemporaryID {
            temporaryAliases[id] = record.id
            temporaryIDOfPermanent[record.id] = id
        }
        if let held = registry[record.id] {
            if held.isFaultStorage { load(record, into: held) }
            return held
        }
        return registerLoaded(record, entity: entity)
    }

    /// Gives inserted objects their permanent IDs now, before saving (allocating primary keys
    /// in the store). Their temporary IDs keep finding them in this context.
    ///
    /// ```swift
    /// let person = context.insert(entity: "Person")
    /// try context.obtainPermanentIDs(for: [person])
    /// person.objectID.isTemporaryID   // false
    /// ```
    ///
    /// - Throws: a storage error from the allocation commit.
    public func obtainPermanentIDs(for objects: [StoredObject]) throws(ContextError) {
        checkQueue()
        for object in objects { checkOwnership(object, "obtainPermanentIDs(for:)") }
        let pending = objects.filter { $0.insertedFlag && $0.storedID.isTemporaryID }
        let keys = try allocateKeys(for: pending)
        for object in pending {
            if let id = keys[ObjectIdentifier(object)] { changeID(of: object, to: id) }
        }
    }

    /// Marks an unchanged object so that the next save checks its version too, and fails (or
    /// asks the merge policy) if the store changed it meanwhile. The mark lasts one save.
    ///
    /// ```swift
    /// context.detectConflicts(for: account)   // the transfer read it; it must not have moved
    /// try context.save()
    /// ```
    public func detectConflicts(for object: StoredObject) {
        checkQueue()
        checkOwnership(object, "detectConflicts(for:)")
        if object.isFaultStorage { fulfillFault(object) }
        object.conflictCheckMark = true
    }

    // The change lists read the registration order, which holds the same objects as the registry
    // without indexing them: a list asked for right after a fetch (the members a cascade deleted)
    // does not index the objects it made (see `registry`).

    /// Whether the next save has anything to write.
    ///
    /// ```swift
    /// if context.hasChanges { try context.save() }
    /// ```
    public var hasChanges: Bool {
        checkQueue()
        return objectsInOrder.contains { $0.insertedFlag || $0.deletedFlag || isUpdated($0) }
    }

    /// Objects inserted since the last save.
    ///
    /// ```swift
    /// context.insertedObjects.count
    /// ```
    public var insertedObjects: Set<StoredObject> {
        checkQueue()
        return registeredObjects(flagged: { $0.insertedFlag })
    }

    /// Saved objects whose values changed since they were read or saved (not deleted ones).
    ///
    /// ```swift
    /// for person in context.updatedObjects { print(person.changedValues()) }
    /// ```
    public var updatedObjects: Set<StoredObject> {
        checkQueue()
        return Set(objectsInOrder.filter { !$0.deletedFlag && isUpdated($0) })
    }

    /// Objects deleted since the last save.
    ///
    /// ```swift
    /// context.deletedObjects.contains(person)
    /// ```
    public var deletedObjects: Set<StoredObject> {
        checkQueue()
        return registeredObjects(flagged: { $0.deletedFlag })
    }

    /// Every object the context holds, faults included. The context keeps them until it saves
    /// their deletion or is reset.
    ///
    /// ```swift
    /// context.registeredObjects.count
    /// ```
    public var registeredObjects: Set<StoredObject> {
        checkQueue()
        return Set(objectsInOrder)
    }

    // MARK: - Helpers

    /// The registered objects whose `flag` is set, in one pass: made at the size of every
    /// registered object, then remade at its own when most of that room went unused. Counting
    /// first would be a second pass over every object, each out of the cache again (a cascade's
    /// 10,000 deletes); a list filtered first would retain and release each object once more.
    ///
    /// Each object is read without a count of its own (the list holds it): iterating the list
    /// retained and released each; the set's count is its only one.
    private func registeredObjects(flagged flag: (StoredObject) -> Bool) -> Set<StoredObject> {
        let objects = objectsInOrder
        var set = Set<StoredObject>(minimumCapacity: objects.count)
        // `update(with:)`, not `insert`: the member `insert` hands back was retained and released
        // per object. An object equals only itself, so the set is the same.
        for position in objects.indices {
            Unmanaged.passUnretained(objects[position])._withUnsafeGuaranteedRef { object in
                if flag(object) { set.update(with: object) }
            }
        }
        // The caller may keep the set: at most four times the room it needs.
        guard set.count < objects.count / 4 else { return set }
        var exact = Set<StoredObject>(minimumCapacity: set.count)
        for object in set { exact.update(with: object) }
        return exact
    }

    func isUpdated(_ object: StoredObject) -> Bool {
        !object.insertedFlag && !object.isFaultStorage && object.hasLocalChanges
    }

    func entityDescription(named entityName: String) -> EntityDescription {
        guard let entity = core.schema.entity(named: entityName) else {
            contextMisuse("ObjectContext '\(name)': \(ContextError.unknownEntity(entityName)); schema entities: "
                + core.schema.entities.map(\.name).joined(separator: ", "))
        }
        return entity
    }

    /// Allocates permanent IDs for inserted objects with temporary IDs, by entity, in order.
    func allocateKeys(for objects: [StoredObject]) throws(ContextError) -> [ObjectIdentifier: ObjectID] {
        var byEntity: [String: [StoredObject]] = [:]
        var entityOrder: [String] = []
        for object in objects where object.storedID.isTemporaryID {
            if byEntity[object.entity.name] == nil { entityOrder.append(object.entity.name) }
            byEntity[object.entity.name, default: []].append(object)
        }
        var ids: [ObjectIdentifier: ObjectID] = [:]
        for entityName in entityOrder {
            let group = byEntity[entityName]!
            let keys = try core.allocatePrimaryKeys(count: group.count, for: entityName)
            for (object, key) in zip(group, keys) {
                ids[ObjectIdentifier(object)] = ObjectID(entityName: entityName, primaryKey: key)
            }
        }
        return ids
    }
}
