// A reader following the log (`StoreCore.refresh`) decodes each record straight into the
// overlay's writes: it keeps no `LoggedCommit` of them, since what LMDB applies is pruned from
// its overlay table itself (`OverlayState.didApplyFollowed`). A one-record commit then costs
// its key and value arrays, and no array of operations with each operation's copies of them;
// the arrays are those of a dropped table where the reader kept them (`ByteArrayPool`).

extension OverlayInserts {
    /// Appends the writes of the commit of `version` whose payload is `payload`; false, with
    /// the writes as they were, when the payload is malformed. Keys and values are copied into
    /// `arrays`' kept arrays where it has them.
    mutating func appendDecoded(_ payload: UnsafeRawBufferPointer, version: UInt64, names: inout TableNames,
                                arrays: ByteArrayPool) -> Bool {
        let mark = count
        let parsed = LogRecordCodec.forEachOperation(payload, names: &names) { table, seed, _, keyBytes, recordVersion, value in
            append(key: TableKey(table: table, key: arrays.copy(keyBytes), digest: seed.finalize(keyBytes, rounds: 1, finalRounds: 3)),
                   entry: OverlayEntry(commitVersion: version, recordVersion: recordVersion, value: value.map { arrays.copy($0) }))
        }
        if !parsed { removeLast(from: mark) }
        return parsed
    }
}
