// Hook for tests: the objects resets left for the store's reads to refill (SpareObjects.swift).
// `package`: not public API.

extension ObjectStore {
    /// How many spare objects the store keeps.
    package var spareObjectCount: Int { coordinator.spareObjects.count }
}
