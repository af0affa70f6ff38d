import CodableStore
import Foundation
import Testing

@Entity final class Playlist {
    var id: Int
    var songs: Set<Song> = []
    static let identity = Identity(\Playlist.id)
    static let deleteRules: [DeleteRule<Playlist>] = [.cascade(\.songs)]
    init(id: Int) { self.id = id }
}

@Entity final class Song {
    var id: Int
    var playlists: Set<Playlist> = []
    static let identity = Identity(\Song.id)
    init(id: Int) { self.id = id }
}

/// Deleting objects whose join-table links are not saved yet: the links must not be written (their foreign keys
/// would fail the commit, and the whole write with it).
@Suite struct DeleteUnsavedLinksTests {
    @Test func aCascadeOverUnsavedObjectsOfAJoinTable() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Playlist.self, Song.self])
        try store.write { context in
            try context.insert(Playlist(id: 7))
            let list = Playlist(id: 1)
            try context.insert(list)
            list.songs = [Song(id: 1), Song(id: 2)]
            try context.delete(list)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT id FROM Playlist") == [["7"]])
        #expect(try raw.rows("SELECT count(*) FROM Song") == [["0"]])
        #expect(try raw.rows("SELECT count(*) FROM Playlist_songs") == [["0"]])
    }

    @Test func anInsertedObjectDeletedWithItsMembers() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            let person = Person(id: 1, name: "temp")
            try context.insert(person)
            person.tags = [Tag(id: 1, label: "t")]
            try context.delete(person)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT count(*) FROM Person") == [["0"]])
        #expect(try raw.rows("SELECT label FROM Tag") == [["t"]])  // the member stays, without the link
    }

    @Test func aStoredObjectLinkedThenDeleted() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: [Playlist.self, Song.self])
        try store.write { context in
            let song = Song(id: 1)
            try context.insert(song)
            song.playlists = [Playlist(id: 1)]
        }
        try store.write { context in
            let song = try #require(try context.object(Song.self, identity: 1))
            song.playlists.insert(Playlist(id: 9))
            try context.delete(song)
        }
        let raw = try RawDatabase(path)
        #expect(try raw.rows("SELECT count(*) FROM Song") == [["0"]])
        #expect(try raw.rows("SELECT id FROM Playlist ORDER BY id") == [["1"], ["9"]])
        #expect(try raw.rows("SELECT count(*) FROM Playlist_songs") == [["0"]])
    }

    @Test func rollbackInsideASavepointIsAClearError() throws {
        let path = TestStore.temporaryPath()
        let store = try Store(path: path, entities: TestStore.entities)
        try store.write { context in
            try context.insert(Person(id: 1, name: "kept"))
            let error = try #require(throws: StoreError.self) {
                try context.inSavepoint {
                    try context.insert(Person(id: 2, name: "discarded"))
                    try context.rollback()
                }
            }
            #expect(error.message.hasPrefix("rollback() cannot run inside inSavepoint"))
            try context.insert(Person(id: 3, name: "after"))
        }
        #expect(try RawDatabase(path).rows("SELECT id FROM Person ORDER BY id") == [["1"], ["3"]])
    }
}
