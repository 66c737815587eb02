#if canImport(Glibc)
import Glibc
#endif

// `cairn COMMAND ...`: the command table. A new command is a new entry in a group (or a
// new group); `CommandLineTool` does the dispatch, help and exit statuses.

// Started with descriptor 0, 1 or 2 closed (`cairn ingest S >&-`), the next file opened
// would take its number, and what the tool writes to standard output would land in a store
// file. As careful daemons do, hold every closed standard descriptor open on /dev/null
// first; the engine keeps its files off 0-2 as well (KVEngine's `StoreFiles`).
for descriptor in STDIN_FILENO...STDERR_FILENO where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
    let placeholder = open("/dev/null", O_RDWR)
    if placeholder == -1 || placeholder > STDERR_FILENO { exit(ExitStatus.storeProblem.rawValue) }
}

let tool = CommandLineTool(groups: [
    KeyValueCommands.group,
    AdminCommands.group,
    ObjectCommands.group,
    CommandGroup(title: "Editing objects", commands: [UpdateCommand.command]),
    CommandGroup(title: "Merge policies", commands: [ScenarioCommand.command, PoliciesCommand.command]),
    CommandGroup(title: "Demonstration", commands: [DemoCommand.command]),
    CommandGroup(title: "About", commands: [VersionCommand.command]),
])

// `CommandLine.arguments` repairs bytes that are not UTF-8 into U+FFFD, which would make
// two different keys one; such bytes are written as \xHH escapes instead (KeyText).
var words: [String] = []
for index in stride(from: 1, to: Int(CommandLine.argc), by: 1) {
    let argument = CommandLine.unsafeArgv[index]!
    let bytes = UnsafeRawBufferPointer(start: argument, count: strlen(argument))
    guard let word = String(validating: bytes, as: UTF8.self) else {
        StandardStream.error.write(
            "cairn: argument \(index) is not valid UTF-8; write such bytes as \\xHH escapes (see 'cairn put --help')\n")
        exit(ExitStatus.usage.rawValue)
    }
    words.append(word)
}

exit(tool.run(words).rawValue)
