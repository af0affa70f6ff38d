import CodableStore
import CodableStoreModelFile
import Foundation
import IssuesModel
import Testing

/// Model files: what a file says, what it renders to, and where each mistake in one is reported.
@Suite struct ModelFileTests {
    /// The reference model, written by hand from IssuesModel.swift: the compiled model's file must say exactly this.
    static let issuesText = """
        version: 1
        entities:
          Issue:
            identity: [id]
            attributes:
              id: integer
              number: integer
              title: string
              state: string
              createdAt: {type: date, format: iso8601, key: created_at}
              updatedAt: {type: date, format: iso8601, key: updated_at}
              comments: integer
              score: double
              body: string?
            relationships:
              user: {to: User, inverse: issues}
              labels: {to: Label, many: true, inverse: issues}

          User:
            identity: [id]
            attributes:
              id: integer
              login: string?
            relationships:
              issues: {to: Issue, many: true, inverse: user}

          Label:
            identity: [id]
            attributes:
              id: integer
              name: string?
            relationships:
              issues: {to: Issue, many: true, inverse: labels}

        """

    @Test func theReferenceModelRendersAsWrittenAndReadsBack() throws {
        let file = try ModelFile(compiled: ReferenceModel.entities)
        #expect(file.rendered() == Self.issuesText)
        let parsed = try ModelFile.parse(Self.issuesText, file: "issues.yaml")
        #expect(parsed == file)
        let issue = try #require(parsed.entities.first)
        #expect(issue.attributes.first { $0.name == "createdAt" }?.key == ["created_at"])
        #expect(issue.attributes.first { $0.name == "body" }?.isOptional == true)
        #expect(issue.attributes.first { $0.name == "title" }?.isOptional == false)
        #expect(issue.relationships.map(\.destination) == ["User", "Label"])
        #expect(issue.relationships.map(\.isToMany) == [false, true])
    }

    /// Every option the format has, written by its short and long forms, parses to the values meant, and the
    /// rendered text of those values parses back to them.
    @Test func everyOptionReadsAndRoundTrips() throws {
        let text = """
            # Orders, with a composite identity and nested keys.
            version: 1
            entities:
              Order:
                identity: [region, number]
                keyDelimiter: "/"
                attributes:
                  region: string
                  number: integer
                  total: {type: decimal, key: amount/total}
                  currency: {type: string, key: amount/currency, default: EUR}
                  placedAt: {type: date, format: milliseconds, key: [placed.at]}   # a key with a dot in it
                  paid: {type: bool, default: false}
                  weight: {type: double, optional: true, default: 1.5}
                  reference: uuid?
                  site: url?
                  payload: json?
                  signature: data?
                  attempts: {type: integer, default: 3}
                  created: {type: date, format: seconds}
                relationships:
                  shop: {to: Shop, references: stub}
                  lines: {to: Line, many: true, ordered: true, inverse: order, deleteRule: cascade}
                  tags: [Tag]
                  customer: {to: Customer, references: deferred, key: buyer/customer}
                indexes:
                  - [placedAt]
                  - {fields: [reference], unique: true}
              Shop:
                identity: id
                attributes:
                  id: string
              Line:
                attributes:
                  sku: string
                relationships:
                  order: Order
              Tag:
                identity: [name]
                attributes:
                  name: string
              Customer:
                identity: [id]
                attributes:
                  id: integer
                relationships:
                  orders: {to: Order, many: true, inverse: customer, deleteRule: deny}
            """
        let file = try ModelFile.parse(text, file: "orders.yaml")
        let order = try #require(file.entities.first)
        #expect(order.identity == ["region", "number"])
        #expect(order.keyDelimiter == "/")
        func attribute(_ name: String) throws -> ModelFile.Attribute { try #require(order.attributes.first { $0.name == name }) }
        #expect(try attribute("total").type == .decimal)
        #expect(try attribute("total").key == ["amount", "total"])
        #expect(try attribute("currency").defaultValue == .string("EUR"))
        #expect(try attribute("placedAt").type == .date(.milliseconds))
        #expect(try attribute("placedAt").key == ["placed.at"])
        #expect(try attribute("paid").defaultValue == .bool(false))
        #expect(try attribute("weight").isOptional)
        #expect(try attribute("weight").defaultValue == .double(1.5))
        #expect(try attribute("reference").type == .uuid && attribute("reference").isOptional)
        #expect(try attribute("site").type == .url)
        #expect(try attribute("payload").type == .json)
        #expect(try attribute("signature").type == .data)
        #expect(try attribute("attempts").defaultValue == .integer(3))
        #expect(try attribute("created").type == .date(.seconds))
        let relationships = Dictionary(uniqueKeysWithValues: order.relationships.map { ($0.name, $0) })
        #expect(relationships["shop"]?.unknownReferences == .stub)
        #expect(relationships["shop"]?.isToMany == false)
        #expect(relationships["lines"]?.isOrdered == true)
        #expect(relationships["lines"]?.deleteRule == .cascade)
        #expect(relationships["lines"]?.inverse == "order")
        #expect(relationships["tags"]?.isToMany == true && relationships["tags"]?.isOrdered == false)
        #expect(relationships["customer"]?.key == ["buyer", "customer"])
        #expect(order.indexes == [ModelFile.Index(fields: ["placedAt"]), ModelFile.Index(fields: ["reference"], isUnique: true)])
        #expect(file.entities[1].identity == ["id"])

        let rendered = file.rendered(header: ["written again"])
        #expect(try ModelFile.parse(rendered) == file)
        #expect(rendered.hasPrefix("# written again\nversion: 1\n"))
        #expect(rendered.contains("keyDelimiter: \"/\""))
        // With "/" as the delimiter, a dot is part of a name: the key is written as one string again.
        #expect(rendered.contains("placedAt: {type: date, format: milliseconds, key: placed.at}"))
        #expect(rendered.contains("tags: [Tag]"))
        #expect(rendered.contains("reference: uuid?"))
    }

    /// Names and keys YAML would read as something else (a colon, a leading digit, `yes`, `null`, quotes) are quoted
    /// when written, and read back as the same text.
    @Test func namesThatNeedQuotingRoundTrip() throws {
        let file = ModelFile(entities: [
            ModelFile.Entity(
                name: "Event",
                identity: ["id"],
                attributes: [
                    ModelFile.Attribute(name: "id", type: .string),
                    ModelFile.Attribute(name: "kind", type: .string, key: ["type: \"quoted\""]),
                    ModelFile.Attribute(name: "flag", type: .string, key: ["yes"]),
                    ModelFile.Attribute(name: "n", type: .string, key: ["null", "2nd"]),
                    ModelFile.Attribute(name: "label", type: .string, defaultValue: .string("a # not a comment")),
                    ModelFile.Attribute(name: "café", type: .string, key: ["naïve key"], note: "seen in 3 of 4 records\nsecond line"),
                    ModelFile.Attribute(name: "dotted", type: .string, key: ["a.b"]),
                ],
                notes: ["From events.jsonl: 4 records."])
        ])
        let rendered = file.rendered()
        var expected = file
        expected.entities[0].notes = []
        expected.entities[0].attributes[5].note = nil
        #expect(try ModelFile.parse(rendered) == expected)
        #expect(rendered.contains("    # From events.jsonl: 4 records.\n"))
        #expect(rendered.contains("  # seen in 3 of 4 records second line\n"))
        // One component that holds the delimiter is written as a list, or it would read back as two.
        #expect(rendered.contains("      dotted: {type: string, key: [a.b]}\n"))
    }

    /// An entity with no field renders as an empty mapping and reads back as one.
    @Test func anEmptyEntityRoundTrips() throws {
        let file = ModelFile(entities: [ModelFile.Entity(name: "Marker"), ModelFile.Entity(name: "Other", attributes: [ModelFile.Attribute(name: "id", type: .integer)])])
        let rendered = file.rendered()
        #expect(rendered.contains("  Marker: {}\n"))
        #expect(try ModelFile.parse(rendered) == file)
    }

    // MARK: - Errors

    /// The error of a text: its description, as a person sees it.
    private func error(of text: String) -> ModelFileError? {
        do {
            _ = try ModelFile.parse(text, file: "model.yaml")
            return nil
        } catch {
            return error
        }
    }

    private func entity(_ body: String, others: String = "") -> String {
        "version: 1\nentities:\n  Issue:\n" + body.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
            + "\n" + others
    }

    @Test func anUnknownTypeNamesTheFileLineAndField() throws {
        let text = entity("identity: [id]\nattributes:\n  id: integer\n  title: strng")
        let failure = try #require(error(of: text))
        #expect(failure.file == "model.yaml")
        #expect(failure.line == 7)
        #expect(failure.column == 14)
        #expect(failure.field == "entities.Issue.attributes.title")
        #expect(
            failure.description
                == "model.yaml:7:14: entities.Issue.attributes.title: unknown type 'strng' (types: integer, double, bool, string, date, decimal, uuid, url, data, json)")
    }

    @Test func aMisspelledFieldIsRefusedWhereItIs() throws {
        let failure = try #require(error(of: entity("attributes:\n  body: {type: string, optinal: true}")))
        #expect(failure.line == 5)
        #expect(failure.field == "entities.Issue.attributes.body.optinal")
        #expect(failure.message == "unknown field 'optinal' (expected one of: type, optional, format, key, default)")
        let top = try #require(error(of: "version: 1\nentites:\n  A: {}\n"))
        #expect(top.line == 2 && top.column == 1)
        #expect(top.message == "unknown field 'entites' (expected one of: version, entities, migrations)")
    }

    /// `migrations:` reads, renders and reads back the same, and what a step names on the file's side must exist.
    @Test func migrationsRoundTripAndNameWhatTheFileDeclares() throws {
        let text = """
            version: 1
            entities:
              Issue:
                identity: [id]
                attributes:
                  id: integer
                  heading: string?

            migrations:
              - name: "tickets are issues"
                steps:
                  - renameEntity: {from: Ticket, to: Issue}
                  - sql: "DELETE FROM Issue WHERE id IS NULL"
                  - changeIdentity: {entity: Issue}
              - name: "heading instead of title"
                steps:
                  - renameAttribute: {entity: Issue, from: title, to: heading}

            """
        let model = try ModelFile.parse(text, file: "model.yaml")
        #expect(
            model.migrations == [
                ModelFile.Migration(
                    name: "tickets are issues",
                    steps: [.renameEntity(from: "Ticket", to: "Issue"), .sql("DELETE FROM Issue WHERE id IS NULL"), .changeIdentity(entity: "Issue")]),
                ModelFile.Migration(name: "heading instead of title", steps: [.renameAttribute(entity: "Issue", from: "title", to: "heading")]),
            ])
        #expect(model.rendered() == text)
        #expect(try ModelFile.parse(model.rendered()) == model)
        #expect(model.storeMigrations().map(\.name) == ["tickets are issues", "heading instead of title"])
        #expect(model.storeMigrations()[0].steps.map(\.description) == ["renameEntity(Ticket to Issue)", "sql(DELETE FROM Issue WHERE id IS NULL)", "changeIdentity(of: Issue)"])

        func failure(_ migrations: String) throws -> ModelFileError {
            try #require(error(of: "version: 1\nentities:\n  Issue:\n    attributes:\n      id: integer\nmigrations:\n" + migrations))
        }
        let noAttribute = try failure("  - name: m\n    steps:\n      - renameAttribute: {entity: Issue, from: title, to: heading}\n")
        #expect(noAttribute.description == "model.yaml:9:9: migrations.0.steps.0.renameAttribute.to: 'heading' is no attribute of Issue")
        let noEntity = try failure("  - name: m\n    steps:\n      - renameEntity: {from: Ticket, to: Bug}\n")
        #expect(noEntity.message == "'Bug' is no entity of this file (entities: Issue)")
        #expect(noEntity.line == 9)
        let twice = try failure("  - name: m\n    steps: []\n  - name: m\n    steps: []\n")
        #expect(twice.field == "migrations.1.name")
        #expect(twice.message == "two migrations are named 'm': a store records each by its name")
        let unnamed = try failure("  - steps: []\n")
        #expect(unnamed.message == "missing: a migration needs a name, which the store records")
        let unknown = try failure("  - name: m\n    steps:\n      - dropEntity: {name: Issue}\n")
        #expect(unknown.field == "migrations.0.steps.0.dropEntity")
        #expect(unknown.message == "unknown field 'dropEntity' (expected one of: renameEntity, renameAttribute, changeIdentity, sql)")
        let incomplete = try failure("  - name: m\n    steps:\n      - renameAttribute: {entity: Issue, to: id}\n")
        #expect(incomplete.message == "missing: renameAttribute needs entity, from, to")
    }

    @Test func anIdentityThatNamesNoAttribute() throws {
        let failure = try #require(error(of: entity("identity: [number]\nattributes:\n  id: integer")))
        #expect(failure.line == 4)
        #expect(failure.field == "entities.Issue.identity")
        #expect(failure.message == "the identity names number, which is no attribute of Issue")
        let toMany = try #require(
            error(of: entity("identity: [labels]\nattributes:\n  id: integer\nrelationships:\n  labels: [Issue]")))
        #expect(toMany.message == "the identity names labels, a relationship: only attributes identify (add the related id as an attribute, with its key)")
    }

    @Test func aRelationshipToNoEntity() throws {
        let failure = try #require(error(of: entity("attributes:\n  id: integer\nrelationships:\n  user: Usr")))
        #expect(failure.line == 7)
        #expect(failure.field == "entities.Issue.relationships.user")
        #expect(failure.message == "relationship to 'Usr', which is no entity of this file (entities: Issue)")
    }

    @Test func clashingKeysAreRefused() throws {
        let same = try #require(error(of: entity("attributes:\n  title: string\n  name: {type: string, key: title}")))
        #expect(same.line == 6)
        #expect(same.field == "entities.Issue.attributes.name")
        #expect(same.message == "the key clashes with attributes.title: both are read from the JSON key 'title'")
        let nested = try #require(
            error(of: entity("attributes:\n  user: string\n  login: {type: string, key: user.login}")))
        #expect(nested.message == "the key clashes with attributes.user: 'user' is read as a value, and 'user.login' inside it as an object")
        let relationship = try #require(
            error(of: entity("attributes:\n  user: string\nrelationships:\n  owner: {to: Issue, key: user}")))
        #expect(relationship.field == "entities.Issue.relationships.owner")
        // Siblings under one parent are fine.
        #expect(error(of: entity("attributes:\n  login: {type: string, key: user.login}\n  uid: {type: integer, key: user.id}")) == nil)
    }

    @Test func inversesMustPointBack() throws {
        let others = "  User:\n    attributes:\n      id: integer\n    relationships:\n      issues: [Issue]\n      starred: [Issue]\n"
        let wrongName = try #require(
            error(of: entity("attributes:\n  id: integer\nrelationships:\n  user: {to: User, inverse: isues}", others: others)))
        #expect(wrongName.field == "entities.Issue.relationships.user.inverse")
        #expect(wrongName.line == 7)
        #expect(wrongName.message == "User has no relationship 'isues' to be the inverse of Issue.user")
        let disagreeing = others.replacingOccurrences(of: "issues: [Issue]", with: "issues: {to: Issue, many: true, inverse: owner}")
        let failure = try #require(
            error(of: entity("attributes:\n  id: integer\nrelationships:\n  user: {to: User, inverse: issues}", others: disagreeing)))
        #expect(failure.message == "User.issues declares owner as its inverse, not user")
    }

    @Test func yamlMistakesSayWhere() throws {
        let syntax = try #require(error(of: "version: 1\nentities:\n  Issue:\n    attributes: {id: integer\n"))
        #expect(syntax.file == "model.yaml")
        #expect(syntax.line >= 4)
        #expect(syntax.message.hasPrefix("not valid YAML: "))
        let duplicate = try #require(error(of: entity("attributes:\n  id: integer\n  id: string")))
        #expect(duplicate.message == "a key appears twice in one mapping: id")
        #expect(try #require(error(of: "")).message == "the file is empty: expected 'version' and 'entities'")
        #expect(try #require(error(of: "entities:\n  A:\n    attributes:\n      id: integer\n")).message == "missing: the file must say 'version: 1'")
        let version = try #require(error(of: "version: 2\nentities:\n  A: {}\n"))
        #expect(version.line == 1 && version.column == 10)
        #expect(version.message == "version 2 is not one this library reads (it reads 1)")
    }

    @Test func optionsThatDoNotFitTheirField() throws {
        #expect(
            try #require(error(of: entity("attributes:\n  title: {type: string, format: seconds}"))).message
                == "'format' is for date attributes only, and this one is string")
        #expect(
            try #require(error(of: entity("attributes:\n  at: {type: date, format: nanos}"))).message
                == "unknown date format 'nanos' (expected one of: iso8601, seconds, milliseconds)")
        let badDefault = try #require(error(of: entity("attributes:\n  count: {type: integer, default: many}")))
        #expect(badDefault.field == "entities.Issue.attributes.count")
        #expect(badDefault.message == "the default 'many' is not a value of type integer")
        #expect(
            try #require(error(of: entity("relationships:\n  parent: {to: Issue, ordered: true}"))).message
                == "only a to-many relationship ('many: true') is ordered")
        #expect(
            try #require(error(of: entity("relationships:\n  parent: {to: Issue, deleteRule: destroy}"))).message
                == "unknown delete rule 'destroy' (expected one of: nullify, cascade, deny)")
        #expect(
            try #require(error(of: entity("attributes:\n  _pk: integer"))).message
                == "the field name _pk is reserved (names starting with '_' are the store's columns)")
        #expect(
            try #require(error(of: entity("attributes:\n  user: integer\nrelationships:\n  user: Issue"))).message
                == "user is declared twice (as attribute and as relationship)")
        #expect(
            try #require(error(of: entity("attributes:\n  id: integer\nindexes:\n  - [title]"))).message
                == "the index names title, which is no attribute or to-one relationship of Issue")
    }

    /// Plain scalars are typed as YAML's core schema types them (without Yams' regular expressions); quoted ones are
    /// strings.
    @Test func plainScalarsAreTypedAndQuotedOnesAreText() throws {
        let model = try ModelFile.parse(
            entity(
                """
                attributes:
                  a: {type: double, default: 1_500.25}
                  b: {type: double, default: -2e3}
                  c: {type: bool, default: yes}
                  d: {type: bool, default: Off}
                  e: {type: string, default: "true"}
                  f: {type: string, default: '12'}
                  g: {type: integer, default: +7}
                  h: {type: string, default: 0x1F}
                  i: {type: double, default: .inf}
                relationships:
                  parent: {to: Issue, many: True, ordered: NO}
                """), file: "model.yaml")
        let defaults = model.entities[0].attributes.map(\.defaultValue)
        #expect(
            defaults == [
                .double(1_500.25), .double(-2_000), .bool(true), .bool(false), .string("true"), .string("12"), .integer(7),
                .string("0x1F"), .double(.infinity),
            ])
        #expect(model.entities[0].relationships[0].isToMany)
        #expect(!model.entities[0].relationships[0].isOrdered)
        #expect(try ModelFile.parse("version: +1\nentities:\n  A: {}\n").entities.map(\.name) == ["A"])
        #expect(
            try #require(error(of: entity("attributes:\n  n: {type: integer, default: ~}"))).message
                == "a default cannot be null: leave it out, and make the attribute optional")
        #expect(try #require(error(of: entity("attributes:\n  n: null"))).message.contains("found nothing"))
    }

    /// A model built in code is checked by the same rules, without a file to point at.
    @Test func aModelBuiltInCodeIsValidatedToo() throws {
        let model = ModelFile(entities: [
            ModelFile.Entity(name: "sqlite_stat", attributes: [ModelFile.Attribute(name: "id", type: .integer)])
        ])
        #expect(throws: ModelFileError.self) { try model.validate() }
        do {
            try model.validate()
        } catch {
            #expect(error.description == "<model>: entities.sqlite_stat: the entity name sqlite_stat is reserved (names starting with '_' or 'sqlite_' are the store's)")
        }
    }

    /// Thousands of damaged model files (characters deleted, duplicated or replaced, lines swapped, from a seeded
    /// generator): each is read or refused with a ModelFileError that points inside the text, never a crash, and
    /// each one read renders to a text that reads back as the same model.
    @Test func damagedFilesAreReadOrRefusedNeverCrash() throws {
        let orders = try String(contentsOf: SwiftGenerationTests.fixtures.appendingPathComponent("models/orders.yaml"), encoding: .utf8)
        var generator = SplitMix(seed: 46)
        let alphabet = Array(" \n:{}[],#-?\"'!&*|>%@`abcxyz0129_./")
        var read = 0
        var refused = 0
        for source in [Self.issuesText, orders] {
            let base = Array(source)
            for _ in 0..<1_000 {
                var characters = base
                for _ in 0..<(1 + Int(generator.next() % 3)) {
                    let position = Int(generator.next() % UInt64(characters.count))
                    switch generator.next() % 4 {
                    case 0: characters.remove(at: position)
                    case 1: characters.insert(characters[position], at: position)
                    case 2: characters[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                    default:
                        var lines = String(characters).split(separator: "\n", omittingEmptySubsequences: false)
                        let a = Int(generator.next() % UInt64(lines.count))
                        let b = Int(generator.next() % UInt64(lines.count))
                        lines.swapAt(a, b)
                        characters = Array(lines.joined(separator: "\n"))
                    }
                    if characters.isEmpty { break }
                }
                let text = String(characters)
                let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
                do {
                    let model = try ModelFile.parse(text, file: "damaged.yaml")
                    read += 1
                    #expect(try ModelFile.parse(model.rendered()) == model)
                } catch {
                    refused += 1
                    #expect(error.file == "damaged.yaml")
                    #expect(error.line >= 1 && error.line <= lineCount + 1, "\(error)")
                    #expect(!error.message.isEmpty)
                }
            }
        }
        // Both outcomes happen: the damage is not all fatal, nor all harmless.
        #expect(read > 60)
        #expect(refused > 600)
    }
}

/// A small seeded generator (SplitMix64), so that a failure is the same on every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
