import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@_EntityField(index)`: turns a persisted property of an `@Entity` class into a computed
/// property backed by private storage, so the store sees every read and write.
///
/// `@Entity` attaches it to each persisted field; it is not meant to be written by hand.
/// For `var name: String? = nil` at index 1 it generates the peer
///
///     private var _name: String? = nil
///
/// and the accessors
///
///     @storageRestrictions(initializes: _name)
///     init(initialValue) { _name = initialValue }
///     get { _$EntityAccess.get(self, 1, _name) { $0._name = $1 } }
///     set { _$EntityAccess.set(self, 1, _name, newValue) { $0._name = $1 } }
///
/// The `init` accessor lets the class's own initializers assign the property before the object is
/// fully initialized, exactly as if it were still stored; `get` and `set` go through the store,
/// which can load the value lazily and record changes. The closure writes the storage back.
public struct EntityFieldMacro: AccessorMacro, PeerMacro {
    /// The generated code is laid out by hand; automatic formatting would split every closure over several lines.
    public static var formatMode: FormatMode { .disabled }

    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let index = fieldIndex(of: node) else {
            context.diagnose(Diagnostic(node: node, message: EntityDiagnostic.fieldIndexMissing))
            return []
        }
        guard let field = FieldDeclaration(declaration) else {
            context.diagnose(Diagnostic(node: node, message: EntityDiagnostic.fieldNotAStoredVariable))
            return []
        }
        let storage = field.storageName
        let indexLiteral = IntegerLiteralExprSyntax(index)
        // Formatting is disabled, so the accessors carry their own indentation inside the `{ }`.
        return [
            """
                @storageRestrictions(initializes: \(storage))
                init(initialValue) {
                    \(storage) = initialValue
                }
            """,
            """
                get {
                    _$EntityAccess.get(self, \(indexLiteral), \(storage)) { $0.\(storage) = $1 }
                }
            """,
            """
                set {
                    _$EntityAccess.set(self, \(indexLiteral), \(storage), newValue) { $0.\(storage) = $1 }
                }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        // The accessor role reports problems; the peer role just stays silent.
        guard fieldIndex(of: node) != nil, let field = FieldDeclaration(declaration) else { return [] }
        guard let initialValue = field.initialValue else {
            return ["private var \(field.storageName): \(field.type)"]
        }
        return ["private var \(field.storageName): \(field.type) = \(initialValue)"]
    }

    /// The literal index argument of `@_EntityField(index)`, if it is well formed.
    private static func fieldIndex(of node: AttributeSyntax) -> Int? {
        guard case .argumentList(let arguments) = node.arguments, arguments.count == 1,
            let argument = arguments.first, argument.label == nil,
            let literal = argument.expression.as(IntegerLiteralExprSyntax.self)
        else { return nil }
        return Int(literal.literal.text.filter { $0 != "_" })
    }
}

/// The parts of a `var name: Type = value` declaration `@_EntityField` needs.
private struct FieldDeclaration {
    let type: TypeSyntax
    let initialValue: ExprSyntax?
    let storageName: TokenSyntax

    init?(_ declaration: some DeclSyntaxProtocol) {
        guard let variable = declaration.as(VariableDeclSyntax.self),
            variable.bindingSpecifier.tokenKind == .keyword(.var),
            !variable.isTypeProperty, !variable.modifiers.contains(.lazy),
            let (name, binding) = variable.singleBinding,
            binding.accessorBlock == nil,
            let type = binding.typeAnnotation?.type
        else { return nil }
        self.type = type.trimmed
        self.initialValue = binding.initializer?.value.trimmed
        self.storageName = .identifier("_" + name.bareName)
    }
}
