import SwiftSyntax
import SwiftSyntaxMacros

/// `@Transient`: excludes a stored property of an `@Entity` class from persistence.
///
/// It generates nothing; `@Entity` looks for the attribute when it picks the persisted fields.
/// Because the store creates objects without calling the class's initializers, a transient
/// property needs a default value (or an optional type), which `@Entity` checks.
public struct TransientMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
