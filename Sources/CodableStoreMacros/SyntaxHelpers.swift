import SwiftSyntax

extension AttributeListSyntax {
    /// Whether the list holds an attribute spelled `@name` or `@Module.name`.
    func contains(attributeNamed name: String) -> Bool {
        contains { element in
            guard case .attribute(let attribute) = element else { return false }
            return attribute.simpleName == name
        }
    }
}

extension AttributeSyntax {
    /// The attribute's name without any module qualification: `Transient` for `@CodableStore.Transient`.
    var simpleName: String? {
        if let identifier = attributeName.as(IdentifierTypeSyntax.self) {
            return identifier.name.bareName
        }
        if let member = attributeName.as(MemberTypeSyntax.self) {
            return member.name.bareName
        }
        return nil
    }
}

extension DeclModifierListSyntax {
    /// Whether the list holds the modifier `keyword`, e.g. `static` or `lazy`.
    func contains(_ keyword: Keyword) -> Bool {
        contains { $0.name.tokenKind == .keyword(keyword) }
    }
}

extension VariableDeclSyntax {
    /// Whether this is a type property (`static` or `class`) rather than an instance property.
    var isTypeProperty: Bool {
        modifiers.contains(.static) || modifiers.contains(.class)
    }

    /// The single property this declaration introduces, or `nil` for `var a, b: Int` and `var (a, b) = …`.
    var singleBinding: (name: TokenSyntax, binding: PatternBindingSyntax)? {
        guard bindings.count == 1, let binding = bindings.first,
            let pattern = binding.pattern.as(IdentifierPatternSyntax.self)
        else { return nil }
        return (pattern.identifier.trimmed, binding)
    }
}

/// How a property binding keeps its value.
enum PropertyStorage {
    /// Plain stored property.
    case stored
    /// Stored property with `willSet`/`didSet`; carries the first observer.
    case observed(AccessorDeclSyntax)
    /// Computed property: a getter body, or `get`/`set`/other accessors.
    case computed
}

extension PatternBindingSyntax {
    /// Whether the binding stores its value, stores it with observers, or computes it.
    var storage: PropertyStorage {
        switch accessorBlock?.accessors {
        case nil:
            return .stored
        case .getter:
            return .computed
        case .accessors(let accessors):
            let observers: Set<TokenKind> = [.keyword(.willSet), .keyword(.didSet)]
            guard accessors.allSatisfy({ observers.contains($0.accessorSpecifier.tokenKind) }),
                let first = accessors.first
            else { return .computed }
            return .observed(first)
        }
    }
}

extension TypeSyntax {
    /// Whether a `var` of this type starts out as `nil` without an initial value.
    ///
    /// Swift gives that default only to the sugared spellings `T?` and `T!`, not to `Optional<T>`.
    var hasImplicitNilDefault: Bool {
        `is`(OptionalTypeSyntax.self) || `is`(ImplicitlyUnwrappedOptionalTypeSyntax.self)
    }

    /// Whether the type names the `EntityObject` protocol, qualified by its module or not.
    var isEntityObject: Bool {
        if let identifier = `as`(IdentifierTypeSyntax.self) {
            return identifier.name.text == "EntityObject"
        }
        if let member = `as`(MemberTypeSyntax.self) {
            return member.name.text == "EntityObject"
        }
        return false
    }

    /// Whether the type names `Decodable` or `Codable`, qualified by `Swift.` or not.
    var isDecodable: Bool {
        let name: String? =
            if let identifier = `as`(IdentifierTypeSyntax.self) { identifier.name.text }
            else if let member = `as`(MemberTypeSyntax.self) { member.name.text }
            else { nil }
        return name == "Decodable" || name == "Codable"
    }

    /// Whether the type is an opaque `some P`.
    var isOpaque: Bool {
        `as`(SomeOrAnyTypeSyntax.self)?.someOrAnySpecifier.tokenKind == .keyword(.some)
    }

    /// The type spelled so that `<result>.self` parses as a metatype expression.
    ///
    /// Function, attributed, existential and composition types need parentheses
    /// (`((Int) -> Void).self`, `(any P).self`); every other type is returned as written.
    var metatypeOperand: TypeSyntax {
        let type = trimmed
        guard type.is(FunctionTypeSyntax.self) || type.is(AttributedTypeSyntax.self)
            || type.is(SomeOrAnyTypeSyntax.self) || type.is(CompositionTypeSyntax.self)
        else { return type }
        return TypeSyntax(
            TupleTypeSyntax(elements: [TupleTypeElementSyntax(type: type)])
        )
    }
}

extension TokenSyntax {
    /// The token's text without the backticks of an escaped identifier: `default` for `` `default` ``.
    ///
    /// Reads the token's text rather than going through `Identifier`, which does not keep the syntax
    /// tree it points into alive and so must not outlive a temporary token.
    var bareName: String {
        let text = self.text
        guard text.count >= 2, text.hasPrefix("`"), text.hasSuffix("`") else { return text }
        return String(text.dropFirst().dropLast())
    }
}
