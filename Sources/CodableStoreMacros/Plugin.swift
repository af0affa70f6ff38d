import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides CodableStore's macros.
@main
struct CodableStoreMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        EntityMacro.self,
        EntityFieldMacro.self,
        TransientMacro.self,
    ]
}
