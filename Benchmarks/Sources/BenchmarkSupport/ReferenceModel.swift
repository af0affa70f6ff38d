import CodableStore
import IssuesModel
import Foundation

// The reference workload: its entities are the IssuesModel product (the model the CLI ships); here are the plain
// Decodable structs of the JSONDecoder baselines, which decode the same dumps (IssueDumpGenerator).

public struct PlainIssue: Decodable {
    public let id: Int
    public let number: Int
    public let title: String
    public let state: String
    public let created_at: Date
    public let updated_at: Date
    public let comments: Int
    public let score: Double
    public let body: String?
    public let user: PlainUser
    public let labels: [PlainLabel]
}

public struct PlainUser: Decodable {
    public let id: Int
    public let login: String
}

public struct PlainLabel: Decodable {
    public let id: Int
    public let name: String
}

/// The entities and decoder settings of the reference workload.
public let referenceEntities = ReferenceModel.entities
public func referenceDecoder() -> StoreDecoder { ReferenceModel.decoder() }
