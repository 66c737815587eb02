/// Stops the process with `message`: the one way misuse of contexts and objects is reported.
///
/// `fatalError` rather than `preconditionFailure`: optimized builds drop a precondition's
/// message, and a misuse report without its "what to do instead" is little help.
func contextMisuse(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}
