import SwiftDiagnostics

/// The errors the CodableStore macros report about the declarations they are attached to.
enum EntityDiagnostic: DiagnosticMessage {
    case notAClass
    case genericClass
    case propertyObservers(property: String)
    case letProperty(property: String)
    case missingTypeAnnotation(property: String)
    case multipleBindings(properties: String)
    case implicitlyUnwrappedOptional(property: String, optionalType: String)
    case opaqueType(property: String)
    case transientWithoutDefault(property: String)
    case underscoredWithoutDefault(property: String)
    case persistedPropertyInIfConfig(property: String)
    case fieldIndexMissing
    case fieldNotAStoredVariable

    var message: String {
        switch self {
        case .notAClass:
            "@Entity can only be applied to a class"
        case .genericClass:
            "@Entity does not support generic classes"
        case .propertyObservers(let property):
            "@Entity does not support property observers on '\(property)'; "
                + "remove the observers or mark the property @Transient"
        case .letProperty(let property):
            "@Entity stored property '\(property)' must be declared with 'var'"
        case .missingTypeAnnotation(let property):
            "@Entity property '\(property)' needs an explicit type annotation"
        case .multipleBindings(let properties):
            "@Entity needs one stored property per declaration; declare \(properties) separately"
        case .implicitlyUnwrappedOptional(let property, let optionalType):
            "@Entity property '\(property)' cannot be implicitly unwrapped; use an optional ('\(optionalType)')"
        case .opaqueType(let property):
            "@Entity property '\(property)' cannot have an opaque type; use a concrete type"
        case .transientWithoutDefault(let property):
            "transient property '\(property)' needs a default value, "
                + "the store creates objects without calling your initializers"
        case .underscoredWithoutDefault(let property):
            "property '\(property)' is not persisted because its name starts with '_', so it needs a default value; "
                + "the store creates objects without calling your initializers"
        case .persistedPropertyInIfConfig(let property):
            "@Entity does not support persisted properties inside '#if'; "
                + "move '\(property)' out of the '#if' or mark it @Transient"
        case .fieldIndexMissing:
            "@_EntityField needs the field's index as an integer literal, e.g. @_EntityField(0)"
        case .fieldNotAStoredVariable:
            "@_EntityField can only be applied to a single stored 'var' property with an explicit type annotation"
        }
    }

    var severity: DiagnosticSeverity { .error }

    var diagnosticID: MessageID {
        let id =
            switch self {
            case .notAClass: "notAClass"
            case .genericClass: "genericClass"
            case .propertyObservers: "propertyObservers"
            case .letProperty: "letProperty"
            case .missingTypeAnnotation: "missingTypeAnnotation"
            case .multipleBindings: "multipleBindings"
            case .implicitlyUnwrappedOptional: "implicitlyUnwrappedOptional"
            case .opaqueType: "opaqueType"
            case .transientWithoutDefault: "transientWithoutDefault"
            case .underscoredWithoutDefault: "underscoredWithoutDefault"
            case .persistedPropertyInIfConfig: "persistedPropertyInIfConfig"
            case .fieldIndexMissing: "fieldIndexMissing"
            case .fieldNotAStoredVariable: "fieldNotAStoredVariable"
            }
        return MessageID(domain: "CodableStoreMacros", id: id)
    }
}

/// The fix-its the CodableStore macros offer alongside their diagnostics.
enum EntityFixIt: FixItMessage {
    case replaceLetWithVar

    var message: String {
        switch self {
        case .replaceLetWithVar: "replace 'let' with 'var'"
        }
    }

    var fixItID: MessageID {
        switch self {
        case .replaceLetWithVar: MessageID(domain: "CodableStoreMacros", id: "replaceLetWithVar")
        }
    }
}
