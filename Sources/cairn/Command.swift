import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// How `cairn` exits. The numbers are part of the tool's interface: scripts test them.
enum ExitStatus: Int32 {
    /// Done.
    case success = 0
    /// The command line was wrong.
    case usage = 1
    /// `get` found no record under the key, or `scan`/`dump` no such --table.
    case notFound = 2
    /// The store failed (any `KVError`), or `check` found problems.
    case storeProblem = 3
}

/// A failure of a command that is not the store's own error.
enum CommandError: Error {
    /// The command line was wrong; exits 1 with the command's usage.
    case usage(String)
    /// What was asked for does not exist; exits 2.
    case notFound(String)
    /// Something else failed (no store at the path, unreadable input); exits 3.
    case failed(String)
}

/// One subcommand: its name, its help, and what it runs.
///
/// Commands are plain values collected in `CommandGroup`s, so adding one is adding an
/// entry to a table (see `main.swift`).
struct Command: Sendable {
    /// The word after `cairn`.
    let name: String
    /// One line for the global usage.
    let summary: String
    /// Placeholders of the positional arguments, all required: `["STORE", "KEY"]`.
    let arguments: [String]
    /// The options the command accepts (besides `--help`).
    let options: [OptionSpec]
    /// Paragraphs shown by `cairn NAME --help` after the usage line.
    let discussion: String
    /// Placeholders of positional arguments that may follow `arguments`: `["PREDICATE"]`.
    var optionalArguments: [String] = []
    /// Runs the command. Throws `CommandError`, `KVError`, or another error (exit 3).
    let run: @Sendable (Arguments) throws -> ExitStatus

    /// `cairn put STORE KEY VALUE [--table T]`
    var usageLine: String {
        (["cairn", name] + arguments + optionalArguments.map { "[\($0)]" } + options.map { "[\($0.synopsis)]" })
            .joined(separator: " ")
    }

    /// The text of `cairn NAME --help`.
    var help: String {
        var text = "Usage: \(usageLine)\n\n\(summary)\n"
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        if !options.isEmpty {
            text += "\nOptions:\n"
            let width = max(options.map { $0.synopsis.count }.max()!, "-h, --help".count) + 2
            for option in options {
                text += "  " + option.synopsis.padded(to: width) + option.help + "\n"
            }
            text += "  " + "-h, --help".padded(to: width) + "Show this help.\n"
        }
        return text
    }
}

/// Commands listed together under a heading in the global usage.
struct CommandGroup: Sendable {
    let title: String
    let commands: [Command]
}

/// Finds the command named by the first word and runs it, turning errors into messages on
/// standard error and exit statuses.
struct CommandLineTool: Sendable {
    let groups: [CommandGroup]

    /// Every command, in the order of the global usage.
    var commands: [Command] { groups.flatMap(\.commands) }

    /// The text of `cairn --help`.
    var usage: String {
        var text = """
            cairn: use and inspect a Cairn key-value store from the shell.

            Usage: cairn COMMAND ARGUMENTS [OPTIONS]

            """
        let width = commands.map { $0.name.count }.max()! + 3
        for group in groups {
            text += "\n\(group.title):\n"
            for command in group.commands {
                text += "  " + command.name.padded(to: width) + command.summary + "\n"
            }
        }
        text += """

            Run 'cairn COMMAND --help' for a command's arguments and options.
            STORE is a directory; commands that write create it when missing or empty.
            Keys and values are UTF-8 text with the escapes \\\\ \\t \\n \\r \\xHH, in
            arguments, input and output alike (see 'cairn put --help' and the README).
            Exit status: 0 success, 1 usage error, 2 key or table not found,
                         3 store error (or problems found by 'check').

            """
        return text
    }

    /// Runs the command line `words` (without the program name) and returns the status.
    func run(_ words: [String]) -> ExitStatus {
        guard let first = words.first else {
            StandardStream.error.write(usage)
            return .usage
        }
        if first == "-h" || first == "--help" {
            StandardStream.output.write(usage)
            return .success
        }
        if first == "--version" {
            guard words.count == 1 else {
                StandardStream.error.write("cairn: --version takes no arguments\n")
                return .usage
            }
            StandardStream.output.write(VersionCommand.line)
            return .success
        }
        if first == "help" {
            guard words.count > 1 else {
                StandardStream.output.write(usage)
                return .success
            }
            guard let command = commands.first(where: { $0.name == words[1] }) else {
                return unknownCommand(words[1])
            }
            StandardStream.output.write(command.help)
            return .success
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            return unknownCommand(first)
        }
        return run(command, Array(words.dropFirst()))
    }

    private func run(_ command: Command, _ words: [String]) -> ExitStatus {
        do {
            let arguments = try Arguments.parse(words, options: command.options)
            if arguments.helpRequested {
                StandardStream.output.write(command.help)
                return .success
            }
            if arguments.positionals.count < command.arguments.count {
                let missing = command.arguments[arguments.positionals.count...].joined(separator: " ")
                throw CommandError.usage("missing \(missing)")
            }
            if arguments.positionals.count > command.arguments.count + command.optionalArguments.count {
                let extra = arguments.positionals[command.arguments.count + command.optionalArguments.count]
                throw CommandError.usage("unexpected argument \"\(abbreviated(extra))\"")
            }
            return try command.run(arguments)
        } catch CommandError.usage(let message) {
            StandardStream.error.write("""
                cairn \(command.name): \(message)
                Usage: \(command.usageLine)
                Run 'cairn \(command.name) --help' for details.

                """)
            return .usage
        } catch CommandError.notFound(let message) {
            StandardStream.error.write("cairn: \(message)\n")
            return .notFound
        } catch CommandError.failed(let message) {
            StandardStream.error.write("cairn: \(message)\n")
            return .storeProblem
        } catch let error as KVError {
            StandardStream.error.write("cairn: \(describe(error))\n")
            return .storeProblem
        } catch {
            StandardStream.error.write("cairn: \(error)\n")
            return .storeProblem
        }
    }

    private func unknownCommand(_ name: String) -> ExitStatus {
        let names = commands.map(\.name).joined(separator: ", ")
        StandardStream.error.write("cairn: unknown command \"\(abbreviated(name))\"; the commands are \(names)\nRun 'cairn --help' for details.\n")
        return .usage
    }
}

/// Opening stores for commands.
enum StoreAccess {
    /// What a directory may hold besides `data.mdb` and still be taken for a store whose
    /// creation was interrupted (the lock files and the log directory are made first).
    static let storeEntries: Set<String> = ["LOCK", "lock.mdb", "wal"]

    /// Opens the store at `path`, creating it when missing (commands that write).
    ///
    /// Only a missing path, an empty directory or a store is adopted: `cairn put / k v`
    /// must not turn `/` (or a home directory, or a file) into a store.
    static func openOrCreate(_ path: String) throws -> Store {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw CommandError.failed("\(shown(path)) is not a directory, so it cannot hold a Cairn store")
            }
            if !hasDataFile(path) {
                let entries = try directoryEntries(path)
                let foreign = entries.filter { !storeEntries.contains($0) }.sorted()
                if !foreign.isEmpty {
                    let listed = foreign.prefix(3).map { abbreviated($0) }.joined(separator: ", ")
                        + (foreign.count > 3 ? " and \(foreign.count - 3) more" : "")
                    throw CommandError.failed(
                        "\(shown(path)) is neither a Cairn store nor empty (it holds \(listed)); "
                            + "a store is only created in a new or empty directory")
                }
            }
        } else if errno != ENOENT {
            throw CommandError.failed("cannot open store \(shown(path)): \(String(cString: strerror(errno)))")
        }
        return try Store(directory: path)
    }

    /// Opens the store at `path`, which must exist: reading a mistyped path should say so,
    /// not create an empty store there.
    static func openExisting(_ path: String) throws -> Store {
        try requireStore(path)
        return try Store(directory: path)
    }

    /// Opens the store at `path`, which must exist, for a command that only reads: as its
    /// writer when no process has it open (replaying its log, as any open), and read-only
    /// beside the process that has (`Store.Options.readOnly`), so that `cairn get` works
    /// next to a running daemon and never blocks it.
    static func openForReading(_ path: String) throws -> Store {
        try requireStore(path)
        do throws(KVError) {
            return try Store(directory: path)
        } catch {
            guard case .locked(_, let pid) = error, pid != getpid() else { throw error }
        }
        var options = Store.Options()
        options.readOnly = true
        return try Store(directory: path, options: options)
    }

    /// Throws unless `path` holds a store's data file: "no Cairn store" only when there is
    /// none, and the system's reason (permission denied, not a directory) otherwise.
    static func requireStore(_ path: String) throws(CommandError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { throw CommandError.failed("no Cairn store at \(shown(path)): no such directory") }
            throw CommandError.failed("cannot open store \(shown(path)): \(String(cString: strerror(code)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw CommandError.failed("no Cairn store at \(shown(path)): it is not a directory")
        }
        guard stat(path + "/data.mdb", &info) == 0 else {
            let code = errno
            if code == ENOENT { throw CommandError.failed("no Cairn store at \(shown(path))") }
            throw CommandError.failed("cannot open store \(shown(path)): \(String(cString: strerror(code)))")
        }
    }

    private static func hasDataFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path + "/data.mdb", &info) == 0
    }

    /// The names in directory `path`, without `.` and `..`.
    static func directoryEntries(_ path: String) throws(CommandError) -> [String] {
        guard let directory = opendir(path) else {
            throw CommandError.failed("cannot list \(shown(path)): \(String(cString: strerror(errno)))")
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A path in a message: cut when absurdly long.
    static func shown(_ path: String) -> String {
        abbreviated(path, limit: 1024)
    }
}

/// A store error as the tool prints it: keys in the tool's own encoding (`KeyText`), and
/// names given by the user cut short.
func describe(_ error: KVError) -> String {
    switch error {
    case let .corruptRecord(table, key, reason):
        return "corrupt record in table \(abbreviated(table)), key \(KeyText.encode(key)): \(reason)"
    case let .invalidTableName(name):
        return "invalid table name \"\(abbreviated(name))\": 1 to 200 bytes, not starting with \"__cairn\""
    case let .poisoned(underlying):
        return "store is poisoned by an earlier I/O failure (\(describe(underlying))); reopen it"
    default:
        return error.description
    }
}

extension String {
    /// The string followed by spaces up to `width` characters (at least one space).
    func padded(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
