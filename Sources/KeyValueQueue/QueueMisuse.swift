/// Stops the process with `message`: the one way misuse of a StoreQueue or its database handle
/// is reported (`fatalError`, whose message optimized builds keep).
func queueMisuse(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}
