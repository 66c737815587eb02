import Policies

// Where a context reads from: its **base**. A root context's base is the store, read through
// `withReadView` (a fresh read view per read, or its pinned query generation). A child's base
// is its parent's **view**: the parent's own base with the parent's registered objects laid over
// it (their unsaved values; pending deletes left out; pending inserts added), asked for on the
// parent's queue. So a grandchild sees its parent's view, which sees the root's, which sees the
// store: nesting of any depth reads through the same two functions, `baseState(of:)` and
// `forEachVisible(of:_:)`.

/// One object as a context's base shows it.
struct BaseState: Sendable {
    /// The object's ID in the base: permanent once the root saved it, even when the asker knows
    /// it by its temporary ID.
    var id: ObjectID
    /// By position in the object's entity: every context of a store shares its schema.
    var values: ObjectValues
    /// The record version the base holds (0 for an object no context has saved yet).
    var version: UInt64
    /// The temporary ID the base knew the object by before it became permanent, if any: lets a
    /// child re-key the object it still holds under that temporary ID.
    var formerTemporaryID: ObjectID?
}

/// An object of a context's view: registered (its own values) or only in the base.
enum VisibleItem {
    case registered(StoredObject)
    case base(BaseState)
}

extension ObjectContext {
    /// Runs `body` on this context's queue and waits (inline when already there): how a child
    /// asks its parent. Typed-throws twin of `performAndWait`.
    func synchronously<T>(_ body: () throws(ContextError) -> T) throws(ContextError) -> T {
        let result = performAndWait { () -> Result<T, ContextError> in
            do throws(ContextError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Runs `body` with the read view a root context's fetches read: its pinned query generation
    /// (pinning it now if it waits for its next read), or a fresh view of the newest commit.
    /// `latest` skips the pin: only a merge, which advances the pin anyway, reads so.
    func withReadView<T>(latest: Bool = false, _ body: (any StorageReadView) throws(ContextError) -> T) throws(ContextError) -> T {
        if !latest {
            switch generationState {
            case .unpinned:
                break
            case .pinnedAtNextRead:
                let generation = try PinnedGeneration(core: core)
                generationState = .pinned(generation)
                return try body(generation.view)
            case .pinned(let generation):
                return try body(generation.view)
            }
        }
        let view = try core.readView()
        defer { view.close() }
        return try body(view)
    }

    /// The base's record of `id` (an object of `entity`), or nil when the base has no such object.
    func baseState(of id: ObjectID, entity: EntityDescription, latest: Bool = false) throws(ContextError) -> BaseState? {
        if let parent {
            return try parent.synchronously { () throws(ContextError) in try parent.visibleState(of: id, entity: entity) }
        }
        guard id.primaryKey != nil else { return nil }
        return try withReadView(latest: latest) { (view) throws(ContextError) in
            try core.committedState(of: id, entity: entity, in: view).map {
                BaseState(id: id, values: $0.values, version: $0.version)
            }
        }
    }

    /// The base's records of several objects, read together (one read view, or one visit to the
    /// parent).
    func baseStates(
        of objects: [(id: ObjectID, entity: EntityDescription)], latest: Bool = false
    ) throws(ContextError) -> [BaseState?] {
        guard !objects.isEmpty else { return [] }
        if let parent {
            return try parent.synchronously { () throws(ContextError) -> [BaseState?] in
                var records: [BaseState?] = []
                records.reserveCapacity(objects.count)
                for (id, entity) in objects { records.append(try parent.visibleState(of: id, entity: entity)) }
                return records
            }
        }
        return try withReadView(latest: latest) { (view) throws(ContextError) -> [BaseState?] in
            let committed = try core.committedStates(of: objects, in: view)
            var records: [BaseState?] = []
            records.reserveCapacity(objects.count)
            for (position, record) in committed.enumerated() {
                records.append(record.map { BaseState(id: objects[position].id, values: $0.values, version: $0.version) })
            }
            return records
        }
    }

    /// This context's view of one object (of `entity`), for a child asking (on this context's
    /// queue).
    func visibleState(of id: ObjectID, entity: EntityDescription) throws(ContextError) -> BaseState? {
        checkQueue()
        if let object = registeredObject(for: id) {
            if object.deletedFlag { return nil }
            if object.isFaultStorage {
                guard let record = try baseState(of: object.storedID, entity: object.entity) else {
                    forget(object, reason: "it was found deleted while a child context read it")
                    return nil
                }
                load(record, into: object)
            }
            return BaseState(
                id: object.storedID, values: object.current, version: object.ancestorVersion,
                formerTemporaryID: temporaryIDOfPermanent[object.storedID])
        }
        // A temporary ID this context never registered may still be known further up.
        if id.isTemporaryID && parent == nil { return nil }
        return try baseState(of: id, entity: entity)
    }

    /// This context's view of an entity, for a child asking (on this context's queue): base
    /// order, then pending inserts in insertion order.
    func visibleStates(of entity: EntityDescription) throws(ContextError) -> [BaseState] {
        checkQueue()
        var records: [BaseState] = []
        try forEachVisible(of: entity) { item in
            switch item {
            case .registered(let object):
                records.append(BaseState(
                    id: object.storedID, values: object.current, version: object.ancestorVersion,
                    formerTemporaryID: temporaryIDOfPermanent[object.storedID]))
            case .base(let record):
                records.append(record)
            }
        }
        return records
    }

    /// Visits this context's view of `entity`: each base record once (as the registered object
    /// when there is one, skipping pending deletes), then the pending inserts. Faults met on the
    /// way are filled from the same read, so one fetch is consistent.
    func forEachVisible(
        of entity: EntityDescription, expecting: (Int) -> Void = { _ in }, _ body: (VisibleItem) -> Void
    ) throws(ContextError) {
        // A context that held nothing when the visit began (the usual first fetch) has nothing
        // to look up for any record.
        let holdsObjects = !registry.isEmpty
        func visit(
            _ id: ObjectID, version: UInt64, formerTemporaryID: ObjectID?,
            _ values: () throws(ContextError) -> ObjectValues
        ) throws(ContextError) {
            var object = holdsObjects ? registry[id] : nil
            if object == nil, holdsObjects, let formerTemporaryID, let held = registry[formerTemporaryID], !held.insertedFlag {
                // We still hold it under the temporary ID an ancestor has since made permanent.
                changeID(of: held, to: id)
                object = held
            }
            guard let object else {
                body(.base(BaseState(id: id, values: try values(), version: version, formerTemporaryID: formerTemporaryID)))
                return
            }
            if object.deletedFlag || object.insertedFlag { return }
            if object.isFaultStorage {
                load(BaseState(id: id, values: try values(), version: version), into: object)
            }
            body(.registered(object))
        }

        if let parent {
            let records = try parent.synchronously { () throws(ContextError) in try parent.visibleStates(of: entity) }
            expecting(records.count)
            for record in records {
                try visit(record.id, version: record.version, formerTemporaryID: record.formerTemporaryID) { record.values }
            }
        } else {
            let layout = entity.layout
            try withReadView { (view) throws(ContextError) in
                do {
                    expecting(try view.estimatedCount(in: layout.tableName))
                    try view.forEach(in: layout.tableName, from: nil, to: nil, reverse: false) { key, value, version in
                        guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
                        let id = ObjectID(entityName: layout.name, primaryKey: primaryKey)
                        try visit(id, version: version, formerTemporaryID: nil) { () throws(ContextError) in
                            try ValueCodec.decode(value, layout: layout, of: id)
                        }
                        return true
                    }
                } catch {
                    throw ContextError(readFailure: error)
                }
            }
        }
        for object in pendingInserts where object.entity.name == entity.name {
            body(.registered(object))
        }
    }

    /// Fills `object` (a fault, or one being reloaded) with a base record as its ancestor.
    func load(_ record: BaseState, into object: StoredObject) {
        if record.id != object.storedID && registry[record.id] == nil { changeID(of: object, to: record.id) }
        object.isFaultStorage = false
        object.current = record.values
        object.ancestorValues = record.values
        object.ancestorVersion = record.version
    }

    /// Registers a new object loaded from a base record.
    func registerLoaded(_ record: BaseState, entity: EntityDescription) -> StoredObject {
        let object = StoredObject(origin: origin(for: entity.layout), id: record.id, values: record.values, version: record.version)
        register(object)
        return object
    }
}
