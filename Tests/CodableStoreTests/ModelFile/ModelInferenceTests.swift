import CodableStore
import CodableStoreJSON
import CodableStoreModelFile
import Foundation
import IssuesModel
import Testing

/// Inference on hand-written dumps in the shapes of real APIs (Fixtures/apis), checked against what a person would
/// write for each.
@Suite struct ModelInferenceTests {
    static func infer(
        _ name: String, mode: JSONRecordStream.Mode = .array, root: String, evidenceLimit: Int? = nil
    ) throws -> ModelFile {
        var options = ModelInference.Options(rootName: root)
        if let evidenceLimit { options.evidenceLimit = evidenceLimit }
        var inference = ModelInference(options: options)
        let path = SwiftGenerationTests.fixtures.appendingPathComponent(name).path
        try JSONRecordStream(mode: mode).read(contentsOfFile: path) { inference.add($0) }
        let model = inference.model()
        // Whatever it infers is a valid model file, and reads back as itself (comments aside).
        try model.validate()
        var withoutNotes = model
        for index in withoutNotes.entities.indices {
            withoutNotes.entities[index].notes = []
            for field in withoutNotes.entities[index].attributes.indices { withoutNotes.entities[index].attributes[field].note = nil }
            for field in withoutNotes.entities[index].relationships.indices {
                withoutNotes.entities[index].relationships[field].note = nil
            }
        }
        #expect(try ModelFile.parse(model.rendered()) == withoutNotes)
        return model
    }

    static func entity(_ model: ModelFile, _ name: String) throws -> ModelFile.Entity {
        try #require(model.entities.first { $0.name == name })
    }

    static func attribute(_ entity: ModelFile.Entity, _ name: String) throws -> ModelFile.Attribute {
        try #require(entity.attributes.first { $0.name == name })
    }

    static func relationship(_ entity: ModelFile.Entity, _ name: String) throws -> ModelFile.Relationship {
        try #require(entity.relationships.first { $0.name == name })
    }

    @Test func aGitHubIssuesPage() throws {
        let model = try Self.infer("apis/github-issues.json", root: "Issue")
        #expect(model.entities.map(\.name) == ["Issue", "User", "Label", "Milestone"])
        let issue = try Self.entity(model, "Issue")
        #expect(issue.identity == ["id"])
        #expect(try Self.attribute(issue, "createdAt").type == .date(.iso8601))
        #expect(try Self.attribute(issue, "createdAt").key == ["created_at"])
        #expect(try Self.attribute(issue, "closedAt").isOptional)
        #expect(try !Self.attribute(issue, "createdAt").isOptional)
        #expect(try Self.attribute(issue, "locked").type == .bool)
        #expect(try Self.attribute(issue, "body").isOptional)
        #expect(try Self.attribute(issue, "nodeId").key == ["node_id"])
        // An object without identity: key paths, optional when the object is missing.
        #expect(try Self.attribute(issue, "pullRequestUrl").key == ["pull_request", "url"])
        #expect(try Self.attribute(issue, "pullRequestUrl").isOptional)
        #expect(try Self.attribute(issue, "reactionsPlus1").key == ["reactions", "+1"])
        #expect(try Self.attribute(issue, "reactionsMinus1").type == .integer)
        // One User for the five places it is met at.
        #expect(try Self.relationship(issue, "user").destination == "User")
        #expect(try Self.relationship(issue, "assignee").destination == "User")
        #expect(try Self.relationship(issue, "assignees").isToMany)
        #expect(try Self.relationship(issue, "assignees").destination == "User")
        #expect(try Self.relationship(issue, "closedBy").key == ["closed_by"])
        #expect(try Self.relationship(issue, "labels").destination == "Label")
        #expect(try Self.relationship(issue, "milestone").destination == "Milestone")
        let user = try Self.entity(model, "User")
        #expect(user.identity == ["id"])
        #expect(user.notes.first == "met 11 times at user, assignee, assignees[], milestone.creator, closed_by")
        #expect(user.notes.last == "identity id: 3 distinct, 8 repeated")
        #expect(try Self.relationship(Self.entity(model, "Milestone"), "creator").destination == "User")
        #expect(try Self.attribute(Self.entity(model, "Label"), "description").isOptional)
        #expect(try Self.attribute(Self.entity(model, "Milestone"), "dueOn").type == .date(.iso8601))
        // Comments say what was seen.
        #expect(try Self.attribute(issue, "closedAt").note == "always present; null in 2; e.g. \"2011-05-01T10:00:00Z\"")
        #expect(try Self.attribute(issue, "pullRequestUrl").note == "in 1 of 3")
    }

    @Test func aStripeListOfCharges() throws {
        let model = try Self.infer("apis/stripe-charges.json", mode: .array(atPath: "data"), root: "Charge")
        #expect(model.entities.map(\.name) == ["Charge", "Customer"])
        let charge = try Self.entity(model, "Charge")
        #expect(charge.identity == ["id"])
        #expect(try Self.attribute(charge, "id").type == .string)
        #expect(try Self.attribute(charge, "created").type == .date(.seconds))
        #expect(try Self.attribute(charge, "amount").type == .integer)
        #expect(try Self.attribute(charge, "metadataOrderId").key == ["metadata", "order_id"])
        #expect(try Self.attribute(charge, "metadataOrderId").isOptional)
        // Past the flattening depth, an object is kept as JSON.
        #expect(try Self.attribute(charge, "billingDetailsAddress").type == .json)
        // Expanded in two charges, a bare id in the third: one relationship, and a Customer whose attributes can stay
        // empty (a bare id of a customer not stored makes a stub).
        #expect(try Self.relationship(charge, "customer").destination == "Customer")
        #expect(try Self.relationship(charge, "customer").note == "always present; e.g. \"cus_Q2\"; 1 bare id, 2 objects")
        let customer = try Self.entity(model, "Customer")
        #expect(customer.identity == ["id"])
        #expect(try !Self.attribute(customer, "id").isOptional)
        #expect(try Self.attribute(customer, "name").isOptional)
        #expect(customer.notes.last == "referred to by bare id too: its attributes but the identity are optional, for the stubs")
    }

    @Test func aJSONAPIDocument() throws {
        let model = try Self.infer("apis/jsonapi-articles.json", mode: .array(atPath: "data"), root: "Article")
        #expect(model.entities.map(\.name) == ["Article", "Author"])
        let article = try Self.entity(model, "Article")
        #expect(try Self.attribute(article, "attributesTitle").key == ["attributes", "title"])
        // Resource identifiers deeper than the flattening depth still become relationships, named without the wrapper.
        let author = try Self.relationship(article, "relationshipsAuthor")
        #expect(author.key == ["relationships", "author", "data"])
        #expect(author.destination == "Author")
        #expect(try Self.relationship(article, "relationshipsComments").isToMany)
    }

    @Test func aJSONLinesEventLogWithACompositeIdentity() throws {
        let model = try Self.infer("apis/events.jsonl", mode: .jsonLines, root: "Event")
        let event = try Self.entity(model, "Event")
        #expect(event.identity == ["stream", "seq"])
        #expect(event.notes == ["5 records", "identity stream + seq: 4 distinct, 1 repeated"])
        #expect(try Self.attribute(event, "at").type == .date(.milliseconds))
        #expect(try Self.attribute(event, "payloadTotal").type == .double)
        #expect(try Self.attribute(event, "payloadItems").type == .json)
        #expect(try Self.attribute(event, "payloadCart").isOptional)
    }

    @Test func idsThatAreNumbersInOnePlaceAndStringsInAnother() throws {
        let model = try Self.infer("apis/mixed-ids.json", root: "Task")
        let task = try Self.entity(model, "Task")
        #expect(task.identity == ["id"])
        #expect(try Self.attribute(task, "id").type == .string)
        #expect(try Self.attribute(task, "id").note == "always present; e.g. 1, 2; mixed: strings, numbers, an identity: read as text (a number as its digits)")
        // "10" and 10 are one owner.
        #expect(try Self.entity(model, "Owner").notes.last == "identity id: 2 distinct, 1 repeated")
    }

    /// The reference dump gives back the reference model: its entities, identities, fields, keys and types.
    @Test func theReferenceDumpGivesTheReferenceModel() throws {
        let inferred = try Self.infer("issues-1k.json", root: "Issue")
        let compiled = try ModelFile(compiled: ReferenceModel.entities)
        #expect(inferred.entities.map(\.name) == compiled.entities.map(\.name))
        for (found, expected) in zip(inferred.entities, compiled.entities) {
            #expect(found.identity == expected.identity)
            #expect(found.attributes.map(\.name) == expected.attributes.map(\.name))
            #expect(found.attributes.map(\.key) == expected.attributes.map(\.key))
            #expect(found.attributes.map(\.type) == expected.attributes.map(\.type))
            #expect(found.relationships.map(\.destination) == expected.relationships.filter { $0.inverse == nil || found.name == "Issue" }.map(\.destination))
        }
    }

    /// The identity evidence keeps at most `evidenceLimit` values per candidate, whatever the dump's size.
    @Test func evidenceIsBounded() throws {
        let model = try Self.infer("issues-1k.json", root: "Issue", evidenceLimit: 10)
        let issue = try Self.entity(model, "Issue")
        #expect(issue.identity == ["id"])
        #expect(issue.notes.last == "identity id: 10+ distinct (counting stopped at 10)")
    }

    @Test func theSameRecordsGiveTheSameFile() throws {
        let first = try Self.infer("apis/github-issues.json", root: "Issue").rendered()
        let second = try Self.infer("apis/github-issues.json", root: "Issue").rendered()
        #expect(first == second)
    }

    /// An array that mixes bare ids and objects of one entity is a to-many relationship to it.
    @Test func anArrayOfBareIDsAndObjects() throws {
        let json = #"[{"id": 1, "tags": [7, {"id": 8, "label": "b"}]}, {"id": 2, "tags": [{"id": 7, "label": "a"}]}]"#
        var inference = ModelInference(options: ModelInference.Options(rootName: "Post"))
        let stream = JSONRecordStream(mode: .array)
        try Array(json.utf8).withUnsafeBytes { bytes in try stream.feed(bytes) { inference.add($0) } }
        try stream.finish { inference.add($0) }
        let model = inference.model()
        let tags = try Self.relationship(Self.entity(model, "Post"), "tags")
        #expect(tags.destination == "Tag")
        #expect(tags.isToMany)
        #expect(tags.note == "always present; 1 bare id, 2 objects")
        #expect(try Self.attribute(Self.entity(model, "Tag"), "label").isOptional)
    }
}
