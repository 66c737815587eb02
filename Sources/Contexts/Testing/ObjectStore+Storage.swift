// A hook for tests of the storage seam itself. `package`: not public API.

extension ObjectStore {
    /// The storage the object store's contexts read and write through.
    package var storage: any ObjectStorage { coordinator.storage }
}
