#if canImport(Glibc)
import Glibc
#endif

// `cairn COMMAND ...`: the command table. A new command is a new entry in a group (or a
// new group); `CommandLineTool` does the dispatch, help and exit statuses.

let tool = CommandLineTool(groups: [
    KeyValueCommands.group,
    AdminCommands.group,
    CommandGroup(title: "Merge policies", commands: [ScenarioCommand.command, PoliciesCommand.command]),
    CommandGroup(title: "Demonstration", commands: [DemoCommand.command]),
])

exit(tool.run(Array(CommandLine.arguments.dropFirst())).rawValue)
