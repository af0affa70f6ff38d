extension JSONTape {
    /// A tape's nodes: the nodes in use of a ``NodeStorage``, which tapes share (a tape is a value: copying it
    /// copies the reference). Reads are bounds-checked against the count, as an array's are.
    ///
    /// `@unchecked Sendable` (a `ManagedBuffer` is not `Sendable`): only a ``JSONTapeBuilder`` writes into a
    /// storage, nodes and count, and only while it holds the sole reference to it (checked with
    /// `isKnownUniquelyReferenced` before its first write after handing out a tape), so what a buffer can read
    /// never changes.
    ///
    /// Not generic, as ``ByteBuffer`` is not: copying and destroying a generic struct outside specialized code goes
    /// through its type metadata (callgrind: a generic buffer cost about 270 instructions a record on the decoding
    /// thread of an import).
    @usableFromInline
    struct NodeBuffer: RandomAccessCollection, @unchecked Sendable {
        /// nil for no nodes.
        @usableFromInline let storage: NodeStorage?

        @inlinable
        init() { storage = nil }

        init(_ storage: NodeStorage?) { self.storage = storage }

        @inlinable var startIndex: Int { 0 }
        @inlinable var endIndex: Int { count }
        @inlinable var count: Int { storage?.withUnsafeMutablePointerToHeader { $0.pointee.count } ?? 0 }

        /// The room of the storage: what a builder reuses for the next value (the count for a compacted tape).
        var capacity: Int { storage?.withUnsafeMutablePointerToHeader { $0.pointee.capacity } ?? 0 }

        @inlinable
        subscript(position: Int) -> Node {
            @inline(__always) get {
                storage!.withUnsafeMutablePointers { header, nodes in
                    let count = header.pointee.count
                    precondition(UInt(bitPattern: position) < UInt(bitPattern: count), "JSONTape: position out of range")
                    return nodes[position]
                }
            }
        }

        /// Calls `body` with the nodes in use.
        @inlinable @inline(__always)
        func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Node>) throws -> Result) rethrows -> Result {
            guard storage != nil else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
            return try storage!.withUnsafeMutablePointers { header, nodes in
                try body(UnsafeBufferPointer(start: nodes, count: header.pointee.count))
            }
        }

        /// A copy in a storage of exactly the nodes in use.
        func compacted() -> NodeBuffer {
            withUnsafeBufferPointer { source in
                guard let base = source.baseAddress, source.count > 0 else { return NodeBuffer() }
                let copy = NodeStorage.make(minimumCapacity: source.count)
                copy.withUnsafeMutablePointers { header, nodes in
                    nodes.initialize(from: base, count: source.count)
                    header.pointee.count = source.count
                }
                return NodeBuffer(copy)
            }
        }
    }

    /// A tape's bytes: the bytes in use of a ``ByteStorage``, shared as ``NodeBuffer`` shares its storage.
    struct ByteBuffer: @unchecked Sendable {
        /// nil for no bytes.
        let storage: ByteStorage?

        init() { storage = nil }

        init(_ storage: ByteStorage?) { self.storage = storage }

        var count: Int { storage?.withUnsafeMutablePointerToHeader { $0.pointee.count } ?? 0 }

        var isEmpty: Bool { count == 0 }

        /// The room of the storage (see ``NodeBuffer/capacity``).
        var capacity: Int { storage?.withUnsafeMutablePointerToHeader { $0.pointee.capacity } ?? 0 }

        /// Calls `body` with the bytes in use.
        @inline(__always)
        func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            guard storage != nil else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return try storage!.withUnsafeMutablePointers { header, bytes in
                try body(UnsafeRawBufferPointer(start: bytes, count: header.pointee.count))
            }
        }

        /// A copy in a storage of exactly the bytes in use.
        func compacted() -> ByteBuffer {
            withUnsafeBytes { source in
                guard let base = source.baseAddress, source.count > 0 else { return ByteBuffer() }
                let copy = ByteStorage.make(minimumCapacity: source.count)
                copy.withUnsafeMutablePointers { header, bytes in
                    UnsafeMutableRawPointer(bytes).copyMemory(from: base, byteCount: source.count)
                    header.pointee.count = source.count
                }
                return ByteBuffer(copy)
            }
        }
    }

    /// The header of a tape's storage, read and written through its address (`ManagedBuffer.header` is a stored
    /// property of a class, whose every access is checked for exclusivity at run time: `swift_beginAccess`, about
    /// 75 instructions).
    @usableFromInline
    struct StorageHeader {
        /// The number of elements the storage has room for, set when it is made (`ManagedBuffer.capacity` asks the
        /// allocator every time).
        @usableFromInline var capacity: Int
        /// The number of elements in use: what the tapes sharing the storage hold.
        @usableFromInline var count: Int
    }

    /// The memory of a ``NodeBuffer``: one allocation holding a ``StorageHeader`` and the nodes. Nodes past the
    /// count may be uninitialized; nothing reads them. Nodes are trivial: nothing to deinitialize.
    @usableFromInline
    final class NodeStorage: ManagedBuffer<StorageHeader, Node> {
        static func make(minimumCapacity: Int) -> NodeStorage {
            let made = create(minimumCapacity: minimumCapacity) { StorageHeader(capacity: $0.capacity, count: 0) }
            return unsafeDowncast(made, to: NodeStorage.self)
        }
    }

    /// The memory of a ``ByteBuffer``, as ``NodeStorage`` is of nodes.
    final class ByteStorage: ManagedBuffer<StorageHeader, UInt8> {
        static func make(minimumCapacity: Int) -> ByteStorage {
            let made = create(minimumCapacity: minimumCapacity) { StorageHeader(capacity: $0.capacity, count: 0) }
            return unsafeDowncast(made, to: ByteStorage.self)
        }
    }
}
