import Policies

// Uniqueness constraints in a save: the constraint entries of a commit, duplicates within one
// save, constraint conflicts from failed "absent" conditions, and merging our object into the
// stored one a policy chose. Docs/MergePolicies.md, "Uniqueness constraints", states the contract.

/// What a key of a save's batch other than an entry's record is for: the failed conditions of
/// a commit are traced back to their entries through it.
enum SaveKeyRole {
    /// The put of the entry's entry for constraint `constraint` (its index in the entity).
    case uniqueness(entry: Int, constraint: Int)
    /// The delete of record `record` of the entry's `retiredRecords`.
    case retired(entry: Int, record: Int)
}

/// The stored object of a constraint conflict, as the policy saw it.
struct ConstraintTarget {
    let storedID: ObjectID
    let stored: (values: ObjectValues, version: UInt64)
    /// Our object's own record then (nil for an insert): what "discard our change" goes back to.
    let own: (values: ObjectValues, version: UInt64)?
}

extension ObjectContext {
    /// Appends the constraint entries' moves and the merged-away records' deletes: every delete
    /// first, then the puts, each conditioned on its key being absent.
    func appendUniquenessOperations(of entries: [SaveEntry], to batch: inout StorageBatch, roles: inout [StorageKey: SaveKeyRole]) {
        var puts: [(key: [UInt8], table: String, owner: [UInt8], role: SaveKeyRole)] = []
        for index in entries.indices {
            let entry = entries[index]
            for (position, record) in entry.retiredRecords.enumerated() {
                roles[StorageKey(table: entry.table, key: StorageMapping.key(for: record.id.primaryKey ?? 0))] =
                    .retired(entry: index, record: position)
            }
            entry.appendRetiredRecordOperations(to: &batch)
            for move in entry.uniquenessMoves() {
                if let oldKey = move.oldKey { batch.delete(oldKey, in: move.constraint.tableName, if: nil) }
                if let newKey = move.newKey {
                    puts.append((newKey, move.constraint.tableName, entry.key, .uniqueness(entry: index, constraint: move.constraintIndex)))
                }
            }
        }
        for put in puts {
            roles[StorageKey(table: put.table, key: put.key)] = put.role
            batch.put(put.owner, forKey: put.key, in: put.table, if: .absent)
        }
    }

    /// Throws when two objects of the save would hold the same values of a constraint, or when
    /// a constraint's values are too long for its entry.
    func checkUniquenessWithinSave(_ entries: [SaveEntry]) throws(ValidationError) {
        var owners: [StorageKey: Int] = [:]
        for index in entries.indices {
            switch entries[index].step {
            case .insert, .update: break
            default: continue
            }
            let entry = entries[index]
            for constraint in entry.object.entity.layout.uniquenessConstraints {
                guard let key = constraint.entryKey(entry.values) else { continue }
                let problem: ValidationError.Problem
                if key.count > StorageMapping.maxKeyBytes {
                    problem = .constrainedValuesTooLong(constraint: constraint.attributeNames, bytes: key.count)
                } else if let other = owners.updateValue(index, forKey: StorageKey(table: constraint.tableName, key: key)) {
                    problem = .duplicateInSave(constraint: constraint.attributeNames, otherObjectID: entries[other].object.storedID)
                } else {
                    continue
                }
                throw ValidationError(
                    objectID: entry.object.storedID, entityName: entry.object.entity.name,
                    attributeName: constraint.attributeNames[0], problem: problem)
            }
        }
    }

    /// Turns failed constraint puts into constraint conflicts (one per entry and round, for
    /// entries not in `skipping`), and takes the new state of merged-away records that moved.
    func addConstraintConflicts(
        _ failures: [(key: StorageKey, role: SaveKeyRole)], skipping: Set<Int>, in entries: inout [SaveEntry],
        view: any StorageReadView, to round: inout ConflictRound
    ) throws {
        var conflicted = skipping
        for (key, role) in failures {
            switch role {
            case let .retired(entryIndex, recordIndex):
                // The record we merge away moved meanwhile: it goes all the same, so the
                // commit must delete its current index entries.
                let record = entries[entryIndex].retiredRecords[recordIndex]
                let state = try core.committedState(of: record.id, entity: entries[entryIndex].object.entity, in: view)
                if let state {
                    entries[entryIndex].retiredRecords[recordIndex].values = state.values
                    entries[entryIndex].retiredRecords[recordIndex].version = state.version
                } else {
                    entries[entryIndex].retiredRecords[recordIndex].version = 0
                }
            case let .uniqueness(entryIndex, constraintIndex):
                guard conflicted.insert(entryIndex).inserted else { continue }
                let entry = entries[entryIndex]
                let entity = entry.object.entity
                let owner: [UInt8]?
                do { owner = try view.get(key.key, in: key.table)?.value } catch { throw ContextError(readFailure: error) }
                // Absent again or ours: the race is over, and the next commit settles it.
                guard let owner, let primaryKey = StorageMapping.primaryKey(of: owner) else {
                    conflicted.remove(entryIndex)
                    continue
                }
                let storedID = ObjectID(entityName: entity.name, primaryKey: primaryKey)
                guard storedID != entry.id, let stored = try core.committedState(of: storedID, entity: entity, in: view) else {
                    conflicted.remove(entryIndex)
                    continue
                }
                let isInsertion = entry.ancestorVersion == 0
                let own = isInsertion ? nil : try core.committedState(of: entry.id, entity: entity, in: view)
                let layout = entity.layout
                round.conflicts.append(MergeConflict(
                    constraint: layout.uniquenessConstraints[constraintIndex].attributeNames,
                    objectID: entry.object.storedID.uriString, storedObjectID: storedID.uriString,
                    ancestorValues: isInsertion ? [:] : entry.ancestorValues.dictionary(layout),
                    ancestorVersion: isInsertion ? 0 : entry.ancestorVersion,
                    ourValues: entry.values.dictionary(layout), storeValues: stored.values.dictionary(layout),
                    storeVersion: stored.version))
                round.entryIndices.append(entryIndex)
                round.theirs.append(stored)
                round.constraintTargets.append(ConstraintTarget(storedID: storedID, stored: stored, own: own))
            }
        }
        // A merged-away record deleted meanwhile has nothing left to delete.
        for index in entries.indices where entries[index].retiredRecords.contains(where: { $0.version == 0 }) {
            entries[index].retiredRecords.removeAll { $0.version == 0 }
        }
    }

    /// Applies a policy's resolution of a constraint conflict: `.write` merges the entry into
    /// the stored object (which keeps its ID; our own record, if any, is deleted in the same
    /// commit), `.takeStore` discards our insert or change, `.delete` deletes our object.
    func apply(_ resolution: Resolution, to entry: inout SaveEntry, mergingInto target: ConstraintTarget) throws {
        let entity = entry.object.entity
        switch resolution {
        case .write(let values):
            try entity.validate(values, of: target.storedID)
            if entry.ancestorVersion != 0, entry.id != target.storedID {
                entry.retiredRecords.append(SaveEntry.RetiredRecord(
                    id: entry.id, values: entry.ancestorValues, version: entry.ancestorVersion))
            }
            entry.id = target.storedID
            entry.ancestorValues = target.stored.values
            entry.ancestorVersion = target.stored.version
            entry.isConstraintMerge = true
            if values.hasSameValues(as: target.stored.values.dictionary(entity.layout)) {
                // Nothing to write; the check still makes the merge exact against that version.
                entry.values = target.stored.values
                entry.step = .check
            } else {
                entry.values = ObjectValues(values, layout: entity.layout)
                entry.step = .update
            }
        case .takeStore, .delete:
            if entry.ancestorVersion == 0 {
                entry.step = .discardInsert
            } else if case .delete = resolution {
                entry.step = .delete
            } else if entry.isConstraintMerge {
                entry.values = entry.ancestorValues
                entry.step = .check
            } else {
                entry.step = .takeStore(values: target.own?.values, version: target.own?.version ?? 0)
            }
        }
    }

    /// The temporary ID the object had, if it was inserted here.
    func temporaryID(of object: StoredObject) -> ObjectID? {
        object.storedID.isTemporaryID ? object.storedID : temporaryIDOfPermanent[object.storedID]
    }

    /// Makes `object` the stored object `storedID` after a constraint merge: its temporary ID
    /// (even after `obtainPermanentIDs`) finds it under the new ID, and another instance this
    /// context held for that ID is forgotten, since one object has one instance per context.
    func takeOverID(of object: StoredObject, to storedID: ObjectID) {
        if let held = registry[storedID], held !== object {
            forget(held, reason: "a uniqueness constraint merged another object of this context into it")
        }
        let oldID = object.storedID
        let temporary = temporaryID(of: object)
        changeID(of: object, to: storedID)
        if !oldID.isTemporaryID, let temporary {
            temporaryAliases[temporary] = storedID
            temporaryIDOfPermanent[oldID] = nil
            temporaryIDOfPermanent[storedID] = temporary
        }
    }
}
