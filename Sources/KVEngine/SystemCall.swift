#if canImport(Glibc)
import Glibc
#endif

/// Runs a system call, retrying on EINTR, and turns a -1 result into `KVError.io`.
///
/// Every system call of the engine goes through here so that errors keep their errno
/// and the call's name.
@discardableResult
package func systemCall<Result: BinaryInteger>(
    _ operation: String,
    path: String,
    _ call: () -> Result
) throws(KVError) -> Result {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw KVError.io(errno: code, operation: operation, path: path)
    }
}
