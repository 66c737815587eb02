/// How a save's commit is made durable before `save()` returns.
///
/// | option | promise |
/// |---|---|
/// | `full` | survives a process crash, an OS crash and power loss |
/// | `normal` | survives a process crash; after power loss or an OS crash the newest saves may be lost, never a partial one |
///
/// Docs/Durability.md says exactly what each backend does for each.
public enum SaveDurability: Sendable, Hashable {
    /// The commit is on stable storage when `save()` returns. The default.
    case full
    /// The commit is written (in the page cache, for the local engine) when `save()` returns.
    case normal
}
