import Policies

/// An object's values as the context layer keeps them: one slot per attribute of its entity, by
/// position (the entity's attribute order, see ``EntityLayout``), `.null` for unset.
///
/// The public API speaks ``PropertyValues`` (a dictionary by name); inside, values live by
/// position so that reading or writing a property is an array access, comparing an object with
/// its ancestor compares slots (the same buffer, after a read, compares in one step), and
/// decoding and encoding records walk the attributes without hashing names. Conversions to and
/// from dictionaries happen only where the API hands dictionaries in or out.
///
/// `extras` holds the properties of a stored record that the entity does not declare (a record
/// written by hand, or under another schema). It is nil in the usual case and exists so that
/// such a record reads, compares, validates and writes back exactly as it would as a
/// dictionary. It never holds `.null` values and is never empty (nil instead).
///
/// A value type with copy-on-write storage: one reference, to a buffer holding the extras and
/// the slots. Not `[AttributeValue]`: allocating a new array of a type from another module goes
/// through the runtime's generic metadata lookup, several hundred instructions, and a fetch
/// allocates values for every object; this buffer's class is not generic, so allocating it is a
/// plain object allocation.
///
/// `@unchecked Sendable`: a buffer is written only while uniquely referenced (copy on write),
/// so a buffer that two values share is never mutated.
package struct ObjectValues: Equatable, @unchecked Sendable {
    private var buffer: ValuesBuffer

    /// `count` slots holding `value`, no extras.
    init(repeating value: AttributeValue, count: Int) {
        buffer = ValuesBuffer.make(count: count, extras: nil) { elements in
            for position in 0..<count { (elements + position).initialize(to: value) }
        }
    }

    /// The slots holding `values` in order, and `extras`.
    init(_ values: [AttributeValue], extras: PropertyValues? = nil) {
        buffer = ValuesBuffer.make(count: values.count, extras: extras) { elements in
            for position in values.indices { (elements + position).initialize(to: values[position]) }
        }
    }

    /// The values of a dictionary: attributes into their slots, other names into `extras`;
    /// `.null` values are dropped (absent and null are the same).
    init(_ values: PropertyValues, layout: EntityLayout) {
        var slots = [AttributeValue](repeating: .null, count: layout.count)
        var extras: PropertyValues = [:]
        for (name, value) in values where value != .null {
            if let position = layout.index(of: name) {
                slots[position] = value
            } else {
                extras[name] = value
            }
        }
        self.init(slots, extras: extras.isEmpty ? nil : extras)
    }

    /// `count` slots, all `.null`, that `body` may fill through the pointer it gets (each slot
    /// assigned, never left uninitialized), plus the extras it returns.
    ///
    /// The decoder's way in: it writes each value straight into place.
    init<Failure: Error>(
        count: Int, filling body: (UnsafeMutablePointer<AttributeValue>) throws(Failure) -> PropertyValues?
    ) throws(Failure) {
        let buffer = ValuesBuffer.make(count: count, extras: nil) { elements in
            for position in 0..<count { (elements + position).initialize(to: .null) }
        }
        let extras = try buffer.withUnsafeMutablePointers { _, elements in
            Result { () throws(Failure) in try body(elements) }
        }.get()
        if let extras { buffer.withUnsafeMutablePointerToHeader { $0.pointee.extras = extras } }
        self.buffer = buffer
    }

    /// Whether `self` and `other` are one buffer (so equal without comparing a slot).
    func sharesStorage(with other: ObjectValues) -> Bool { buffer === other.buffer }

    /// How many slots (the entity's attribute count).
    var count: Int {
        buffer.withUnsafeMutablePointerToHeader { $0.pointee.count }
    }

    /// The value of the attribute at `position`.
    subscript(position: Int) -> AttributeValue {
        get {
            buffer.withUnsafeMutablePointers { header, elements in
                precondition(position >= 0 && position < header.pointee.count, "attribute position out of range")
                return elements[position]
            }
        }
        set {
            makeUnique()
            buffer.withUnsafeMutablePointers { header, elements in
                precondition(position >= 0 && position < header.pointee.count, "attribute position out of range")
                elements[position] = newValue
            }
        }
    }

    /// The properties of a stored record that the entity does not declare; nil when none.
    var extras: PropertyValues? {
        get { buffer.withUnsafeMutablePointerToHeader { $0.pointee.extras } }
        set {
            makeUnique()
            buffer.withUnsafeMutablePointerToHeader { $0.pointee.extras = newValue?.isEmpty == true ? nil : newValue }
        }
    }

    /// Calls `body` with the slots, without copying them.
    func withSlots<R>(_ body: (UnsafeBufferPointer<AttributeValue>) throws -> R) rethrows -> R {
        try buffer.withUnsafeMutablePointers { header, elements in
            try body(UnsafeBufferPointer(start: elements, count: header.pointee.count))
        }
    }

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&buffer) { buffer = buffer.copy() }
    }

    /// The same values (absent counting as null); values sharing one buffer (an object's values
    /// and its ancestor after a read) compare in one step.
    package static func == (lhs: ObjectValues, rhs: ObjectValues) -> Bool {
        if lhs.buffer === rhs.buffer { return true }
        let sameSlots = lhs.withSlots { left in
            rhs.withSlots { right in
                guard left.count == right.count else { return false }
                for position in left.indices where !same(left[position], right[position]) { return false }
                return true
            }
        }
        return sameSlots && lhs.extras == rhs.extras
    }

    /// `AttributeValue.==`, with the common cases compared inline.
    @inline(__always)
    private static func same(_ left: AttributeValue, _ right: AttributeValue) -> Bool {
        switch (left, right) {
        case let (.int(a), .int(b)): return a == b
        case (.null, .null): return true
        default: return left == right
        }
    }

    /// The values as a dictionary by name; unset attributes are absent.
    package func dictionary(_ layout: EntityLayout) -> PropertyValues {
        var values = extras ?? [:]
        withSlots { slots in
            values.reserveCapacity(values.count + slots.count)
            for position in slots.indices where slots[position] != .null {
                values[layout.attributes[position].name] = slots[position]
            }
        }
        return values
    }

    /// The value of the property named `name` (an attribute or an extra), `.null` when unset.
    func value(named name: String, layout: EntityLayout) -> AttributeValue {
        if let position = layout.index(of: name) { return self[position] }
        return extras?[name] ?? .null
    }

    /// Where `self` differs from `other` (absent counting as null): attribute positions in
    /// order, and extra names sorted.
    func differences(from other: ObjectValues) -> Differences {
        var differences = Differences()
        guard buffer !== other.buffer else { return differences }
        withSlots { slots in
            other.withSlots { others in
                for position in slots.indices where !Self.same(slots[position], others[position]) {
                    differences.positions.append(position)
                }
            }
        }
        let extras = self.extras, otherExtras = other.extras
        if extras != otherExtras {
            let names = Set((extras ?? [:]).keys).union((otherExtras ?? [:]).keys)
            differences.extraNames = names.filter { extras?[$0] != otherExtras?[$0] }.sorted()
        }
        return differences
    }

    /// Copies the properties named by `differences` from `source`, so `self` takes those
    /// changes (a cleared property is cleared here too).
    mutating func take(_ differences: Differences, from source: ObjectValues) {
        for position in differences.positions { self[position] = source[position] }
        guard !differences.extraNames.isEmpty else { return }
        var merged = extras ?? [:]
        for name in differences.extraNames { merged[name] = source.extras?[name] }
        extras = merged
    }

    /// The named properties of ``differences(from:)``, with this side's values (`.null` for a
    /// cleared one): what `changedValues()` reports.
    func values(at differences: Differences, layout: EntityLayout) -> PropertyValues {
        var values = PropertyValues(minimumCapacity: differences.count)
        for position in differences.positions { values[layout.attributes[position].name] = self[position] }
        for name in differences.extraNames { values[name] = extras?[name] ?? .null }
        return values
    }

    /// Properties in which two ``ObjectValues`` differ.
    struct Differences: Sendable {
        var positions: [Int] = []
        var extraNames: [String] = []

        var isEmpty: Bool { positions.isEmpty && extraNames.isEmpty }
        var count: Int { positions.count + extraNames.count }
    }
}

/// What an ``ObjectValues`` buffer holds besides its slots.
struct ValuesHeader {
    let count: Int
    var extras: PropertyValues?
}

/// The storage of ``ObjectValues``: count and extras in the header, the slots in the tail.
final class ValuesBuffer: ManagedBuffer<ValuesHeader, AttributeValue> {
    /// A buffer of `count` slots, which `initialize` initializes, every one of them.
    static func make(
        count: Int, extras: PropertyValues?, _ initialize: (UnsafeMutablePointer<AttributeValue>) -> Void
    ) -> ValuesBuffer {
        let buffer = unsafeDowncast(
            ValuesBuffer.create(minimumCapacity: count) { _ in ValuesHeader(count: count, extras: extras) },
            to: ValuesBuffer.self)
        buffer.withUnsafeMutablePointerToElements { initialize($0) }
        return buffer
    }

    /// A new buffer holding the same values.
    ///
    /// Slot by slot rather than `initialize(from:count:)`, which copies through the runtime's
    /// generic value witness; a loop over `AttributeValue` is specialized.
    func copy() -> ValuesBuffer {
        withUnsafeMutablePointers { header, elements in
            let count = header.pointee.count
            return ValuesBuffer.make(count: count, extras: header.pointee.extras) { copies in
                for position in 0..<count { (copies + position).initialize(to: elements[position]) }
            }
        }
    }

    /// Slot by slot (moving each value out) for the same reason as `copy()`:
    /// `deinitialize(count:)`, even of one slot, destroys through the runtime's generic array
    /// destroy, a value-witness call per slot.
    deinit {
        withUnsafeMutablePointers { header, elements in
            for position in 0..<header.pointee.count { _ = (elements + position).move() }
        }
    }
}
