import Policies

// Reading and changing relationships. A to-one is a stored reference (the destination's ID URI)
// among the object's values; a to-many is read as the destination objects whose inverse to-one
// holds this object's ID (a fetch through the to-one's index, pending changes included). So
// setting either side changes one value, and the other side follows at once. Both ends of a
// change are updated in the context: the to-many owner by `membershipChangedFlag`, so its
// record is written (and versioned, and conflict-checked) by the save. A many-to-many's links
// are the context's own state (StoredObject+ManyToMany.swift).

extension StoredObject {
    /// The destination of the to-one `relationship`: a fault until touched, or nil when empty.
    ///
    /// ```swift
    /// let department = person.destination(of: "department")
    /// print(department?["name"] ?? .null)
    /// ```
    ///
    /// Stops the process for a name that is not a to-one of the entity, or an object outside a context.
    public func destination(of relationship: String) -> StoredObject? {
        let layout = toOne(relationship)
        checkAccess()
        guard let id = Self.referencedID(current[layout.storagePosition!]) else { return nil }
        return registeredOwner("destination(of:)").object(with: id)
    }

    /// Sets the to-one `relationship` to `destination` (nil empties it). The old destination's
    /// to-many loses this object and the new one's gains it, at once; both become updated. For
    /// a one-to-one, the inverse follows: the old partner's and the new partner's old partner's
    /// references are emptied, and the new partner's names this object.
    ///
    /// ```swift
    /// ann.setDestination(engineering, of: "department")
    /// ```
    ///
    /// Stops the process for a name that is not a to-one, a destination of another entity or
    /// another context.
    public func setDestination(_ destination: StoredObject?, of relationship: String) {
        let layout = toOne(relationship)
        checkAccess()
        let context = registeredOwner("setDestination(_:of:)")
        if let destination {
            context.checkOwnership(destination, "setDestination(_:of:)")
            guard destination.entity.name == layout.description.destination else {
                contextMisuse("\(entity.name).\(relationship) points at \(layout.description.destination) objects, "
                    + "not at \(destination.storedID)")
            }
        }
        if let end = context.core.schema.oneToOneEnd(entity.name, relationship) {
            setPartner(destination, end)
        } else {
            let value = destination.map { AttributeValue.string($0.storedID.uriString) } ?? .null
            let moved = current[layout.storagePosition!] != value
            setReference(value, at: layout.storagePosition!)
            if moved { appendToOrder(layout) }
        }
    }

    /// The members of the to-many `relationship`: the destination objects whose inverse points
    /// here, pending changes of the context included, found through the inverse's index and
    /// loaded in batches. A root context keeps the list with this object until a change or a
    /// commit could alter it (ObjectContext+Members.swift), so reading it again costs no fetch.
    ///
    /// ```swift
    /// for person in try engineering.members(of: "employees") { print(person["name"]) }
    /// ```
    ///
    /// - Throws: as ``ObjectContext/fetch(_:)``.
    public func members(of relationship: String) throws(ContextError) -> [StoredObject] {
        let layout = toMany(relationship)
        checkAccess()
        return try withRegisteredOwner("members(of:)") { context in
            Result { () throws(ContextError) -> [StoredObject] in
                if context.core.hasManyToMany, let end = context.core.schema.manyToManyEnd(entity.name, relationship) {
                    return try context.linkedMembers(of: self, end)
                }
                return try context.members(of: self, layout)
            }
        }.get()
    }

    /// How many members the to-many `relationship` has, without registering them.
    ///
    /// ```swift
    /// try engineering.memberCount(of: "employees")   // 2
    /// ```
    ///
    /// - Throws: as ``ObjectContext/count(for:)``.
    public func memberCount(of relationship: String) throws(ContextError) -> Int {
        let layout = toMany(relationship)
        checkAccess()
        let context = registeredOwner("memberCount(of:)")
        if context.core.hasManyToMany, let end = context.core.schema.manyToManyEnd(entity.name, relationship) {
            return try context.linkIDs(of: storedID, owner: self, end).count
        }
        return try context.count(for: memberRequest(layout))
    }

    /// Adds `member` to the to-many `relationship`: sets its inverse to-one to this object.
    ///
    /// ```swift
    /// engineering.addMember(ann, to: "employees")   // ann.destination(of: "department") === engineering
    /// ```
    public func addMember(_ member: StoredObject, to relationship: String) {
        let layout = toMany(relationship)
        if let end = manyToManyEnd(relationship) { return setLinked(member, end, linked: true, "addMember(_:to:)") }
        member.setDestination(self, of: layout.description.inverse)
    }

    /// Removes `member` from the to-many `relationship` (its inverse to-one becomes nil); nothing
    /// when it is not a member.
    ///
    /// ```swift
    /// engineering.removeMember(ann, from: "employees")
    /// ```
    public func removeMember(_ member: StoredObject, from relationship: String) {
        let layout = toMany(relationship)
        if let end = manyToManyEnd(relationship) { return setLinked(member, end, linked: false, "removeMember(_:from:)") }
        guard member.destination(of: layout.description.inverse) === self else { return }
        member.setDestination(nil, of: layout.description.inverse)
    }

    /// Makes `members` the whole to-many `relationship`: members not listed are removed, the
    /// listed ones added (in this order, for an ordered to-many).
    ///
    /// ```swift
    /// try engineering.replaceMembers(of: "employees", with: [ann, bob])
    /// ```
    ///
    /// - Throws: as ``members(of:)``, which reads the current members first.
    public func replaceMembers(of relationship: String, with members: [StoredObject]) throws(ContextError) {
        let layout = toMany(relationship)
        let kept = Set(members.map(ObjectIdentifier.init))
        if let end = manyToManyEnd(relationship) { return try replaceLinks(end, with: members, keeping: kept) }
        for member in try self.members(of: relationship) where !kept.contains(ObjectIdentifier(member)) {
            member.setDestination(nil, of: layout.description.inverse)
        }
        for member in members { member.setDestination(self, of: layout.description.inverse) }
        if layout.description.isOrdered { placeInOrder(members, layout) }
    }

    // MARK: - Helpers

    /// Writes a to-one's stored reference and marks both to-many ends (old and new) changed.
    func setReference(_ value: AttributeValue, at position: Int) {
        let old = current[position]
        guard old != value else { return }
        if case .string = value {
            guard let id = Self.referencedID(value), let relationship = entity.layout.relationships.first(where: { $0.storagePosition == position }),
                  id.entityName == relationship.description.destination else {
                contextMisuse("\(entity.name).\(entity.layout.attributes[position].name) holds a reference to a "
                    + "destination object; set it with setDestination(_:of:), not to \(value)")
            }
        } else if value != .null {
            contextMisuse("\(entity.name).\(entity.layout.attributes[position].name) is a to-one relationship; "
                + "set it with setDestination(_:of:), not to \(value)")
        }
        write(value, at: position)
        noteGraphChange()
        guard let context = owner else { return }
        for end in [old, value] {
            if let id = Self.referencedID(end) { context.markMembershipChanged(of: id) }
        }
    }

    /// The object ID a stored reference names; nil for null (or a value that is no reference).
    static func referencedID(_ value: AttributeValue) -> ObjectID? {
        guard case .string(let uri) = value else { return nil }
        return ObjectID(uriString: uri)
    }

    /// The request for the members of a to-many of this object.
    func memberRequest(_ layout: RelationshipLayout) -> FetchRequest {
        FetchRequest(entityName: layout.description.destination,
                     predicate: .compare(layout.description.inverse, .equal, .string(storedID.uriString)),
                     sortDescriptors: OrderKeys.sort(layout))
    }

    private func toOne(_ name: String) -> RelationshipLayout {
        guard let layout = withLayout({ $0.relationship(named: name) }), !layout.isToMany else {
            contextMisuse("entity \(entity.name) has no to-one relationship \"\(name)\" (its relationships: "
                + entity.relationships.map(\.name).joined(separator: ", ") + ")")
        }
        return layout
    }

    private func toMany(_ name: String) -> RelationshipLayout {
        guard let layout = withLayout({ $0.relationship(named: name) }), layout.isToMany else {
            contextMisuse("entity \(entity.name) has no to-many relationship \"\(name)\" (its relationships: "
                + entity.relationships.map(\.name).joined(separator: ", ") + ")")
        }
        return layout
    }

    /// `body` with the context the object is registered in, not retained (through its link: a
    /// count on a context, slow because weak references point at it, cost about 250
    /// instructions a `members(of:)`); stops the process as `registeredOwner` does without one.
    func withRegisteredOwner<R>(_ operation: String, _ body: (ObjectContext) -> R) -> R {
        if case .registered = lifecycle, let result = link?.withContext(body) { return result }
        return body(registeredOwner(operation))
    }

    func registeredOwner(_ operation: String) -> ObjectContext {
        guard case .registered = lifecycle, let context = owner else {
            contextMisuse("\(operation) on \(storedID), which is not registered in a context: insert it first")
        }
        return context
    }
}

extension ObjectContext {
    /// Marks the object `id` names as having changed to-many members, loading it if it is a
    /// fault; nothing for an inserted object or one deleted in the store.
    func markMembershipChanged(of id: ObjectID) {
        guard let object = try? existingObject(with: id), !object.insertedFlag else { return }
        object.membershipChangedFlag = true
    }
}
