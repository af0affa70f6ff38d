import Testing

/// Full expansions of `@Entity`: the test harness also expands the `@_EntityField` attributes it adds.
@Suite struct EntityExpansionTests {
    @Test func expandsAttributesAndRelationshipsIntoFieldsAndRowInit() {
        assertExpansion(
            #"""
            @Entity public final class Person {
                var id: Int
                var name: String? = nil
                var score: Double = 0
                var country: Country?
                var tags: [Tag]
                @Transient var cache: [String: Int] = [:]
                var computed: Int { id * 2 }
                static let identity = Identity(\Person.id)
                init(id: Int) { self.id = id; self.tags = [] }
            }
            """#,
            expandedSource: #"""
            public final class Person {
                var id: Int {
                    @storageRestrictions(initializes: _id)
                    init(initialValue) {
                        _id = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _id) { $0._id = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 }
                    }
                }

                private var _id: Int
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
                var score: Double {
                    @storageRestrictions(initializes: _score)
                    init(initialValue) {
                        _score = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 2, _score) { $0._score = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 2, _score, newValue) { $0._score = $1 }
                    }
                }

                private var _score: Double = 0
                var country: Country? {
                    @storageRestrictions(initializes: _country)
                    init(initialValue) {
                        _country = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 3, _country) { $0._country = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 3, _country, newValue) { $0._country = $1 }
                    }
                }

                private var _country: Country?
                var tags: [Tag] {
                    @storageRestrictions(initializes: _tags)
                    init(initialValue) {
                        _tags = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 4, _tags) { $0._tags = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 4, _tags, newValue) { $0._tags = $1 }
                    }
                }

                private var _tags: [Tag]
                var cache: [String: Int] = [:]
                var computed: Int { id * 2 }
                static let identity = Identity(\Person.id)
                init(id: Int) { self.id = id; self.tags = [] }

                public let entityState = EntityState()

                public static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Person>(name: "Person")
                    builder.field("id", \Person.id, as: Int.self, get: { $0._id }, set: { $0._id = $1 })
                    builder.field("name", \Person.name, as: String?.self, default: { nil }, get: { $0._name }, set: { $0._name = $1 })
                    builder.field("score", \Person.score, as: Double.self, default: { 0 }, get: { $0._score }, set: { $0._score = $1 })
                    builder.field("country", \Person.country, as: Country?.self, get: { $0._country }, set: { $0._country = $1 })
                    builder.field("tags", \Person.tags, as: [Tag].self, get: { $0._tags }, set: { $0._tags = $1 })
                    return builder.build(identity: Person.identity)
                }()

                public required init(row: EntityRow) throws {
                    self._id = try row.value(0, as: Int.self)
                    self._name = try row.value(1, as: String?.self)
                    self._score = try row.value(2, as: Double.self)
                    self._country = try row.value(3, as: Country?.self)
                    self._tags = try row.value(4, as: [Tag].self)
                }

                public required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Person.self, decoder)
                }
            }

            extension Person: CodableStoreCore.EntityObject, Decodable {}
            """#
        )
    }

    @Test func transientPropertiesAreNotFields() {
        assertExpansion(
            """
            @Entity final class Cache {
                @Transient var hits: Int = 0
                @CodableStore.Transient var lastKey: String?
                var value: Int
                lazy var expensive: [Int] = []
                var _scratch: Int = 0
                static var shared: Int = 0
                var doubled: Int { value * 2 }
                var tripled: Int {
                    get { value * 3 }
                    set { value = newValue / 3 }
                }
                init(value: Int) { self.value = value }
            }
            """,
            expandedSource: """
            final class Cache {
                var hits: Int = 0
                @CodableStore.Transient var lastKey: String?
                var value: Int {
                    @storageRestrictions(initializes: _value)
                    init(initialValue) {
                        _value = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _value) { $0._value = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _value, newValue) { $0._value = $1 }
                    }
                }

                private var _value: Int
                lazy var expensive: [Int] = []
                var _scratch: Int = 0
                static var shared: Int = 0
                var doubled: Int { value * 2 }
                var tripled: Int {
                    get { value * 3 }
                    set { value = newValue / 3 }
                }
                init(value: Int) { self.value = value }

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Cache>(name: "Cache")
                    builder.field("value", \\Cache.value, as: Int.self, get: { $0._value }, set: { $0._value = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._value = try row.value(0, as: Int.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Cache.self, decoder)
                }
            }

            extension Cache: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func internalClassGetsNoAccessModifiers() {
        assertExpansion(
            """
            @Entity class Note {
                var text: String
                init(text: String) { self.text = text }
            }
            """,
            expandedSource: """
            class Note {
                var text: String {
                    @storageRestrictions(initializes: _text)
                    init(initialValue) {
                        _text = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _text) { $0._text = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _text, newValue) { $0._text = $1 }
                    }
                }

                private var _text: String
                init(text: String) { self.text = text }

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Note>(name: "Note")
                    builder.field("text", \\Note.text, as: String.self, get: { $0._text }, set: { $0._text = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._text = try row.value(0, as: String.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Note.self, decoder)
                }
            }

            extension Note: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func openClassGetsPublicAndPackageClassGetsPackageModifiers() {
        assertExpansion(
            """
            @Entity open class Base {
                var id: Int = 0
            }
            @Entity package final class Shared {
                var id: Int = 0
            }
            """,
            expandedSource: """
            open class Base {
                var id: Int {
                    @storageRestrictions(initializes: _id)
                    init(initialValue) {
                        _id = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _id) { $0._id = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 }
                    }
                }

                private var _id: Int = 0

                public let entityState = EntityState()

                public static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Base>(name: "Base")
                    builder.field("id", \\Base.id, as: Int.self, default: { 0 }, get: { $0._id }, set: { $0._id = $1 })
                    return builder.build(identity: nil)
                }()

                public required init(row: EntityRow) throws {
                    self._id = try row.value(0, as: Int.self)
                }

                public required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Base.self, decoder)
                }

                public init() {}
            }
            package final class Shared {
                var id: Int {
                    @storageRestrictions(initializes: _id)
                    init(initialValue) {
                        _id = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _id) { $0._id = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 }
                    }
                }

                private var _id: Int = 0

                package let entityState = EntityState()

                package static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Shared>(name: "Shared")
                    builder.field("id", \\Shared.id, as: Int.self, default: { 0 }, get: { $0._id }, set: { $0._id = $1 })
                    return builder.build(identity: nil)
                }()

                package required init(row: EntityRow) throws {
                    self._id = try row.value(0, as: Int.self)
                }

                package required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Shared.self, decoder)
                }

                package init() {}
            }

            extension Base: CodableStoreCore.EntityObject, Decodable {}

            extension Shared: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func entityWithoutIdentityBuildsWithNilIdentity() {
        assertExpansion(
            """
            @Entity final class Event {
                var name: String
                static let identityKey = "name"
                @Transient var identity = 1
                init(name: String) { self.name = name }
            }
            """,
            expandedSource: """
            final class Event {
                var name: String {
                    @storageRestrictions(initializes: _name)
                    init(initialValue) {
                        _name = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _name) { $0._name = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _name, newValue) { $0._name = $1 }
                    }
                }

                private var _name: String
                static let identityKey = "name"
                var identity = 1
                init(name: String) { self.name = name }

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Event>(name: "Event")
                    builder.field("name", \\Event.name, as: String.self, get: { $0._name }, set: { $0._name = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._name = try row.value(0, as: String.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Event.self, decoder)
                }
            }

            extension Event: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func declaredIndexesInversesAndDeleteRulesArePassedToTheBuilder() {
        assertExpansion(
            """
            @Entity final class Note {
                var id: Int
                static let identity = Identity(\\Note.id)
                static let indexes = [EntityIndex(\\Note.id)]
                static let inverses: [Inverse<Note>] = []
                static let deleteRules: [DeleteRule<Note>] = []
                init(id: Int) { self.id = id }
            }
            """,
            expandedSource: """
            final class Note {
                var id: Int {
                    @storageRestrictions(initializes: _id)
                    init(initialValue) {
                        _id = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _id) { $0._id = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 }
                    }
                }

                private var _id: Int
                static let identity = Identity(\\Note.id)
                static let indexes = [EntityIndex(\\Note.id)]
                static let inverses: [Inverse<Note>] = []
                static let deleteRules: [DeleteRule<Note>] = []
                init(id: Int) { self.id = id }

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Note>(name: "Note")
                    builder.field("id", \\Note.id, as: Int.self, get: { $0._id }, set: { $0._id = $1 })
                    return builder.build(identity: Note.identity, indexes: Note.indexes, inverses: Note.inverses, deleteRules: Note.deleteRules)
                }()

                required init(row: EntityRow) throws {
                    self._id = try row.value(0, as: Int.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Note.self, decoder)
                }
            }

            extension Note: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func defaultInitIsGeneratedWhenAllFieldsHaveDefaults() {
        assertExpansion(
            """
            @Entity final class Settings {
                var theme: String = "light"
                var fontSize: Int?
                @Transient var isDirty = false
            }
            """,
            expandedSource: """
            final class Settings {
                var theme: String {
                    @storageRestrictions(initializes: _theme)
                    init(initialValue) {
                        _theme = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _theme) { $0._theme = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _theme, newValue) { $0._theme = $1 }
                    }
                }

                private var _theme: String = "light"
                var fontSize: Int? {
                    @storageRestrictions(initializes: _fontSize)
                    init(initialValue) {
                        _fontSize = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 1, _fontSize) { $0._fontSize = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 1, _fontSize, newValue) { $0._fontSize = $1 }
                    }
                }

                private var _fontSize: Int?
                var isDirty = false

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Settings>(name: "Settings")
                    builder.field("theme", \\Settings.theme, as: String.self, default: { "light" }, get: { $0._theme }, set: { $0._theme = $1 })
                    builder.field("fontSize", \\Settings.fontSize, as: Int?.self, get: { $0._fontSize }, set: { $0._fontSize = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._theme = try row.value(0, as: String.self)
                    self._fontSize = try row.value(1, as: Int?.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Settings.self, decoder)
                }

                init() {}
            }

            extension Settings: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    /// No `init()` when the class has an initializer of its own, or when a field needs a value: without the
    /// macro, such a class would not have had an implicit `init()` either.
    @Test(arguments: [
        "var count: Int = 0\n    init(count: Int) { self.count = count }",
        "var count: Int",
        // Swift only defaults the sugared `Int?` to nil, not `Optional<Int>`.
        "var count: Optional<Int>",
    ])
    func defaultInitIsNotGeneratedWhenItWouldNotExistWithoutTheMacro(members: String) {
        let source = """
            @Entity final class Counter {
                \(members)
            }
            """
        let expanded = expandedSource(source)
        #expect(expanded.contains("required init(row: EntityRow) throws"))
        #expect(!expanded.contains("init() {}"))
    }

    @Test func typesAreWrappedSoThatMetatypeExpressionsParse() {
        assertExpansion(
            """
            @Entity final class Mixed {
                var transform: @Sendable (Int) -> Int = { $0 }
                var callback: (Int) -> Void = { _ in }
                var shape: any Shape = Circle()
                var both: Codable & Hashable = 1
                var maybe: Optional<Int> = nil
                var lookup: [String: Int] = [:]
                var members: Set<Tag> = []
            }
            """,
            expandedSource: """
            final class Mixed {
                var transform: @Sendable (Int) -> Int {
                    @storageRestrictions(initializes: _transform)
                    init(initialValue) {
                        _transform = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _transform) { $0._transform = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _transform, newValue) { $0._transform = $1 }
                    }
                }

                private var _transform: @Sendable (Int) -> Int = { $0 }
                var callback: (Int) -> Void {
                    @storageRestrictions(initializes: _callback)
                    init(initialValue) {
                        _callback = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 1, _callback) { $0._callback = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 1, _callback, newValue) { $0._callback = $1 }
                    }
                }

                private var _callback: (Int) -> Void = { _ in }
                var shape: any Shape {
                    @storageRestrictions(initializes: _shape)
                    init(initialValue) {
                        _shape = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 2, _shape) { $0._shape = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 2, _shape, newValue) { $0._shape = $1 }
                    }
                }

                private var _shape: any Shape = Circle()
                var both: Codable & Hashable {
                    @storageRestrictions(initializes: _both)
                    init(initialValue) {
                        _both = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 3, _both) { $0._both = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 3, _both, newValue) { $0._both = $1 }
                    }
                }

                private var _both: Codable & Hashable = 1
                var maybe: Optional<Int> {
                    @storageRestrictions(initializes: _maybe)
                    init(initialValue) {
                        _maybe = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 4, _maybe) { $0._maybe = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 4, _maybe, newValue) { $0._maybe = $1 }
                    }
                }

                private var _maybe: Optional<Int> = nil
                var lookup: [String: Int] {
                    @storageRestrictions(initializes: _lookup)
                    init(initialValue) {
                        _lookup = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 5, _lookup) { $0._lookup = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 5, _lookup, newValue) { $0._lookup = $1 }
                    }
                }

                private var _lookup: [String: Int] = [:]
                var members: Set<Tag> {
                    @storageRestrictions(initializes: _members)
                    init(initialValue) {
                        _members = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 6, _members) { $0._members = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 6, _members, newValue) { $0._members = $1 }
                    }
                }

                private var _members: Set<Tag> = []

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Mixed>(name: "Mixed")
                    builder.field("transform", \\Mixed.transform, as: (@Sendable (Int) -> Int).self, default: { { $0 } }, get: { $0._transform }, set: { $0._transform = $1 })
                    builder.field("callback", \\Mixed.callback, as: ((Int) -> Void).self, default: { { _ in } }, get: { $0._callback }, set: { $0._callback = $1 })
                    builder.field("shape", \\Mixed.shape, as: (any Shape).self, default: { Circle() }, get: { $0._shape }, set: { $0._shape = $1 })
                    builder.field("both", \\Mixed.both, as: (Codable & Hashable).self, default: { 1 }, get: { $0._both }, set: { $0._both = $1 })
                    builder.field("maybe", \\Mixed.maybe, as: Optional<Int>.self, default: { nil }, get: { $0._maybe }, set: { $0._maybe = $1 })
                    builder.field("lookup", \\Mixed.lookup, as: [String: Int].self, default: { [:] }, get: { $0._lookup }, set: { $0._lookup = $1 })
                    builder.field("members", \\Mixed.members, as: Set<Tag>.self, default: { [] }, get: { $0._members }, set: { $0._members = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._transform = try row.value(0, as: (@Sendable (Int) -> Int).self)
                    self._callback = try row.value(1, as: ((Int) -> Void).self)
                    self._shape = try row.value(2, as: (any Shape).self)
                    self._both = try row.value(3, as: (Codable & Hashable).self)
                    self._maybe = try row.value(4, as: Optional<Int>.self)
                    self._lookup = try row.value(5, as: [String: Int].self)
                    self._members = try row.value(6, as: Set<Tag>.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Mixed.self, decoder)
                }

                init() {}
            }

            extension Mixed: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func declaredEntityObjectConformanceIsNotRepeated() {
        assertExpansion(
            """
            @Entity final class Item: CodableStoreCore.EntityObject {
                var id: Int = 0
            }
            """,
            expandedSource: """
            final class Item: CodableStoreCore.EntityObject {
                var id: Int {
                    @storageRestrictions(initializes: _id)
                    init(initialValue) {
                        _id = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _id) { $0._id = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 }
                    }
                }

                private var _id: Int = 0

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Item>(name: "Item")
                    builder.field("id", \\Item.id, as: Int.self, default: { 0 }, get: { $0._id }, set: { $0._id = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._id = try row.value(0, as: Int.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Item.self, decoder)
                }

                init() {}
            }

            extension Item: Decodable {}
            """
        )
    }

    @Test func backquotedNamesAreStoredWithoutBackquotes() {
        assertExpansion(
            """
            @Entity final class Rule {
                var `default`: Bool = false
            }
            """,
            expandedSource: """
            final class Rule {
                var `default`: Bool {
                    @storageRestrictions(initializes: _default)
                    init(initialValue) {
                        _default = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _default) { $0._default = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _default, newValue) { $0._default = $1 }
                    }
                }

                private var _default: Bool = false

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Rule>(name: "Rule")
                    builder.field("default", \\Rule.`default`, as: Bool.self, default: { false }, get: { $0._default }, set: { $0._default = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._default = try row.value(0, as: Bool.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Rule.self, decoder)
                }

                init() {}
            }

            extension Rule: CodableStoreCore.EntityObject, Decodable {}
            """
        )
    }

    @Test func codingKeysEnumIsRegisteredWithEveryCaseInOrder() {
        assertExpansion(
            #"""
            @Entity final class Person {
                var id: Int
                var name: String
                var country: String?
                enum CodingKeys: String, EntityCodingKey {
                    case id = "person_id", name
                    case country = "origin.country"
                }
                init(id: Int, name: String) { self.id = id; self.name = name }
            }
            """#,
            expandedSource: #"""
            final class Person {
                var id: Int {
                    @storageRestrictions(initializes: _id)
                    init(initialValue) {
                        _id = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _id) { $0._id = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _id, newValue) { $0._id = $1 }
                    }
                }

                private var _id: Int
                var name: String {
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

                private var _name: String
                var country: String? {
                    @storageRestrictions(initializes: _country)
                    init(initialValue) {
                        _country = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 2, _country) { $0._country = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 2, _country, newValue) { $0._country = $1 }
                    }
                }

                private var _country: String?
                enum CodingKeys: String, EntityCodingKey {
                    case id = "person_id", name
                    case country = "origin.country"
                }
                init(id: Int, name: String) { self.id = id; self.name = name }

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Person>(name: "Person")
                    builder.field("id", \Person.id, as: Int.self, get: { $0._id }, set: { $0._id = $1 })
                    builder.field("name", \Person.name, as: String.self, get: { $0._name }, set: { $0._name = $1 })
                    builder.field("country", \Person.country, as: String?.self, get: { $0._country }, set: { $0._country = $1 })
                    builder.codingKeys(Person.CodingKeys.self, fields: [("id", .id), ("name", .name), ("country", .country)])
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._id = try row.value(0, as: Int.self)
                    self._name = try row.value(1, as: String.self)
                    self._country = try row.value(2, as: String?.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Person.self, decoder)
                }
            }

            extension Person: CodableStoreCore.EntityObject, Decodable {}
            """#
        )
    }

    @Test func codingKeysCaseNamesAreListedWithoutBackquotes() {
        let expanded = expandedSource(
            """
            @Entity final class Rule {
                var `default`: Bool = false
                var name: String = ""
                enum CodingKeys: String, EntityCodingKey {
                    case `default` = "is_default"
                    case name
                }
            }
            """
        )
        #expect(
            expanded.contains(
                #"    builder.codingKeys(Rule.CodingKeys.self, fields: [("default", .default), ("name", .name)])"#
                    + "\n        return builder.build(identity: nil)"
            )
        )
    }

    @Test func classWithoutCodingKeysRegistersNoCodingKeys() {
        let expanded = expandedSource(
            """
            @Entity final class Plain {
                var id: Int = 0
                struct Keys {}
            }
            """
        )
        #expect(!expanded.contains("builder.codingKeys"))
    }

    @Test func declaredCodableConformanceLeavesOnlyEntityObjectToAdd() {
        assertExpansion(
            #"""
            @Entity final class Tag: Codable {
                var name: String = ""
            }
            """#,
            expandedSource: #"""
            final class Tag: Codable {
                var name: String {
                    @storageRestrictions(initializes: _name)
                    init(initialValue) {
                        _name = initialValue
                    }
                    get {
                        _$EntityAccess.get(self, 0, _name) { $0._name = $1 }
                    }
                    set {
                        _$EntityAccess.set(self, 0, _name, newValue) { $0._name = $1 }
                    }
                }

                private var _name: String = ""

                let entityState = EntityState()

                static let entityDescription: EntityDescription = {
                    var builder = EntityDescriptionBuilder<Tag>(name: "Tag")
                    builder.field("name", \Tag.name, as: String.self, default: { "" }, get: { $0._name }, set: { $0._name = $1 })
                    return builder.build(identity: nil)
                }()

                required init(row: EntityRow) throws {
                    self._name = try row.value(0, as: String.self)
                }

                required convenience init(from decoder: any Decoder) throws {
                    throw _$EntityDecoding.unsupportedDecoder(Tag.self, decoder)
                }

                init() {}
            }

            extension Tag: CodableStoreCore.EntityObject {}
            """#
        )
    }

    @Test(arguments: ["Decodable", "Swift.Decodable", "Swift.Codable"])
    func declaredDecodableConformanceIsNotRepeated(conformance: String) {
        let expanded = expandedSource(
            """
            @Entity final class Tag: \(conformance) {
                var name: String = ""
            }
            """
        )
        #expect(expanded.hasSuffix("\n\nextension Tag: CodableStoreCore.EntityObject {}"))
    }

    @Test func declaredEncodableConformanceStillGetsDecodable() {
        let expanded = expandedSource(
            """
            @Entity final class Tag: Encodable {
                var name: String = ""
            }
            """
        )
        #expect(expanded.hasSuffix("\n\nextension Tag: CodableStoreCore.EntityObject, Decodable {}"))
    }

    @Test func internalClassGetsDecoderInitializerWithoutAccessModifier() {
        let expanded = expandedSource(
            """
            @Entity class Memo {
                var text: String = ""
            }
            """
        )
        #expect(
            expanded.contains(
                """

                    required convenience init(from decoder: any Decoder) throws {
                        throw _$EntityDecoding.unsupportedDecoder(Memo.self, decoder)
                    }

                """
            )
        )
    }
}
