// The registered objects holding one reference in a to-one, found without testing every
// registered object: a fetch of a to-many's members (`to-one == owner`) is asked once per owner,
// and testing each of 10,000 registered objects per owner made reading 1,000 departments'
// employees quadratic. The map is rebuilt when `graphEpoch` moved, which every registration,
// forgetting, ID change and write of a to-one entity's values does; so it is never stale.
// Pinned by `RandomGraphEditTests`, which compares members read through it with a scan.

/// An entity's to-one, by position.
struct HeldReferenceKey: Hashable {
    let entity: ObjectIdentifier
    let position: Int
}

extension ObjectContext {
    /// The registered objects of `entity` (faults included, which answer by their record) whose
    /// in-memory value at `position` is the reference `reference`, in registration order.
    func heldReferences(to reference: String, entity: EntityLayout, position: Int) -> [StoredObject] {
        let key = HeldReferenceKey(entity: ObjectIdentifier(entity), position: position)
        if let cached = heldReferenceMaps[key], cached.epoch == graphEpoch { return cached.byReference[reference] ?? [] }
        var byReference: [String: [StoredObject]] = [:]
        for object in objectsInOrder where object.entity.layout === entity {
            if case .string(let held) = object.current[position] { byReference[held, default: []].append(object) }
        }
        heldReferenceMaps[key] = (graphEpoch, byReference)
        return byReference[reference] ?? []
    }
}
