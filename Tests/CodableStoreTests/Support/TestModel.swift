import CodableStore
import Foundation

// The entities most tests use. Entity classes are declared at file scope: the @Entity macro adds an
// extension, which Swift does not allow on local types.

@Entity final class Person {
    var id: Int
    var name: String?
    var age: Int = 0
    /// To-one; inverse of Country.people (one-to-many).
    var country: Country?
    /// Unordered many-to-many; inverse of Tag.people.
    var tags: Set<Tag> = []
    /// Ordered one-to-many; inverse of PersonAttribute.person.
    var attributes: [PersonAttribute] = []

    static let identity = Identity(\Person.id)

    init(id: Int, name: String? = nil, age: Int = 0) {
        self.id = id
        self.name = name
        self.age = age
    }
}

@Entity final class Country {
    var code: String
    var name: String
    var people: Set<Person> = []

    static let identity = Identity(\Country.code)

    init(code: String, name: String) {
        self.code = code
        self.name = name
    }
}

@Entity final class Tag {
    var id: Int
    var label: String
    var people: Set<Person> = []

    static let identity = Identity(\Tag.id)

    init(id: Int, label: String) {
        self.id = id
        self.label = label
    }
}

/// No identity: always inserted.
@Entity final class PersonAttribute {
    var key: String
    var value: String
    var person: Person?

    init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}
