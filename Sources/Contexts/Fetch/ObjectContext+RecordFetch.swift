import Policies

// A fetch of every object of an entity into a root context that holds none (no predicate,
// sort, offset or limit): nothing in memory can change its answer, which is the stored records
// in key order. Each record is validated and kept undecoded, as a member prefetch keeps its
// members' (ObjectOrigin.swift): no buffer of values made, no attribute decoded until read.

extension ObjectContext {
    /// Every stored object of `entity`, attached (not registered), in key order. A record the
    /// validation refuses is decoded now, as any fetch decodes it (its extras, or its error).
    func fetchRecords(of entity: EntityDescription) throws(ContextError) -> [StoredObject] {
        let layout = entity.layout
        var made: [StoredObject] = []
        var arena = RecordArena(layout: layout, link: link)
        var spares = core.spareObjects.take()
        defer { core.spareObjects.giveBack(spares) }
        let offsets = UnsafeMutablePointer<UInt16>.allocate(capacity: max(layout.count, 1))
        defer { offsets.deallocate() }
        try withReadView { (view) throws(ContextError) in
            do {
                made.reserveCapacity(try view.estimatedCount(in: layout.tableName))
                try view.forEach(in: layout.tableName, from: nil, to: nil, reverse: false) { key, value, version in
                    guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
                    var reference: Range<Int>? = nil
                    if ValueCodec.validate(value, layout: layout, reference: &reference, valueOffsets: offsets) {
                        made.append(attachedRead(primaryKey, arena.append(value, offsets: offsets), version, &spares))
                    } else {
                        let id = ObjectID(entityName: layout.name, primaryKey: primaryKey)
                        let values = try ValueCodec.decode(value, layout: layout, of: id)
                        let object = StoredObject(origin: origin(for: layout), id: id, values: values, version: version)
                        attach(object)
                        made.append(object)
                    }
                    return true
                }
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        readOrigins.append(contentsOf: arena.kept)
        return made
    }

    /// An object read at record `version`, its values left in `record`, attached to this
    /// context: a spare object refilled when there is one (``SpareObjects``).
    @inline(__always)
    func attachedRead(_ primaryKey: UInt64, _ record: RecordBytes, _ version: UInt64, _ spares: inout SpareObjects.Taken) -> StoredObject {
        let object: StoredObject
        if let spare = spares.next() {
            spare.refill(primaryKey: primaryKey, record: record, version: version)
            object = spare
        } else {
            object = StoredObject(primaryKey: primaryKey, record: record, version: version)
        }
        attach(object)
        return object
    }
}
