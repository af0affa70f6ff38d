import SwiftDiagnostics
import SwiftSyntax

/// A stored property of an `@Entity` class that the store persists as a field.
struct EntityProperty {
    /// The property's position among the class's persisted fields, in source order.
    let index: Int
    /// The property's name as written, possibly with backticks.
    let name: TokenSyntax
    /// The declared type.
    let type: TypeSyntax
    /// The initial value written after `=`, if any.
    let initialValue: ExprSyntax?

    /// The name without backticks, as stored in the entity description.
    var key: String { name.bareName }

    /// The private stored property that backs the field.
    var storageName: TokenSyntax { .identifier("_" + key) }

    /// Whether the property can be left out of an initializer: it has an initial value or is an optional
    /// spelled `T?` (which Swift initializes to `nil`).
    var hasDefaultValue: Bool { initialValue != nil || type.hasImplicitNilDefault }
}

/// What `@Entity` learned about a class: its persisted fields and the members it already declares.
struct EntityLayout {
    /// The class's name.
    let className: TokenSyntax
    /// The access modifier generated members need so the class can conform to `EntityObject`, if any.
    let accessModifier: Keyword?
    /// The persisted fields, in source order; a field's `index` is its position here.
    let fields: [EntityProperty]
    /// Whether the class declares a `static let identity` (or `static var`).
    let declaresIdentity: Bool
    /// Whether the class declares a `static let indexes` (or `static var`).
    let declaresIndexes: Bool
    /// Whether the class declares a `static let inverses` (or `static var`).
    let declaresInverses: Bool
    /// Whether the class declares a `static let deleteRules` (or `static var`).
    let declaresDeleteRules: Bool
    /// The case names of a nested `CodingKeys` enum (its JSON keys), if the class declares one.
    let codingKeyCases: [String]?
    /// Whether the class declares an initializer of its own.
    let declaresInitializer: Bool

    /// The field backed by the property named `name`, if it is persisted.
    func field(named name: String) -> EntityProperty? {
        fields.first { $0.key == name }
    }
}

/// The outcome of analysing the declaration `@Entity` is attached to.
struct EntityAnalysis {
    /// The class's layout; `nil` when the declaration has errors.
    let layout: EntityLayout?
    /// Everything wrong with the declaration; non-empty exactly when `layout` is `nil`.
    let diagnostics: [Diagnostic]

    /// Analyses `declaration`, reporting errors at `attribute` when they concern the declaration as a whole.
    init(of declaration: some DeclGroupSyntax, attribute: AttributeSyntax) {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            layout = nil
            diagnostics = [Diagnostic(node: attribute, message: EntityDiagnostic.notAClass)]
            return
        }
        var collector = MemberCollector()
        if let genericParameters = classDecl.genericParameterClause {
            collector.diagnostics.append(Diagnostic(node: genericParameters, message: EntityDiagnostic.genericClass))
        }
        collector.collect(classDecl.memberBlock.members, insideIfConfig: false)

        diagnostics = collector.diagnostics
        guard diagnostics.isEmpty else {
            layout = nil
            return
        }
        let modifiers = classDecl.modifiers
        let accessModifier: Keyword? =
            if modifiers.contains(.public) || modifiers.contains(.open) {
                .public
            } else if modifiers.contains(.package) {
                .package
            } else {
                nil
            }
        layout = EntityLayout(
            className: classDecl.name.trimmed,
            accessModifier: accessModifier,
            fields: collector.fields,
            declaresIdentity: collector.declaresIdentity,
            declaresIndexes: collector.declaresIndexes,
            declaresInverses: collector.declaresInverses,
            declaresDeleteRules: collector.declaresDeleteRules,
            codingKeyCases: collector.codingKeyCases,
            declaresInitializer: collector.declaresInitializer
        )
    }
}

/// Walks a class's members, sorting stored properties into fields and reporting unsupported ones.
private struct MemberCollector {
    var fields: [EntityProperty] = []
    var diagnostics: [Diagnostic] = []
    var declaresIdentity = false
    var declaresIndexes = false
    var declaresInverses = false
    var declaresDeleteRules = false
    var codingKeyCases: [String]?
    var declaresInitializer = false

    mutating func collect(_ members: MemberBlockItemListSyntax, insideIfConfig: Bool) {
        for member in members {
            if let variable = member.decl.as(VariableDeclSyntax.self) {
                collect(variable, insideIfConfig: insideIfConfig)
            } else if member.decl.is(InitializerDeclSyntax.self) {
                declaresInitializer = true
            } else if let enumDecl = member.decl.as(EnumDeclSyntax.self), enumDecl.name.text == "CodingKeys" {
                codingKeyCases = enumDecl.memberBlock.members.flatMap { item -> [String] in
                    guard let caseDecl = item.decl.as(EnumCaseDeclSyntax.self) else { return [] }
                    return caseDecl.elements.map { $0.name.text.filter { $0 != "`" } }
                }
            } else if let ifConfig = member.decl.as(IfConfigDeclSyntax.self) {
                for clause in ifConfig.clauses {
                    if case .decls(let nested) = clause.elements {
                        collect(nested, insideIfConfig: true)
                    }
                }
            }
        }
    }

    private mutating func collect(_ variable: VariableDeclSyntax, insideIfConfig: Bool) {
        if variable.isTypeProperty {
            if variable.singleBinding?.name.bareName == "identity" {
                declaresIdentity = true
            }
            if variable.singleBinding?.name.bareName == "indexes" {
                declaresIndexes = true
            }
            if variable.singleBinding?.name.bareName == "inverses" {
                declaresInverses = true
            }
            if variable.singleBinding?.name.bareName == "deleteRules" {
                declaresDeleteRules = true
            }
            return
        }

        let isTransient = variable.attributes.contains(attributeNamed: "Transient")
        let isLazy = variable.modifiers.contains(.lazy)
        let isVar = variable.bindingSpecifier.tokenKind == .keyword(.var)
        let bindings = Array(variable.bindings)
        var persistedPatterns: [PatternSyntax] = []

        for (position, binding) in bindings.enumerated() {
            if case .computed = binding.storage { continue }
            let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.bareName
            // In `var a, b: Int`, `a` takes its type from the next annotated binding.
            let type = bindings[position...].lazy.compactMap(\.typeAnnotation).first?.type

            if isTransient || isLazy || name?.hasPrefix("_") == true {
                // Not persisted, but `init(row:)` still has to leave it initialized.
                let hasDefaultValue = binding.initializer != nil || (isVar && type?.hasImplicitNilDefault == true)
                if !isLazy, !hasDefaultValue {
                    let property = name ?? binding.pattern.trimmedDescription
                    let message: EntityDiagnostic =
                        isTransient
                        ? .transientWithoutDefault(property: property)
                        : .underscoredWithoutDefault(property: property)
                    diagnostics.append(Diagnostic(node: binding.pattern, message: message))
                }
                continue
            }
            persistedPatterns.append(binding.pattern)
        }

        guard !persistedPatterns.isEmpty else { return }
        if insideIfConfig {
            for pattern in persistedPatterns {
                let message = EntityDiagnostic.persistedPropertyInIfConfig(property: pattern.trimmedDescription)
                diagnostics.append(Diagnostic(node: pattern, message: message))
            }
            return
        }
        guard bindings.count == 1, let (name, binding) = variable.singleBinding else {
            let names = persistedPatterns.map { "'\($0.trimmedDescription)'" }
            let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " and " + names.last! : names[0]
            let message = EntityDiagnostic.multipleBindings(properties: list)
            diagnostics.append(Diagnostic(node: variable.bindings, message: message))
            return
        }
        collect(name: name, binding: binding, of: variable)
    }

    /// Turns a single persisted binding into a field, or reports why it cannot be one.
    private mutating func collect(name: TokenSyntax, binding: PatternBindingSyntax, of variable: VariableDeclSyntax) {
        let property = name.bareName
        let errorCount = diagnostics.count

        if variable.bindingSpecifier.tokenKind == .keyword(.let) {
            let fixIt = FixIt.replace(
                message: EntityFixIt.replaceLetWithVar,
                oldNode: variable.bindingSpecifier,
                newNode: variable.bindingSpecifier.with(\.tokenKind, .keyword(.var))
            )
            diagnostics.append(
                Diagnostic(
                    node: variable.bindingSpecifier,
                    message: EntityDiagnostic.letProperty(property: property),
                    fixIt: fixIt
                )
            )
        }
        if case .observed(let observer) = binding.storage {
            diagnostics.append(
                Diagnostic(node: observer, message: EntityDiagnostic.propertyObservers(property: property))
            )
        }
        // Diagnose at the type as written in the source; keep a trimmed copy for the generated code.
        guard let type = binding.typeAnnotation?.type else {
            diagnostics.append(
                Diagnostic(node: binding.pattern, message: EntityDiagnostic.missingTypeAnnotation(property: property))
            )
            return
        }
        if let unwrapped = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            let optionalType = "\(unwrapped.wrappedType.trimmedDescription)?"
            diagnostics.append(
                Diagnostic(
                    node: type,
                    message: EntityDiagnostic.implicitlyUnwrappedOptional(property: property, optionalType: optionalType)
                )
            )
        }
        if type.isOpaque {
            diagnostics.append(Diagnostic(node: type, message: EntityDiagnostic.opaqueType(property: property)))
        }

        guard diagnostics.count == errorCount else { return }
        fields.append(
            EntityProperty(
                index: fields.count,
                name: name,
                type: type.trimmed,
                initialValue: binding.initializer?.value.trimmed
            )
        )
    }
}
