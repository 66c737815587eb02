import Foundation

/// The Swift types whose `==` and `<` agree with Cairn's comparisons of their stored values, so
/// a comparison with a constant of the type may run in the store (and use an index).
///
/// Left out on purpose: enums and wrappers (their own `==` and `<` may differ from their raw
/// values'), URLs (`URL.==` is not string equality), nested Codable types (stored as JSON).
/// Comparisons with those are evaluated on the objects.
protocol TranslatableConstant: Encodable {}

extension Optional: TranslatableConstant where Wrapped: TranslatableConstant {}
extension String: TranslatableConstant {}
extension Int: TranslatableConstant {}
extension Int8: TranslatableConstant {}
extension Int16: TranslatableConstant {}
extension Int32: TranslatableConstant {}
extension Int64: TranslatableConstant {}
extension UInt8: TranslatableConstant {}
extension UInt16: TranslatableConstant {}
extension UInt32: TranslatableConstant {}
extension Double: TranslatableConstant {}
extension Float: TranslatableConstant {}
extension Bool: TranslatableConstant {}
extension Date: TranslatableConstant {}
extension Data: TranslatableConstant {}
