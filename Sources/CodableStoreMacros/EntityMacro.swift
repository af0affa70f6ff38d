import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Entity`: makes a class storable by `CodableStore`.
///
/// Every stored instance `var` that is not `@Transient`, `lazy` or named with a leading underscore
/// is a persisted field; its index is its position among the fields in source order.
///
/// - The member-attribute role marks each field `@_EntityField(index)`, which routes the
///   property's reads and writes through the store (see ``EntityFieldMacro``).
/// - The member role adds `entityState` (the object's bookkeeping), `entityDescription` (the
///   fields' names, types, defaults and storage accessors, plus the class's `identity`), and
///   `init(row:)`. The store creates objects from rows without calling the class's own
///   initializers, so `init(row:)` fills each field's storage directly from the row. When the class
///   declares no initializer and every field has a default, it also adds `init()`, because
///   declaring `init(row:)` would otherwise take away the implicit one.
/// - The extension role adds the `EntityObject` conformance, unless the class already states it.
///
/// Unsupported declarations (non-classes, generic classes, `let` fields, property observers,
/// fields without a type annotation, …) are reported as errors, and then nothing is generated.
public struct EntityMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    /// The generated code is laid out by hand; automatic formatting would split every closure over several lines.
    public static var formatMode: FormatMode { .disabled }

    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        // Only this role reports the analysis' errors; the others run the same analysis and stay silent.
        let analysis = EntityAnalysis(of: declaration, attribute: node)
        for diagnostic in analysis.diagnostics {
            context.diagnose(diagnostic)
        }
        guard let layout = analysis.layout else { return [] }

        var members = [
            entityStateDecl(layout),
            entityDescriptionDecl(layout),
            rowInitializerDecl(layout),
            decodableInitializerDecl(layout),
        ]
        if !layout.declaresInitializer, layout.fields.allSatisfy(\.hasDefaultValue) {
            members.append("\(raw: accessPrefix(layout))init() {}")
        }
        return members
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard let layout = EntityAnalysis(of: declaration, attribute: node).layout,
            let variable = member.as(VariableDeclSyntax.self),
            !variable.attributes.contains(attributeNamed: "_EntityField"),
            let (name, _) = variable.singleBinding,
            let field = layout.field(named: name.bareName)
        else { return [] }
        return ["@_EntityField(\(IntegerLiteralExprSyntax(field.index)))"]
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        // The compiler lists only the conformances the type still lacks; also honour one written in the class.
        let declaredConformances = declaration.inheritanceClause?.inheritedTypes.map(\.type) ?? []
        guard EntityAnalysis(of: declaration, attribute: node).layout != nil else { return [] }
        var conformances: [String] = []
        if protocols.contains(where: \.isEntityObject), !declaredConformances.contains(where: \.isEntityObject) {
            conformances.append("CodableStoreCore.EntityObject")
        }
        if protocols.contains(where: \.isDecodable), !declaredConformances.contains(where: \.isDecodable) {
            conformances.append("Decodable")
        }
        guard !conformances.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: conformances.joined(separator: ", ")) {}")]
    }

    // MARK: - Generated members

    /// `public ` for public and open classes (`package ` for package ones), so that the members can
    /// witness `EntityObject`'s requirements; nothing for internal and private classes.
    private static func accessPrefix(_ layout: EntityLayout) -> String {
        layout.accessModifier.map { "\($0) " } ?? ""
    }

    /// Entities are `Decodable` so that they can appear in `Decodable` types decoded by `StoreDecoder`, which
    /// upserts them without calling this initializer. Any other decoder reaches it, and gets an explanation:
    /// an initializer cannot return the existing object an upsert must update.
    private static func decodableInitializerDecl(_ layout: EntityLayout) -> DeclSyntax {
        """
        \(raw: accessPrefix(layout))required convenience init(from decoder: any Decoder) throws {
            throw _$EntityDecoding.unsupportedDecoder(\(raw: layout.className.text).self, decoder)
        }
        """
    }

    private static func entityStateDecl(_ layout: EntityLayout) -> DeclSyntax {
        "\(raw: accessPrefix(layout))let entityState = EntityState()"
    }

    private static func entityDescriptionDecl(_ layout: EntityLayout) -> DeclSyntax {
        let className = layout.className
        let fieldStatements = layout.fields.map { field in
            let storage = field.storageName
            var arguments: [String] = [
                StringLiteralExprSyntax(content: field.key).description,
                "\\\(className.text).\(field.name.text)",
                "as: \(field.type.metatypeOperand).self",
            ]
            if let initialValue = field.initialValue {
                arguments.append("default: { \(initialValue) }")
            }
            arguments.append("get: { $0.\(storage.text) }")
            arguments.append("set: { $0.\(storage.text) = $1 }")
            return "    builder.field(\(arguments.joined(separator: ", ")))\n"
        }
        let identity = layout.declaresIdentity ? "\(className.text).identity" : "nil"
        let indexes = layout.declaresIndexes ? ", indexes: \(className.text).indexes" : ""
        let inverses = layout.declaresInverses ? ", inverses: \(className.text).inverses" : ""
        let deleteRules = layout.declaresDeleteRules ? ", deleteRules: \(className.text).deleteRules" : ""
        var codingKeys = ""
        if let cases = layout.codingKeyCases {
            let pairs = cases.map { "(\(StringLiteralExprSyntax(content: $0)), .\($0))" }.joined(separator: ", ")
            codingKeys = "    builder.codingKeys(\(className.text).CodingKeys.self, fields: [\(pairs)])\n"
        }
        let entityName = StringLiteralExprSyntax(content: className.bareName)
        return """
            \(raw: accessPrefix(layout))static let entityDescription: EntityDescription = {
                var builder = EntityDescriptionBuilder<\(className)>(name: \(entityName))
            \(raw: fieldStatements.joined())\(raw: codingKeys)    return builder.build(identity: \(raw: identity)\(raw: indexes)\(raw: inverses)\(raw: deleteRules))
            }()
            """
    }

    private static func rowInitializerDecl(_ layout: EntityLayout) -> DeclSyntax {
        let assignments = layout.fields.map { field in
            let index = IntegerLiteralExprSyntax(field.index)
            return "    self.\(field.storageName.text) = try row.value(\(index), as: \(field.type.metatypeOperand).self)\n"
        }
        return """
            \(raw: accessPrefix(layout))required init(row: EntityRow) throws {
            \(raw: assignments.joined())}
            """
    }
}
