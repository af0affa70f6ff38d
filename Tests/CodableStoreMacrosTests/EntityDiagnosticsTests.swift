import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Declarations `@Entity` cannot support: each is reported as an error, and then nothing is generated.
@Suite struct EntityDiagnosticsTests {
    @Test func structIsAnError() {
        assertExpansion(
            """
            @Entity public struct Point {
                public var x: Int = 0
            }
            """,
            expandedSource: """
            public struct Point {
                public var x: Int = 0
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Entity can only be applied to a class", line: 1, column: 1)]
        )
    }

    @Test(arguments: ["enum", "actor", "protocol"])
    func otherNonClassDeclarationsAreAnError(kind: String) {
        assertExpansion(
            """
            @Entity \(kind) Point {
                var x: Int
            }
            """,
            expandedSource: """
            \(kind) Point {
                var x: Int
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Entity can only be applied to a class", line: 1, column: 1)]
        )
    }

    @Test func genericClassIsAnError() {
        assertExpansion(
            """
            @Entity final class Box<Value> {
                var id: Int = 0
            }
            """,
            expandedSource: """
            final class Box<Value> {
                var id: Int = 0
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Entity does not support generic classes", line: 1, column: 24)]
        )
    }

    @Test func letPropertyIsAnError() {
        assertExpansion(
            """
            @Entity final class Person {
                let id: Int
                init(id: Int) { self.id = id }
            }
            """,
            expandedSource: """
            final class Person {
                let id: Int
                init(id: Int) { self.id = id }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Entity stored property 'id' must be declared with 'var'",
                    line: 2,
                    column: 5,
                    fixIts: [FixItSpec(message: "replace 'let' with 'var'")]
                )
            ],
            fixedSource: """
                @Entity final class Person {
                    var id: Int
                    init(id: Int) { self.id = id }
                }
                """
        )
    }

    @Test func observersAreAnError() {
        assertExpansion(
            """
            @Entity final class Person {
                var name: String = "" {
                    didSet { print(name) }
                }
            }
            """,
            expandedSource: """
            final class Person {
                var name: String = "" {
                    didSet { print(name) }
                }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Entity does not support property observers on 'name'; "
                        + "remove the observers or mark the property @Transient",
                    line: 3,
                    column: 9
                )
            ]
        )
    }

    @Test func transientPropertyMayHaveObservers() {
        let expanded = expandedSource(
            """
            @Entity final class Person {
                @Transient var draft: String = "" {
                    didSet { print(draft) }
                }
            }
            """
        )
        #expect(expanded.contains("required init(row: EntityRow) throws {\n    }"))
    }

    @Test func missingTypeAnnotationIsAnError() {
        assertExpansion(
            """
            @Entity final class Counter {
                var count = 0
            }
            """,
            expandedSource: """
            final class Counter {
                var count = 0
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Entity property 'count' needs an explicit type annotation", line: 2, column: 9)
            ]
        )
    }

    @Test func multipleBindingsAreAnError() {
        assertExpansion(
            """
            @Entity final class Point {
                var x, y: Int
                init() { x = 0; y = 0 }
            }
            """,
            expandedSource: """
            final class Point {
                var x, y: Int
                init() { x = 0; y = 0 }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Entity needs one stored property per declaration; declare 'x' and 'y' separately",
                    line: 2,
                    column: 9
                )
            ]
        )
    }

    @Test func implicitlyUnwrappedOptionalIsAnError() {
        assertExpansion(
            """
            @Entity final class Person {
                var name: String!
            }
            """,
            expandedSource: """
            final class Person {
                var name: String!
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Entity property 'name' cannot be implicitly unwrapped; use an optional ('String?')",
                    line: 2,
                    column: 15
                )
            ]
        )
    }

    @Test func opaqueTypeIsAnError() {
        assertExpansion(
            """
            @Entity final class Drawing {
                var shape: some Shape = Circle()
            }
            """,
            expandedSource: """
            final class Drawing {
                var shape: some Shape = Circle()
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Entity property 'shape' cannot have an opaque type; use a concrete type",
                    line: 2,
                    column: 16
                )
            ]
        )
    }

    @Test func transientPropertyWithoutDefaultIsAnError() {
        assertExpansion(
            """
            @Entity final class Person {
                var id: Int = 0
                @Transient var cache: [String: Int]
                @Transient let token: String?
                @Transient var note: String?
                init() { cache = [:]; token = nil }
            }
            """,
            expandedSource: """
            final class Person {
                var id: Int = 0
                var cache: [String: Int]
                let token: String?
                var note: String?
                init() { cache = [:]; token = nil }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "transient property 'cache' needs a default value, "
                        + "the store creates objects without calling your initializers",
                    line: 3,
                    column: 20
                ),
                DiagnosticSpec(
                    message: "transient property 'token' needs a default value, "
                        + "the store creates objects without calling your initializers",
                    line: 4,
                    column: 20
                ),
            ]
        )
    }

    @Test func underscoredPropertyWithoutDefaultIsAnError() {
        assertExpansion(
            """
            @Entity final class Session {
                var _token: String
                init() { _token = "" }
            }
            """,
            expandedSource: """
            final class Session {
                var _token: String
                init() { _token = "" }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "property '_token' is not persisted because its name starts with '_', "
                        + "so it needs a default value; the store creates objects without calling your initializers",
                    line: 2,
                    column: 9
                )
            ]
        )
    }

    @Test func persistedPropertyInsideIfConfigIsAnError() {
        assertExpansion(
            """
            @Entity final class Build {
                #if DEBUG
                var log: String = ""
                @Transient var verbose: Bool = false
                #endif
            }
            """,
            expandedSource: """
            final class Build {
                #if DEBUG
                var log: String = ""
                var verbose: Bool = false
                #endif
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Entity does not support persisted properties inside '#if'; "
                        + "move 'log' out of the '#if' or mark it @Transient",
                    line: 3,
                    column: 9
                )
            ]
        )
    }
}
