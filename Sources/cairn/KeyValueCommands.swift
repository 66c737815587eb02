import Contexts
import EtcdStorage
import KVEngine

/// `put`, `get`, `delete`, `scan`, `dump` and `ingest`: reading and writing records.
///
/// Keys and values, on the command line and in input and output alike, are text in the
/// tool's one lossless encoding (`KeyText`: UTF-8 with `\\ \t \n \r \xHH` escapes), so any
/// bytes can be named and every printed record reads back as the same bytes.
enum KeyValueCommands {
    static let group = CommandGroup(title: "Key-value commands", commands: [
        put, get, delete, scan, dump, IngestCommand.command,
    ])

    static let tableOption = OptionSpec.value("table", "T", "The table to use (default \"\(WriteBatch.defaultTable)\").")
    static let skipCorruptOption = OptionSpec.flag(
        "skip-corrupt", "Report each record that fails its checksum on standard error and go on (exit 3 at the end).")

    /// The paragraph every command that takes or prints keys shares.
    static let encodingNote = """
        Keys and values are text: UTF-8, with the escapes \\\\ \\t \\n \\r and \\xHH (any
        byte) for a backslash, tab, line feed, carriage return and bytes that are not
        printable UTF-8. Records print the same way, so output reads back as input.
        """

    static let put = Command(
        name: "put",
        summary: "Store VALUE under KEY, durably.",
        arguments: ["STORE", "KEY", "VALUE"],
        options: [tableOption],
        discussion: """
            Creates the store when the directory does not exist or is empty. Returns once
            the commit is on disk (fdatasync'd). Keys are 1 to 511 bytes. Put '--' before a
            key or value that starts with a dash.

            """ + encodingNote
    ) { arguments in
        let path = arguments.positionals[0]
        let key = try key(arguments.positionals[1])
        let value = try KeyText.decode(arguments.positionals[2], as: "VALUE")
        let tableName = try table(arguments)
        if let records = try EtcdRecords.open(path) {
            defer { records.close() }
            try EtcdRecords.run { try records.put(value, forKey: key, in: tableName) }
            return .success
        }
        let store = try StoreAccess.openOrCreate(path)
        defer { store.close() }
        var batch = WriteBatch()
        batch.put(value, forKey: key, in: tableName)
        try store.commit(batch, durability: .full)
        return .success
    }

    static let get = Command(
        name: "get",
        summary: "Print the value stored under KEY.",
        arguments: ["STORE", "KEY"],
        options: [tableOption, .flag("raw", "Print the value's bytes exactly, with no escapes and no final line feed.")],
        discussion: "Exits with status 2 when there is no record under KEY.\n\n" + encodingNote
    ) { arguments in
        let path = arguments.positionals[0]
        let key = try key(arguments.positionals[1])
        let tableName = try table(arguments)
        let found: [UInt8]?
        if let records = try EtcdRecords.open(path) {
            defer { records.close() }
            found = try EtcdRecords.run { try records.get(key, in: tableName) }
        } else {
            let store = try StoreAccess.openForReading(path)
            defer { store.close() }
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            found = try snapshot.get(key, in: tableName)?.value
        }
        guard let value = found else {
            throw CommandError.notFound("no record under key \(KeyText.encode(key)) in table \(tableName)")
        }
        if arguments.flag("raw") {
            value.withUnsafeBytes { StandardStream.output.write($0) }
        } else {
            StandardStream.output.write(KeyText.encode(value) + "\n")
        }
        return .success
    }

    static let delete = Command(
        name: "delete",
        summary: "Remove the record under KEY, durably.",
        arguments: ["STORE", "KEY"],
        options: [tableOption],
        discussion: "Deleting a key that has no record is not an error.\n\n" + encodingNote
    ) { arguments in
        let path = arguments.positionals[0]
        let key = try key(arguments.positionals[1])
        let tableName = try table(arguments)
        if let records = try EtcdRecords.open(path) {
            defer { records.close() }
            try EtcdRecords.run { try records.delete(key, in: tableName) }
            return .success
        }
        let store = try StoreAccess.openExisting(path)
        defer { store.close() }
        var batch = WriteBatch()
        batch.delete(key, in: tableName)
        try store.commit(batch, durability: .full)
        return .success
    }

    static let scan = Command(
        name: "scan",
        summary: "Print records in key order as key<TAB>value lines.",
        arguments: ["STORE"],
        options: [
            .value("prefix", "P", "Only keys that start with P (\"\" is every key)."),
            .value("limit", "N", "At most N records."),
            .flag("reverse", "Descending key order."),
            skipCorruptOption,
            tableOption,
        ],
        discussion: "Keys are ordered bytewise, as LMDB orders them. A --table that was never written to is an error (status 2).\n\n"
            + encodingNote
    ) { arguments in
        let limit = try arguments.value("limit") == nil
            ? nil : arguments.integer("limit", default: 0, in: 0...Int.max)
        let prefix = try arguments.value("prefix").map { (text) throws(CommandError) in
            try KeyText.decode(text, as: "--prefix")
        }
        return try printRecords(
            path: arguments.positionals[0], table: table(arguments), named: arguments.value("table") != nil, prefix: prefix,
            reverse: arguments.flag("reverse"), limit: limit, skipCorrupt: arguments.flag("skip-corrupt"))
    }

    static let dump = Command(
        name: "dump",
        summary: "Print every record of a table, sorted, as key<TAB>value lines.",
        arguments: ["STORE"],
        options: [skipCorruptOption, tableOption],
        discussion: """
            Reads the latest committed state of the table. 'cairn ingest' reads the output
            back: 'cairn dump A | cairn ingest B' copies the table's records. A --table that
            was never written to is an error (status 2), not empty output. An object table
            (entity:NAME) of a store that recorded its schema prints one JSON object per line
            instead (see 'cairn fetch --help').

            """ + encodingNote
    ) { arguments in
        // An object table whose entity the store's recorded schema knows prints as JSON lines.
        if let status = try ObjectCommands.dumpObjectTable(path: arguments.positionals[0], table: table(arguments)) { return status }
        return try printRecords(path: arguments.positionals[0], table: table(arguments), named: arguments.value("table") != nil,
                                prefix: nil, reverse: false, limit: nil, skipCorrupt: arguments.flag("skip-corrupt"))
    }

    /// The KEY argument's bytes: a usage error when it is not valid text or is empty (no
    /// record can have an empty key, so it is a mistyped command line, not a store problem).
    static func key(_ text: String) throws(CommandError) -> [UInt8] {
        let key = try KeyText.decode(text, as: "KEY")
        guard !key.isEmpty else { throw CommandError.usage("KEY is empty; a key is 1 to 511 bytes") }
        return key
    }

    /// The `--table` of `arguments`, or the default table; a usage error when the name is
    /// one no record can be in (every command refuses it alike, reading or writing).
    static func table(_ arguments: Arguments) throws(CommandError) -> String {
        let name = arguments.value("table") ?? WriteBatch.defaultTable
        guard Store.isValid(table: name) else {
            throw CommandError.usage(
                "--table: invalid table name \"\(abbreviated(name))\": 1 to 200 bytes, not starting with \"__cairn\"")
        }
        return name
    }

    /// Prints the records; `named`: the table was given with --table, so it must exist (the
    /// default table is there for every store, written to or not).
    private static func printRecords(path: String, table: String, named: Bool, prefix: [UInt8]?, reverse: Bool,
                                     limit: Int?, skipCorrupt: Bool) throws -> ExitStatus {
        if let records = try EtcdRecords.open(path) {
            defer { records.close() }
            var output = OutputBuffer(.output)
            defer { output.flush() }
            var printed = 0
            guard limit != 0 else { return .success }
            try EtcdRecords.run {
                try records.forEach(in: table, prefix: prefix, reverse: reverse) { key, value in
                    output.append(KeyText.encode(key) + "\t" + KeyText.encode(value) + "\n")
                    printed += 1
                    return limit.map { printed < $0 } ?? true
                }
            }
            return .success
        }
        let store = try StoreAccess.openForReading(path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        var output = OutputBuffer(.output)
        // What was read before a failure is printed before its message.
        defer { output.flush() }
        var printed = 0, skipped = 0
        let onCorrupt: ((KVError) -> Bool)? = skipCorrupt
            ? { error in
                output.flush()
                StandardStream.error.write("cairn: skipped \(describe(error))\n")
                skipped += 1
                return true
            }
            : nil
        if limit != 0 {
            do {
                try snapshot.forEach(in: table, prefix: prefix, reverse: reverse, onCorruptRecord: onCorrupt) { key, value, _ in
                    output.append(KeyText.encode(key) + "\t" + KeyText.encode(value) + "\n")
                    printed += 1
                    return limit.map { printed < $0 } ?? true
                }
            } catch let error as KVError {
                if case .corruptRecord = error {
                    throw CommandError.failed(
                        "\(describe(error)); the records before it are printed, --skip-corrupt prints the rest too")
                }
                throw error
            }
        }
        output.flush()
        // Asked only when nothing printed: a table with records exists.
        if named, printed == 0, skipped == 0, !store.tableExists(table) {
            throw CommandError.notFound(
                "no table \(abbreviated(table)) in store \(StoreAccess.shown(path)) (a table exists once written to; "
                    + "'cairn stats' lists the tables)")
        }
        if skipped > 0 {
            StandardStream.error.write(
                "cairn: \(skipped) corrupt record\(skipped == 1 ? "" : "s") skipped; 'cairn check' reports the store's state\n")
            return .storeProblem
        }
        return .success
    }
}

/// The key-value commands on an `etcd://` STORE: the same tables on the cluster (a table there
/// needs no creating, so an unwritten one reads as empty).
enum EtcdRecords {
    /// The store at `path` when it is an etcd URL; nil for a directory.
    static func open(_ path: String) throws(CommandError) -> EtcdKeyValueStore? {
        guard EtcdConfiguration.isURL(path) else { return nil }
        do { return EtcdKeyValueStore(try EtcdConfiguration(url: path)) } catch {
            throw CommandError.usage(error.description)
        }
    }

    /// Runs `body`, a storage failure becoming the command's failure with its message.
    static func run<Result>(_ body: () throws -> Result) throws -> Result {
        do { return try body() } catch let error as StorageError {
            throw CommandError.failed(error.message)
        }
    }
}
