import Foundation
import Policies

// Foundation's `#Predicate` → Cairn's `FetchPredicate`, by walking the predicate's expression
// tree. Each expression type Foundation builds for a comparison, a Boolean operator or an
// operand conforms to one of the protocols below; any other node (a method call, an optional
// chain, a comparison of two attributes, a constant of another type) translates to nothing,
// and its part of the predicate is evaluated on the objects.
//
// A translation is a necessary condition of the Swift predicate (every object the predicate
// accepts passes it), and `isExact` says whether it is also sufficient:
//
//   comparison of a declared attribute with a constant   exact
//   a && b      the parts that translate (exact when both are)
//   a || b      both, or nothing (a superset of one side is no superset of the or)
//   !a          only when a is exact (the negation of a superset is no superset)
//   c.contains(attribute), c a constant collection       IN, exact

/// What a Swift predicate becomes in the store: a filter that every match passes (nil: none),
/// and whether passing it is also enough.
struct PredicateTranslation {
    var predicate: FetchPredicate?
    var isExact: Bool

    /// Nothing translates: every object is a candidate.
    static let untranslated = PredicateTranslation(predicate: nil, isExact: false)

    /// Translates `predicate`, whose input is an object of `entity`.
    init<Model: CairnModel>(_ predicate: Predicate<Model>, entity: ModelEntity<Model>) {
        let scope = TranslationScope(variable: predicate.variable.key, entity: entity.description) { keyPath in
            entity.attribute(forAny: keyPath)?.name
        }
        self = scope.translate(predicate.expression)
    }

    init(predicate: FetchPredicate?, isExact: Bool) {
        self.predicate = predicate
        self.isExact = isExact
    }
}

/// What one translation needs: the predicate's input variable, and the attribute names.
struct TranslationScope {
    let variable: PredicateExpressions.VariableID
    let entity: EntityDescription
    let attributeName: (AnyKeyPath) -> String?

    func translate(_ expression: Any) -> PredicateTranslation {
        (expression as? any TranslatableExpression)?.translation(in: self) ?? .untranslated
    }

    func operand(_ expression: Any) -> Operand? {
        (expression as? any OperandExpression)?.operand(in: self)
    }

    /// `lhs op rhs` where one side is an attribute and the other a constant it accepts.
    func comparison(_ lhs: Any, _ comparison: FetchPredicate.Operator, _ rhs: Any) -> PredicateTranslation {
        switch (operand(lhs), operand(rhs)) {
        case let (.attribute(name)?, .constant(value)?):
            return leaf(name, comparison, value)
        case let (.constant(value)?, .attribute(name)?):
            return leaf(name, comparison.flipped, value)
        default:
            return .untranslated
        }
    }

    private func leaf(_ name: String, _ comparison: FetchPredicate.Operator, _ value: AttributeValue) -> PredicateTranslation {
        guard accepts(name, value) else { return .untranslated }
        return PredicateTranslation(predicate: .compare(name, comparison, value), isExact: true)
    }

    /// Whether attribute `name` holds values of `value`'s type (null goes with every type), so
    /// the store compares like Swift. NaN never does: Swift's NaN is unequal to itself.
    func accepts(_ name: String, _ value: AttributeValue) -> Bool {
        guard let attribute = entity.attribute(named: name) else { return false }
        if case .double(let number) = value, number.isNaN { return false }
        return value == .null || attribute.type.accepts(value)
    }
}

/// One side of a comparison.
enum Operand {
    case attribute(String)
    case constant(AttributeValue)
}

/// A Boolean expression that may translate.
protocol TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation
}

/// An expression that may be an attribute or a constant.
protocol OperandExpression {
    func operand(in scope: TranslationScope) -> Operand?
}

/// The predicate's input.
protocol VariableExpression {
    var variableID: PredicateExpressions.VariableID { get }
}

/// A constant collection, for `contains`.
protocol ConstantCollectionExpression {
    var constants: [AttributeValue]? { get }
}

extension FetchPredicate.Operator {
    /// The operator with its operands swapped: `c < a` is `a > c`.
    var flipped: FetchPredicate.Operator {
        switch self {
        case .equal, .notEqual: return self
        case .lessThan: return .greaterThan
        case .lessThanOrEqual: return .greaterThanOrEqual
        case .greaterThan: return .lessThan
        case .greaterThanOrEqual: return .lessThanOrEqual
        }
    }
}

// MARK: - Operands

extension PredicateExpressions.Variable: VariableExpression {
    var variableID: PredicateExpressions.VariableID { key }
}

extension PredicateExpressions.KeyPath: OperandExpression {
    func operand(in scope: TranslationScope) -> Operand? {
        guard let variable = root as? any VariableExpression, variable.variableID == scope.variable,
            let name = scope.attributeName(keyPath)
        else { return nil }
        return .attribute(name)
    }
}

extension PredicateExpressions.Value: OperandExpression where Output: TranslatableConstant {
    func operand(in scope: TranslationScope) -> Operand? {
        (try? PropertyValuesEncoder.attributeValue(of: value, codingPath: [])).map { .constant($0.0) }
    }
}

extension PredicateExpressions.NilLiteral: OperandExpression {
    func operand(in scope: TranslationScope) -> Operand? { .constant(.null) }
}

extension PredicateExpressions.Value: ConstantCollectionExpression where Output: Sequence, Output.Element: TranslatableConstant {
    var constants: [AttributeValue]? {
        var values: [AttributeValue] = []
        for element in value {
            guard let encoded = try? PropertyValuesEncoder.attributeValue(of: element, codingPath: []) else { return nil }
            values.append(encoded.0)
        }
        return values
    }
}

// MARK: - Boolean expressions

extension PredicateExpressions.Equal: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation { scope.comparison(lhs, .equal, rhs) }
}

extension PredicateExpressions.NotEqual: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation { scope.comparison(lhs, .notEqual, rhs) }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        let comparison: FetchPredicate.Operator
        switch op {
        case .lessThan: comparison = .lessThan
        case .lessThanOrEqual: comparison = .lessThanOrEqual
        case .greaterThan: comparison = .greaterThan
        case .greaterThanOrEqual: comparison = .greaterThanOrEqual
        @unknown default: return .untranslated
        }
        return scope.comparison(lhs, comparison, rhs)
    }
}

extension PredicateExpressions.Conjunction: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        let left = scope.translate(lhs), right = scope.translate(rhs)
        let exact = left.isExact && right.isExact
        switch (left.predicate, right.predicate) {
        case (nil, nil): return .untranslated
        case (let only?, nil), (nil, let only?): return PredicateTranslation(predicate: only, isExact: false)
        case let (first?, second?): return PredicateTranslation(predicate: .and(terms(first) + terms(second)), isExact: exact)
        }
    }

    /// An `.and`'s terms flattened, so the planner sees every comparison of a chain of `&&`.
    private func terms(_ predicate: FetchPredicate) -> [FetchPredicate] {
        if case .and(let terms) = predicate { return terms }
        return [predicate]
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        let left = scope.translate(lhs), right = scope.translate(rhs)
        guard let first = left.predicate, let second = right.predicate else { return .untranslated }
        return PredicateTranslation(predicate: .or([first, second]), isExact: left.isExact && right.isExact)
    }
}

extension PredicateExpressions.Negation: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        let inner = scope.translate(wrapped)
        guard inner.isExact, let predicate = inner.predicate else { return .untranslated }
        return PredicateTranslation(predicate: .not(predicate), isExact: true)
    }
}

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        guard let values = (sequence as? any ConstantCollectionExpression)?.constants,
            case .attribute(let name)? = scope.operand(element),
            values.allSatisfy({ scope.accepts(name, $0) })
        else { return .untranslated }
        return PredicateTranslation(predicate: .isIn(name, values), isExact: true)
    }
}

/// `#Predicate { $0.isActive }`: a Bool attribute alone.
extension PredicateExpressions.KeyPath: TranslatableExpression where Output == Bool {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        guard case .attribute(let name)? = operand(in: scope), scope.accepts(name, .bool(true)) else { return .untranslated }
        return PredicateTranslation(predicate: .compare(name, .equal, .bool(true)), isExact: true)
    }
}

/// `#Predicate { _ in true }`.
extension PredicateExpressions.Value: TranslatableExpression where Output == Bool {
    func translation(in scope: TranslationScope) -> PredicateTranslation {
        PredicateTranslation(predicate: value ? .and([]) : .or([]), isExact: true)
    }
}
