import CodableStoreMacros
import SwiftParser
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// All three macros, so expansions are checked end to end: `@Entity` adds `@_EntityField`
/// attributes, which the test harness then expands as well.
let entityMacroSpecs: [String: MacroSpec] = [
    "Entity": MacroSpec(type: EntityMacro.self, conformances: ["EntityObject", "Decodable"]),
    "_EntityField": MacroSpec(type: EntityFieldMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
]

/// `assertMacroExpansion` with the CodableStore macros, reporting failures as Swift Testing issues.
func assertExpansion(
    _ source: String,
    expandedSource: String,
    diagnostics: [DiagnosticSpec] = [],
    fixedSource: String? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) {
    assertMacroExpansion(
        source,
        expandedSource: expandedSource,
        diagnostics: diagnostics,
        macroSpecs: entityMacroSpecs,
        fixedSource: fixedSource,
        indentationWidth: .spaces(4),
        failureHandler: { failure in
            Issue.record(
                Comment(rawValue: failure.message),
                sourceLocation: Testing.SourceLocation(
                    fileID: failure.location.fileID,
                    filePath: failure.location.filePath,
                    line: failure.location.line,
                    column: failure.location.column
                )
            )
        },
        fileID: fileID,
        filePath: filePath,
        line: line,
        column: column
    )
}

/// The source after expanding the CodableStore macros, for tests that check only part of an expansion.
/// Fails the test if the expansion reports diagnostics.
func expandedSource(_ source: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> String {
    let context = BasicMacroExpansionContext()
    let expanded = Parser.parse(source: source).expand(
        macroSpecs: entityMacroSpecs,
        contextGenerator: { _ in context },
        indentationWidth: .spaces(4)
    )
    #expect(context.diagnostics.isEmpty, "\(context.diagnostics)", sourceLocation: sourceLocation)
    return expanded.description
}
