import CodableStore
import Foundation
import Testing

/// Entities described at run time (`RuntimeEntityBuilder`) and their objects (`RuntimeObject`): fields by name,
/// tracked changes, relationships, fetches with predicates built from names, snapshots, and what is refused.
@Suite struct RuntimeObjectTests {
    /// Authors and books: a to-one with its inverse to-many, an ordered to-many without inverse, a cascade.
    static func model() -> [EntityDescription] {
        var author = RuntimeEntityBuilder(name: "Author")
        author.attribute("id", .integer)
        author.attribute("name", .string)
        author.attribute("born", .date(.iso8601), optional: true)
        author.relationship("books", to: "Book", kind: .toManyUnordered, deleteRule: .cascade)
        var book = RuntimeEntityBuilder(name: "Book")
        book.attribute("isbn", .string, numbersAsText: true)
        book.attribute("title", .string, key: ["info", "title"])
        book.attribute("pages", .integer, default: .integer(100))
        book.attribute("price", .decimal, optional: true)
        book.attribute("extra", .json, optional: true)
        book.relationship("author", to: "Author")
        book.relationship("tags", to: "Tag", kind: .toManyOrdered)
        book.index(["title"])
        var tag = RuntimeEntityBuilder(name: "Tag")
        tag.attribute("name", .string)
        return [author.build(identity: ["id"]), book.build(identity: ["isbn"]), tag.build(identity: ["name"])]
    }

    static let json = """
        [{"id": 1, "name": "Ada", "born": "1815-12-10T00:00:00Z",
          "books": [{"isbn": 111, "info": {"title": "Notes"}, "price": 12.50, "tags": [{"name": "math"}, {"name": "early"}],
                     "extra": {"b": 1, "a": [true]}},
                    {"isbn": "222", "info": {"title": "Letters"}, "pages": 300, "tags": [{"name": "early"}]}]},
         {"id": 2, "name": "Alan", "books": [{"isbn": "333", "info": {"title": "Computing"}, "pages": 20}]}]
        """

    @Test(arguments: Backend.available)
    func decodedObjectsAreStoredAndReadByName(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: [], runtimeEntities: Self.model())
        try store.write { context in
            let authors = try StoreDecoder().decodeObjects(entity: "Author", from: Data(Self.json.utf8), into: context)
            #expect(authors.map(\.entity.name) == ["Author", "Author"])
            #expect(try authors[0].objects("books").count == 2)
        }
        #expect(
            try storedRows(store, #"SELECT isbn, title, pages, price, extra FROM "Book" ORDER BY isbn"#) == [
                ["111", "Notes", "100", "12.5", #"{"a":[true],"b":1}"#], ["222", "Letters", "300", "NULL", "NULL"],
                ["333", "Computing", "20", "NULL", "NULL"],
            ])
        try store.read { context in
            let books = try context.fetch(entity: "Book", where: .field("pages") >= 100, orderBy: [.descending("pages")])
            #expect(try books.map { try $0.value("isbn", as: String.self) } == ["222", "111"])
            let notes = try #require(try context.object(entity: "Book", identity: "111"))
            #expect(notes["title"] == .text("Notes"))
            #expect(notes["nope"] == nil)
            #expect(try notes.value("price", as: Decimal?.self) == Decimal(string: "12.5"))
            #expect(try notes.object("author")?.value("name", as: String.self) == "Ada")
            #expect(try notes.objects("tags").map { try $0.value("name", as: String.self) } == ["math", "early"])
            let ada = try #require(try context.object(entity: "Author", identity: 1))
            #expect(try ada.value("born", as: Date?.self) == Date(timeIntervalSince1970: -4_861_728_000))
            // Predicates through relationships, by name.
            let byAda = try context.fetch(entity: "Book", where: .field("author").matches(.field("name") == "Ada"), orderBy: [.ascending("isbn")])
            #expect(byAda.count == 2)
            let early = try context.fetch(entity: "Author", where: .field("books").any(.field("tags").any(.field("name") == "early")))
            #expect(try early.map { try $0.value("name", as: String.self) } == ["Ada"])
            #expect(try context.count(entity: "Book", where: .field("title").begins(with: "Co")) == 1)
            #expect(try context.count(entity: "Book", where: .field("isbn").isIn(["111", "333"])) == 2)
            #expect(try context.count(entity: "Book", where: .field("price").isNull) == 2)
            let sorted = try context.fetch(entity: "Book", orderBy: [.descending("author", "name"), .ascending("isbn")])
            #expect(try sorted.map { try $0.value("isbn", as: String.self) } == ["333", "111", "222"])
        }
    }

    @Test(arguments: Backend.available)
    func changesByNameAreTrackedAndSaved(_ backend: Backend) throws {
        let store = try backend.makeStore(entities: [], runtimeEntities: Self.model())
        let author = try store.entity(named: "Author")
        let book = try store.entity(named: "Book")
        try store.write { context in
            let grace = RuntimeObject(entity: author)
            grace["id"] = .integer(7)
            try grace.setValue("Grace", for: "name")
            let manual = RuntimeObject(entity: book)
            try manual.setValue("999", for: "isbn")
            try manual.setValue("Manual", for: "title")
            #expect(manual["pages"] == .integer(100))  // the default
            try manual.setObject(grace, for: "author")
            try context.insert(grace)
            try context.insert(manual)
            // The inverse follows.
            #expect(try grace.objects("books").map { $0 === manual } == [true])
        }
        #expect(try storedRows(store, #"SELECT a.name, b.title, b.pages FROM "Book" b JOIN "Author" a ON a._pk = b.author"#) == [["Grace", "Manual", "100"]])
        let snapshot = try store.write { context in
            let manual = try #require(try context.object(entity: "Book", identity: "999"))
            try manual.setValue(250, for: "pages")
            try manual.setValue(.text("Manual, 2nd ed."), for: "title")
            return manual.snapshot()
        }
        #expect(snapshot.entity == "Book")
        #expect(snapshot["pages"] == .integer(250))
        #expect(snapshot.rowID > 0)
        #expect(try storedRows(store, #"SELECT title, pages FROM "Book""#) == [["Manual, 2nd ed.", "250"]])
        // Deleting the author cascades to the book.
        try store.write { context in try context.delete(try #require(try context.object(entity: "Author", identity: 7))) }
        #expect(try storedRows(store, #"SELECT count(*) FROM "Book""#) == [["0"]])
    }

    @Test(arguments: Backend.available)
    func observationsAndSnapshotsByNameFollowCommits(_ backend: Backend) async throws {
        let store = try backend.makeStore(entities: [], runtimeEntities: Self.model())
        var changes = store.observe(entity: "Book", where: .field("pages") >= 100, orderBy: [.ascending("isbn")]).makeAsyncIterator()
        #expect(await changes.next()?.rows.isEmpty == true)
        try await store.write { context in _ = try StoreDecoder().decodeObjects(entity: "Author", from: Data(Self.json.utf8), into: context) }
        let change = try #require(await changes.next())
        #expect(change.rows.map { $0[field: "isbn"] } == [.text("111"), .text("222")])
        #expect(change.inserted == [0, 1])
        #expect(change.rows.first?[field: "nope"] == nil)
        let snapshots = try await store.read { context in try context.snapshots(entity: "Author", orderBy: [.descending("id")]) }
        #expect(snapshots.map { $0[field: "name"] } == [.text("Alan"), .text("Ada")])
        var failing = store.observeThrowing(entity: "Publisher").makeAsyncIterator()
        let error = await #expect(throws: StoreError.self) { _ = try await failing.next() }
        #expect(error?.code == .observationFailed)
    }

    /// The store keeps its observers, and an observer must not keep the store: the sequence ends with it.
    @Test func anObservationByNameEndsWhenTheStoreGoesAway() async throws {
        var store: Store? = try Store.inMemory(entities: [], runtimeEntities: Self.model())
        let observation = try #require(store).observe(entity: "Author")
        let task = Task {
            var count = 0
            for await _ in observation { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(20))
        store = nil
        #expect(await task.value == 1)
    }

    @Test func wrongNamesTypesAndEntitiesAreRefusedWithWhatIsWrong() throws {
        let store = try Store.inMemory(entities: [], runtimeEntities: Self.model())
        try store.write { context in
            let book = RuntimeObject(entity: try store.entity(named: "Book"))
            let wrongType = #expect(throws: StoreError.self) { try book.setValue("many", for: "pages") }
            #expect(wrongType?.code == .valueMismatch)
            #expect(wrongType?.message.contains("Book.pages") == true)
            let unknown = #expect(throws: StoreError.self) { try book.setValue(1, for: "chapters") }
            #expect(unknown?.code == .invalidQuery)
            #expect(unknown?.message == "Book has no field named chapters; its fields are isbn, title, pages, price, extra, author, tags")
            let relationship = #expect(throws: StoreError.self) { try book.objects("author") }
            #expect(relationship?.message == "Book.author is a to-one relationship")
            let author = RuntimeObject(entity: try store.entity(named: "Author"))
            let wrongDestination = #expect(throws: StoreError.self) { try author.setObjects([author], for: "books") }
            #expect(wrongDestination?.message == "Author.books holds Book objects, not Author")
            let missing = #expect(throws: StoreError.self) { try context.fetch(entity: "Publisher") }
            #expect(missing?.code == .unknownEntity)
            #expect(missing?.message == "Publisher is not an entity of this store; its entities are Author, Book, Tag")
            let badField = #expect(throws: StoreError.self) { try context.fetch(entity: "Book", where: .field("chapters") == 3) }
            #expect(badField?.code == .invalidQuery)
            // An object of another store's description of the same name.
            let stranger = RuntimeObject(entity: Self.model()[0])
            let foreign = #expect(throws: StoreError.self) { try context.insert(stranger) }
            #expect(foreign?.code == .unknownEntity)
        }
    }

    @Test func invalidRuntimeModelsAreRefusedWhenTheStoreOpens() throws {
        var book = RuntimeEntityBuilder(name: "Book")
        book.attribute("isbn", .string, optional: true)
        book.attribute("pages", .integer, default: .text("many"))
        book.relationship("author", to: "Writer", inverse: "works")
        let error = #expect(throws: StoreError.self) {
            try Store.inMemory(entities: [], runtimeEntities: [book.build(identity: ["isbn", "title"])])
        }
        #expect(error?.code == .invalidModel)
        let problems = error?.differences ?? []
        #expect(problems.contains("Book.isbn: an identity attribute cannot be optional"))
        #expect(problems.contains("Book: the identity names title, which is not one of its attributes"))
        #expect(problems.contains { $0.hasPrefix("Book.pages: its default value does not fit") })
        #expect(problems.contains("Book.author: its destination Writer is not an entity of the model (Book)"))
        let compiled = #expect(throws: StoreError.self) { try Store.inMemory(entities: [RuntimeObject.self]) }
        #expect(compiled?.message.contains("RuntimeObject is the class of every entity described at run time") == true)
        var writer = RuntimeEntityBuilder(name: "Writer")
        writer.attribute("id", .integer)
        var badInverse = RuntimeEntityBuilder(name: "Book")
        badInverse.attribute("isbn", .string)
        badInverse.relationship("author", to: "Writer", inverse: "works")
        let inverse = #expect(throws: StoreError.self) {
            try Store.inMemory(entities: [], runtimeEntities: [badInverse.build(identity: ["isbn"]), writer.build(identity: ["id"])])
        }
        #expect(inverse?.differences == ["Book.author: its declared inverse works is not a relationship of Writer"])
    }

    /// Migration steps that name entities and attributes (what a model file's `migrations:` become): a renamed entity
    /// and attribute keep their rows and values, a type change transforms them, and a step naming no entity fails
    /// the migration with nothing changed.
    @Test func migrationsByNameKeepTheRowsOfRenamedEntitiesAndAttributes() throws {
        let path = TestStore.temporaryPath()
        var ticket = RuntimeEntityBuilder(name: "Ticket")
        ticket.attribute("id", .integer)
        ticket.attribute("title", .string)
        ticket.attribute("score", .integer)
        try Store(path: path, entities: [], runtimeEntities: [ticket.build(identity: ["id"])]).write { context in
            _ = try StoreDecoder().decodeObjects(
                entity: "Ticket", from: Data(#"[{"id": 1, "title": "a", "score": 5}, {"id": 2, "title": "b", "score": 7}]"#.utf8),
                into: context)
        }
        var issue = RuntimeEntityBuilder(name: "Issue")
        issue.attribute("id", .integer)
        issue.attribute("heading", .string)
        issue.attribute("score", .string)
        let entities = [issue.build(identity: ["id"])]

        var wrong = Store.Options()
        wrong.migrations = [Migration("tickets are issues", [.renameEntity("Ticket", toEntityNamed: "Isue")])]
        let failure = try #require(throws: StoreError.self) { _ = try Store(path: path, entities: [], runtimeEntities: entities, options: wrong) }
        #expect(failure.code == .migrationFailed)
        #expect(failure.message.hasPrefix("migration 'tickets are issues', step 1 (renameEntity(Ticket to Isue)) failed: Isue is not an entity of this store"), "\(failure)")
        #expect(try RawDatabase(path).rows("SELECT id, title FROM Ticket ORDER BY id") == [["1", "a"], ["2", "b"]])

        var options = Store.Options()
        options.migrations = [
            Migration("tickets are issues", [.renameEntity("Ticket", toEntityNamed: "Issue")]),
            Migration(
                "heading, and score as text",
                [
                    .renameAttribute("title", to: "heading", ofEntityNamed: "Issue"),
                    .changeType(of: "score", ofEntityNamed: "Issue") { value in
                        guard case .integer(let number) = value else { return value }
                        return .text("\(number) points")
                    },
                ]),
        ]
        let store = try Store(path: path, entities: [], runtimeEntities: entities, options: options)
        #expect(try RawDatabase(path).rows("SELECT id, heading, score FROM Issue ORDER BY id") == [["1", "a", "5 points"], ["2", "b", "7 points"]])
        #expect(try store.appliedMigrations().map(\.steps) == [["renameEntity(Ticket to Issue)"], ["renameAttribute(title to Issue.heading)", "changeType(of: Issue.score)"]])
        #expect(try store.read { context in try context.object(entity: "Issue", identity: 2)?["heading"] } == .text("b"))
    }
}
