import Foundation
#if canImport(Glibc)
import Glibc
#endif

// What a save attempt's commit writes, as its persistent-history record (HistoryRecord.swift):
// made from the entries as they stand for that attempt, after the merge policy's resolutions,
// so the record describes exactly the commit it is part of.

extension SaveEntry {
    /// The changes this entry's commit makes: its own write, and the records a constraint
    /// merge retires. An update names the properties that differ from what the commit expects
    /// the store to hold.
    func historyChanges(into changes: inout (inserted: [HistoryChange], updated: [HistoryChange], deleted: [HistoryChange])) {
        for retired in retiredRecords { changes.deleted.append(HistoryChange(objectID: retired.id, kind: .delete)) }
        switch step {
        case .insert, .update:
            guard updatesStoredRecord else {
                changes.inserted.append(HistoryChange(objectID: id, kind: .insert))
                return
            }
            let differences = values.differences(from: ancestorValues)
            let layout = object.entity.layout
            let names = differences.positions.map { layout.attributes[$0].name } + differences.extraNames
            changes.updated.append(HistoryChange(objectID: id, kind: .update, updatedProperties: names.sorted()))
        case .delete:
            changes.deleted.append(HistoryChange(objectID: id, kind: .delete))
        case .check, .takeStore, .dropDeleted, .discardInsert:
            break  // writes nothing
        }
    }
}

extension ObjectContext {
    /// The history record of a commit of `entries`; nil when it writes no object (only checks).
    func historyRecord(of entries: [SaveEntry]) -> [UInt8]? {
        var changes: (inserted: [HistoryChange], updated: [HistoryChange], deleted: [HistoryChange]) = ([], [], [])
        for entry in entries { entry.historyChanges(into: &changes) }
        let all = changes.inserted + changes.updated + changes.deleted
        guard !all.isEmpty else { return nil }
        return HistoryRecord.encode(time: Date(), contextName: name, author: transactionAuthor, processID: getpid(),
                                    origin: core.origin, changes: all)
    }
}
