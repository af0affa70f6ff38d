// A program built on the core alone (`CodableStoreCore`, no import pipeline linked): it declares two entities,
// decodes a JSON page into a new store by identity, decodes it again with one change, and prints what the store
// holds. `CoreOnlyTests` runs it and checks its output, its store and that the binary has no symbol of
// `CodableStoreImport`: the core works without the layer above it.
import CodableStoreCore
import Foundation

@Entity final class Author {
    var id: Int
    var name: String?
    var notes: Set<Note> = []
    static let identity = Identity(\Author.id)
    init(id: Int) { self.id = id }
}

@Entity final class Note {
    var id: Int
    var text: String
    var author: Author?
    static let identity = Identity(\Note.id)
    init(id: Int, text: String) {
        self.id = id
        self.text = text
    }
}

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: core-only-store STORE.sqlite\n".utf8))
    exit(2)
}
do {
    let store = try Store(path: CommandLine.arguments[1], entities: [Note.self, Author.self])
    let page = #"[{"id": 1, "text": "one", "author": {"id": 7, "name": "Ada"}}, {"id": 2, "text": "two", "author": 7}]"#
    let again = #"[{"id": 2, "text": "two, edited", "author": {"id": 8, "name": "Grace"}}]"#
    let decoder = StoreDecoder()
    for json in [page, again] {
        let counts = try store.write { context in
            try decoder.decodeAndSave([Note].self, from: Data(json.utf8), into: context).entities
        }
        print(counts.keys.sorted().map { "\($0): \(counts[$0]!.inserted) inserted, \(counts[$0]!.updated) updated" }.joined(separator: "; "))
    }
    let lines = try store.read { context in
        try context.fetch(Note.self, orderBy: [.ascending(\.id)]).map { "\($0.id) \($0.text) by \($0.author?.name ?? "nobody")" }
    }
    for line in lines { print(line) }
} catch {
    FileHandle.standardError.write(Data("core-only-store: \(error)\n".utf8))
    exit(1)
}
