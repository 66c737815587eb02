import Policies

// A one-to-one pair: each end stores the other's ID URI, so a change writes up to four
// references (this object, its old partner, its new partner, the new partner's old partner),
// all in the context at once. The save keeps the pairs symmetric against the store as well
// (ObjectContext+OneToOneRepair.swift).

extension StoredObject {
    /// Makes `partner` this object's partner through `end`, and this object `partner`'s.
    func setPartner(_ partner: StoredObject?, _ end: OneToOneEnd) {
        // Faults are loaded; an end the store no longer holds is left alone (the save reports
        // a reference to it as objectNotFound).
        let context = owner
        func loaded(_ id: ObjectID?) -> StoredObject? { id.flatMap { try? context?.existingObject(with: $0) } }
        let uri = AttributeValue.string(storedID.uriString)
        let newPartner = partner.flatMap { loaded($0.storedID) }
        if let oldPartner = loaded(Self.referencedID(current[end.position])), oldPartner !== partner,
           oldPartner.current[end.inversePosition] == uri {
            oldPartner.setReference(.null, at: end.inversePosition)
        }
        setReference(partner.map { .string($0.storedID.uriString) } ?? .null, at: end.position)
        guard let newPartner else { return }
        if let previous = loaded(Self.referencedID(newPartner.current[end.inversePosition])), previous !== self,
           previous.current[end.position] == .string(newPartner.storedID.uriString) {
            previous.setReference(.null, at: end.position)
        }
        newPartner.setReference(uri, at: end.inversePosition)
    }
}

extension StoredObject {
    /// Writes a to-one's stored reference given as a value (the subscript, a decoded struct):
    /// a one-to-one's inverse follows as with `setDestination(_:of:)`.
    func assignReference(_ value: AttributeValue, at position: Int) {
        guard let context = owner,
              let relationship = entity.layout.relationships.first(where: { $0.storagePosition == position }),
              let end = context.core.schema.oneToOneEnd(entity.name, relationship.name) else {
            let moved = current[position] != value
            setReference(value, at: position)
            if moved, let relationship = entity.layout.relationships.first(where: { $0.storagePosition == position }) {
                appendToOrder(relationship)
            }
            return
        }
        if value == .null { return setPartner(nil, end) }
        // Not a reference to the destination entity: setReference stops with its message.
        guard let id = Self.referencedID(value), id.entityName == end.destination else { return setReference(value, at: position) }
        setPartner(context.object(with: id), end)
    }
}
