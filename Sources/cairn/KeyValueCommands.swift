import KVEngine

/// `put`, `get`, `delete`, `scan`, `dump` and `ingest`: reading and writing records.
///
/// Keys and values on the command line are UTF-8 strings; records are printed as UTF-8
/// (bytes that are not valid UTF-8 show as U+FFFD), one `key<TAB>value` per line.
enum KeyValueCommands {
    static let group = CommandGroup(title: "Key-value commands", commands: [
        put, get, delete, scan, dump, IngestCommand.command,
    ])

    static let tableOption = OptionSpec.value("table", "T", "The table to use (default \"\(WriteBatch.defaultTable)\").")

    static let put = Command(
        name: "put",
        summary: "Store VALUE under KEY, durably.",
        arguments: ["STORE", "KEY", "VALUE"],
        options: [tableOption],
        discussion: """
            Creates the store when it does not exist. Returns once the commit is on disk
            (fdatasync'd). Keys are 1 to 511 bytes. Put '--' before a key or value that
            starts with a dash.
            """
    ) { arguments in
        let (path, key, value) = (arguments.positionals[0], arguments.positionals[1], arguments.positionals[2])
        let store = try StoreAccess.openOrCreate(path)
        defer { store.close() }
        var batch = WriteBatch()
        batch.put(value, forKey: key, in: table(arguments))
        try store.commit(batch, durability: .full)
        return .success
    }

    static let get = Command(
        name: "get",
        summary: "Print the value stored under KEY.",
        arguments: ["STORE", "KEY"],
        options: [tableOption],
        discussion: "Exits with status 2 when there is no record under KEY."
    ) { arguments in
        let (path, key) = (arguments.positionals[0], arguments.positionals[1])
        let tableName = table(arguments)
        let store = try StoreAccess.openExisting(path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        guard let record = try snapshot.get(key, in: tableName) else {
            throw CommandError.notFound("no record under key \"\(key)\" in table \(tableName)")
        }
        StandardStream.output.write(String(decoding: record.value, as: UTF8.self) + "\n")
        return .success
    }

    static let delete = Command(
        name: "delete",
        summary: "Remove the record under KEY, durably.",
        arguments: ["STORE", "KEY"],
        options: [tableOption],
        discussion: "Deleting a key that has no record is not an error."
    ) { arguments in
        let (path, key) = (arguments.positionals[0], arguments.positionals[1])
        let store = try StoreAccess.openExisting(path)
        defer { store.close() }
        var batch = WriteBatch()
        batch.delete(key, in: table(arguments))
        try store.commit(batch, durability: .full)
        return .success
    }

    static let scan = Command(
        name: "scan",
        summary: "Print records in key order as key<TAB>value lines.",
        arguments: ["STORE"],
        options: [
            .value("prefix", "P", "Only keys that start with P."),
            .value("limit", "N", "At most N records."),
            .flag("reverse", "Descending key order."),
            tableOption,
        ],
        discussion: "Keys are ordered bytewise, as LMDB orders them."
    ) { arguments in
        let limit = try arguments.value("limit") == nil
            ? nil : arguments.integer("limit", default: 0, in: 0...Int.max)
        try printRecords(
            path: arguments.positionals[0], table: table(arguments),
            prefix: arguments.value("prefix").map { Array($0.utf8) },
            reverse: arguments.flag("reverse"), limit: limit)
        return .success
    }

    static let dump = Command(
        name: "dump",
        summary: "Print every record of a table, sorted, as key<TAB>value lines.",
        arguments: ["STORE"],
        options: [tableOption],
        discussion: "Reads the latest committed state of the table."
    ) { arguments in
        try printRecords(path: arguments.positionals[0], table: table(arguments), prefix: nil, reverse: false, limit: nil)
        return .success
    }

    /// The `--table` of `arguments`, or the default table.
    static func table(_ arguments: Arguments) -> String {
        arguments.value("table") ?? WriteBatch.defaultTable
    }

    private static func printRecords(path: String, table: String, prefix: [UInt8]?, reverse: Bool, limit: Int?) throws {
        let store = try StoreAccess.openExisting(path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        var output = OutputBuffer(.output)
        var printed = 0
        if limit != 0 {
            try snapshot.forEach(in: table, prefix: prefix, reverse: reverse) { key, value, _ in
                output.append(String(decoding: key, as: UTF8.self) + "\t" + String(decoding: value, as: UTF8.self) + "\n")
                printed += 1
                return limit.map { printed < $0 } ?? true
            }
        }
        output.flush()
    }
}
