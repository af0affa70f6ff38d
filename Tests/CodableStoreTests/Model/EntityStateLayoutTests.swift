import CodableStore
import Testing

#if os(Linux)
/// glibc's size of the block `pointer` was allocated in, less its header (not in the Glibc module's headers).
@_silgen_name("malloc_usable_size") private func mallocUsableSize(_ pointer: UnsafeRawPointer) -> Int

/// Every object of every entity has an `EntityState`: its stored properties are ordered so that it fits a 144-byte
/// block of memory (see the comment above them in EntityState.swift). A property added in the wrong place, or a
/// wider one, moves it to the next block size for every object a context holds.
@Suite struct EntityStateLayoutTests {
    @Test func anEntityStateFitsA144ByteBlock() {
        let state = EntityState()
        let usable = withExtendedLifetime(state) { mallocUsableSize(Unmanaged.passUnretained(state).toOpaque()) }
        #expect(usable <= 136, "EntityState takes a larger block now (\(usable) usable bytes): see the layout comment in EntityState.swift")
    }
}
#endif
