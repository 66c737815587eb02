import Policies

/// Where an object keeps its ancestor's values (as last read or saved), relative to its values
/// now: only what differs is held, so the usual object holds no second reference to its buffer.
///
/// - `same`: the values now are the ancestor's (after a load or a save). A fetched object
///   holding its buffer twice cost a retain and a release (two atomic operations) per object.
/// - `delta`: one attribute changed since; its replaced value is kept, and the buffer the
///   values had at the load is written in place, uncopied.
/// - `own`: values of its own.
///
/// Relies on: the object calls `willWrite(at:in:)` before it writes one slot of its values, and
/// `detach(from:)` before it replaces or changes them any other way; the values passed are the
/// object's values now. Pinned by
/// `AncestorDeltaTests.randomEditsSavesRollbacksAndRefreshesReportWhatACopyWould`.
struct AncestorValues {
    private enum State {
        case same
        /// The position as 16 bits, after the value: the state is 20 bytes, not 25 (see
        /// StoredObject's fields). An attribute past them detaches instead.
        case delta(value: AttributeValue, position: UInt16)
        case own(ObjectValues)
    }

    private var state: State

    /// `values` as the ancestor of an object whose values now are `current`.
    init(_ values: ObjectValues, current: ObjectValues) {
        state = values.sharesStorage(with: current) ? .same : .own(values)
    }

    /// The ancestor of an object whose values are as last read or saved.
    static var same: AncestorValues { AncestorValues(state: .same) }

    private init(state: State) { self.state = state }

    /// The ancestor's values.
    func values(current: ObjectValues) -> ObjectValues {
        switch state {
        case .same: return current
        case let .delta(value, position):
            var ancestor = current
            ancestor[Int(position)] = value
            return ancestor
        case .own(let values): return values
        }
    }

    /// One attribute's ancestor value, making no values.
    func value(at position: Int, current: ObjectValues) -> AttributeValue {
        switch state {
        case .same: return current[position]
        case let .delta(value, changed): return Int(changed) == position ? value : current[position]
        case .own(let values): return values[position]
        }
    }

    /// Whether `current` differs from the ancestor (absent counting as null): with one
    /// attribute changed, a comparison of that slot alone.
    func differs(from current: ObjectValues) -> Bool {
        switch state {
        case .same: return false
        case let .delta(value, position): return current[Int(position)] != value
        case .own(let values): return current != values
        }
    }

    /// Before slot `position` of `current` is written.
    @inline(__always)
    mutating func willWrite(at position: Int, in current: ObjectValues) {
        switch state {
        case .same where position <= Int(UInt16.max):
            state = .delta(value: current[position], position: UInt16(position))
        case .same:
            detach(from: current)
        case let .delta(_, changed) where Int(changed) != position:
            detach(from: current)
        case .own(let values) where values.sharesStorage(with: current) && position <= Int(UInt16.max):
            // Drop the ancestor's hold on the buffer, so the write needs no copy (unless held elsewhere).
            state = .delta(value: current[position], position: UInt16(position))
        case .delta, .own:
            break
        }
    }

    /// Before `current` is replaced or changed other than by `willWrite(at:in:)`: the ancestor
    /// takes values of its own (the buffer, shared until either is written).
    mutating func detach(from current: ObjectValues) {
        switch state {
        case .same: state = .own(current)
        case .delta: state = .own(values(current: current))
        case .own: break
        }
    }
}
