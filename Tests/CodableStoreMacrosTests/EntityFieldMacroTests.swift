import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// `@_EntityField` and `@Transient` on their own, as `@Entity` would attach them (or a user by mistake).
@Suite struct EntityFieldMacroTests {
    @Test func fieldGetsPrivateStorageAndTrackingAccessors() {
        assertExpansion(
            """
            final class Person {
                @_EntityField(1) var name: String? = nil
            }
            """,
            expandedSource: """
            final class Person {
                var name: String? {
                    @storageRestrictions(initializes: _name)
                    init(initialValue) {
                        _name = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 1, _name) { $0._name = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 1, _name, newValue) { $0._name = $1 }
                    }
                }

                private var _name: String? = nil
            }
            """
        )
    }

    @Test(arguments: ["@_EntityField", "@_EntityField()", "@_EntityField(index)", "@_EntityField(-1)"])
    func fieldWithoutIntegerIndexIsAnError(attribute: String) {
        assertExpansion(
            """
            final class Person {
                \(attribute) var name: String
            }
            """,
            expandedSource: """
            final class Person {
                var name: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@_EntityField needs the field's index as an integer literal, e.g. @_EntityField(0)",
                    line: 2,
                    column: 5
                )
            ]
        )
    }

    @Test(arguments: ["let id: Int", "var id = 0", "var id: Int { 0 }", "static var id: Int = 0", "lazy var id: Int = 0"])
    func fieldOnAnythingButATypedStoredVarIsAnError(declaration: String) {
        assertExpansion(
            """
            final class Person {
                @_EntityField(0) \(declaration)
            }
            """,
            expandedSource: """
            final class Person {
                \(declaration)
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "@_EntityField can only be applied to a single stored 'var' property with an explicit type annotation",
                    line: 2,
                    column: 5
                )
            ]
        )
    }

    @Test func transientGeneratesNothing() {
        assertExpansion(
            """
            final class Person {
                @Transient var cache: [String: Int] = [:]
            }
            """,
            expandedSource: """
            final class Person {
                var cache: [String: Int] = [:]
            }
            """
        )
    }
}
