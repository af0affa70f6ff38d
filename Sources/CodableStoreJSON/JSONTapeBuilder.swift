/// Builds a ``JSONTape`` from reader events. Reused record after record: ``reset(baseOffset:)`` empties the tape
/// and keeps the buffers' capacity.
final class JSONTapeBuilder: JSONEventHandler {
    /// The state lives behind a pointer: stored properties of a class are checked for exclusive access at run time
    /// (`swift_beginAccess`) on every mutation that calls out (an array append), which cost a quarter of the time
    /// of building tapes. Memory behind a pointer is not checked; this class is its only user.
    private let state: UnsafeMutablePointer<JSONTapeBuilderState>

    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: JSONTapeBuilderState())
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// The tape built so far. It shares the builder's buffers: the builder writes into them again only once no
    /// tape holds them (else the next value gets fresh buffers, as a value type must).
    var tape: JSONTape { state.pointee.makeTape() }

    /// The document the tape's scalars may point into (see `JSONTape.input`).
    var input: JSONTape.BorrowedBytes? {
        get { state.pointee.input }
        set { state.pointee.input = newValue }
    }

    /// Empties the tape for the next value, whose source starts at `baseOffset`. Keeps the capacity, unless a copy
    /// of the tape is still alive somewhere (then the next value gets fresh buffers, as a value type must).
    func reset(baseOffset: Int) { state.pointee.reset(baseOffset: baseOffset) }

    /// Reserves room for the tape of a whole document of `inputSize` bytes, so that a large document is not
    /// copied again and again as the buffers double (and the copies do not raise the peak memory). With
    /// `borrowing` (the document, which the tape's `input` keeps), scalars whose bytes are inside it are not
    /// copied, until ``endBorrowing()``.
    func reserveCapacity(forInputSize inputSize: Int, borrowing input: UnsafeRawBufferPointer?) {
        state.pointee.reserveCapacity(forInputSize: inputSize, borrowing: input)
    }

    func endBorrowing() { state.pointee.borrowed = nil }

    func startObject(at offset: Int) throws { try state.pointee.startContainer(isObject: true, at: offset) }
    func endObject(at offset: Int) throws { state.pointee.endContainer() }
    func startArray(at offset: Int) throws { try state.pointee.startContainer(isObject: false, at: offset) }
    func endArray(at offset: Int) throws { state.pointee.endContainer() }
    func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws { try state.pointee.key(utf8, at: offset) }
    func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        try state.pointee.appendScalar(.string, utf8, at: offset)
    }
    func number(_ text: UnsafeRawBufferPointer, at offset: Int) throws {
        try state.pointee.appendScalar(.number, text, at: offset)
    }
    func bool(_ value: Bool, at offset: Int) throws {
        try state.pointee.appendLiteral(.bool, value ? 1 : 0, at: offset)
    }
    func null(at offset: Int) throws { try state.pointee.appendLiteral(.null, 0, at: offset) }
}

/// What a builder changes while it builds.
///
/// The nodes and bytes are in storages of the builder's own (`JSONTape.NodeStorage`, `JSONTape.ByteStorage`),
/// which the tapes it hands out share. Array writes (`append`, a subscript set) each checked that the array's buffer
/// was not shared, a call into the runtime besides the bounds and capacity checks: about 75 of them per reference
/// record, which made keys cost 170 instructions each and values 120 (callgrind). Here the check is made once per
/// value: a write goes into the storage directly while ``nodeLimit`` (``byteLimit``) says there is room in a
/// storage nothing else holds; handing out a tape sets the limits to 0, so that the next write checks again (and
/// copies the storage if the tape is still alive). The open containers are in memory of the state's own, which
/// nothing shares.
///
/// Invariants: `nodeLimit` (`byteLimit`) is 0, or the capacity of `nodes` (`bytes`), which nothing but this state
/// references. `nodeCount` (`byteCount`) elements of it are in use; they and the room past them are written only
/// while the limit is not 0.
struct JSONTapeBuilderState: ~Copyable {
    private struct OpenContainer {
        var position: Int
        var count: UInt32
        var isObject: Bool
        /// One bit per key hash modulo 64, to detect duplicate keys cheaply (first 64 members).
        var keyMask: UInt64
    }

    private var nodes: JSONTape.NodeStorage?
    /// The nodes of `nodes` in use.
    private var nodeCount = 0
    private var nodeLimit = 0
    private var bytes: JSONTape.ByteStorage?
    /// The bytes of `bytes` in use.
    private var byteCount = 0
    private var byteLimit = 0
    /// The absolute source offset of the value (see `JSONTape.baseOffset`).
    private var baseOffset = 0
    /// The document the tape's scalars may point into (see `JSONTape.input`).
    var input: JSONTape.BorrowedBytes?
    /// The open containers, innermost last.
    private var open: UnsafeMutablePointer<OpenContainer>
    private var openCount = 0
    private var openCapacity = 16
    /// The document whose bytes scalars may point into instead of being copied (see `JSONTape.input`).
    var borrowed: (base: UnsafeRawPointer, count: Int)?

    init() {
        open = .allocate(capacity: openCapacity)
    }

    deinit {
        open.deallocate()
    }

    mutating func reset(baseOffset: Int) {
        nodeCount = 0
        byteCount = 0
        self.baseOffset = baseOffset
        openCount = 0
    }

    mutating func reserveCapacity(forInputSize inputSize: Int, borrowing input: UnsafeRawBufferPointer?) {
        // Nodes are estimated (reference dumps need one per 12 input bytes); the buffers still grow if a
        // denser document needs more.
        growNodes(toHold: inputSize / 12 + 16)
        if let input, let base = input.baseAddress, input.count <= Int(UInt32.max) {
            borrowed = (UnsafeRawPointer(base), input.count)
            growBytes(toHold: inputSize / 16)  // escaped strings only
        } else {
            growBytes(toHold: inputSize / 2)
        }
    }

    /// The tape of what is in use. It shares the storages, whose counts it sets: the next write checks that the
    /// tape is no longer alive.
    mutating func makeTape() -> JSONTape {
        // Storages nothing else holds, to set their counts in (a copy only when a tape handed out before is alive).
        if nodeLimit == 0 { growNodes(toHold: nodeCount) }
        if byteLimit == 0 { growBytes(toHold: byteCount) }
        let (nodeCount, byteCount) = (self.nodeCount, self.byteCount)
        nodes.unsafelyUnwrapped.withUnsafeMutablePointerToHeader { $0.pointee.count = nodeCount }
        bytes.unsafelyUnwrapped.withUnsafeMutablePointerToHeader { $0.pointee.count = byteCount }
        nodeLimit = 0
        byteLimit = 0
        return JSONTape(
            nodes: JSONTape.NodeBuffer(nodes), bytes: JSONTape.ByteBuffer(bytes), input: input, baseOffset: baseOffset)
    }

    @inline(__always)
    private func relativeOffset(_ offset: Int) throws -> UInt32 {
        let relative = offset &- baseOffset
        guard relative >= 0, relative <= Int(UInt32.max), nodeCount < Int(UInt32.max) else {
            throw JSONTape.LimitError()
        }
        return UInt32(truncatingIfNeeded: relative)
    }

    // MARK: Nodes

    @inline(__always)
    private mutating func appendNode(_ node: JSONTape.Node) {
        if nodeCount >= nodeLimit { growNodes(toHold: nodeCount &+ 1) }
        let position = nodeCount
        nodes.unsafelyUnwrapped.withUnsafeMutablePointerToElements { $0[position] = node }
        nodeCount &+= 1
    }

    /// Changes the node at `position` (in use) in place.
    @inline(__always)
    private mutating func modifyNode(at position: Int, _ body: (inout JSONTape.Node) -> Void) {
        if nodeLimit == 0 { growNodes(toHold: nodeCount) }
        nodes.unsafelyUnwrapped.withUnsafeMutablePointerToElements { body(&$0[position]) }
    }

    /// Room for at least `count` nodes in all, in a storage nothing else holds (see ``makeRoom(in:count:toHold:)``).
    @inline(never)
    private mutating func growNodes(toHold count: Int) {
        nodeLimit = Self.makeRoom(in: &nodes, count: nodeCount, toHold: count)
    }

    /// Makes `storage` one that nothing else holds, with room for `needed` elements, and returns its capacity: the
    /// same storage if it qualifies; else a new one with the first `count` elements of `storage`, and the room
    /// `storage` has (when a tape handed out still holds it: a record stream reuses that room for the next record),
    /// twice that if it is not enough, and at least 16 elements.
    private static func makeRoom<Element, Storage: ManagedBuffer<JSONTape.StorageHeader, Element>>(
        in storage: inout Storage?, count: Int, toHold needed: Int
    ) -> Int {
        let capacity = storage?.withUnsafeMutablePointerToHeader { $0.pointee.capacity } ?? 0
        if needed <= capacity, isKnownUniquelyReferenced(&storage) { return capacity }
        let room = Swift.max(needed, 16, needed <= capacity ? capacity : capacity * 2)
        let made = Storage.create(minimumCapacity: room) { JSONTape.StorageHeader(capacity: $0.capacity, count: 0) }
        let grown = unsafeDowncast(made, to: Storage.self)
        if let storage, count > 0 {
            storage.withUnsafeMutablePointerToElements { source in
                grown.withUnsafeMutablePointerToElements { $0.initialize(from: source, count: count) }
            }
        }
        storage = grown
        return grown.withUnsafeMutablePointerToHeader { $0.pointee.capacity }
    }

    @inline(__always)
    private mutating func countInParent() {
        let last = openCount &- 1
        if last >= 0, !open[last].isObject { open[last].count &+= 1 }
    }

    // MARK: Bytes

    /// Copies a scalar's bytes to the end of the tape's own. Most are keys and short strings: `Array.append(contentsOf:)`
    /// cost about 90 instructions a call around the copy (callgrind: 7% of an import's reading thread), so the
    /// bytes are copied into the storage in place; up to 16 bytes without calling `memcpy`.
    @inline(__always)
    private mutating func appendBytes(_ utf8: UnsafeRawBufferPointer) throws -> UInt32 {
        let start = byteCount
        let count = utf8.count
        let end = start &+ count
        guard end <= Int(UInt32.max) else { throw JSONTape.LimitError() }
        guard count > 0, let source = utf8.baseAddress else { return UInt32(truncatingIfNeeded: start) }
        if end > byteLimit { growBytes(toHold: end) }
        bytes.unsafelyUnwrapped.withUnsafeMutablePointerToElements { elements in
            Self.copy(source, count: count, to: UnsafeMutableRawPointer(elements + start))
        }
        byteCount = end
        return UInt32(truncatingIfNeeded: start)
    }

    @inline(__always)
    private static func copy(_ source: UnsafeRawPointer, count: Int, to destination: UnsafeMutableRawPointer) {
        if count > 16 {
            destination.copyMemory(from: source, byteCount: count)
        } else if count >= 8 {
            // Two overlapping words.
            destination.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
            destination.storeBytes(
                of: source.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self), toByteOffset: count &- 8,
                as: UInt64.self)
        } else if count >= 4 {
            destination.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
            destination.storeBytes(
                of: source.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self), toByteOffset: count &- 4,
                as: UInt32.self)
        } else {
            // The first, middle and last byte: all of 1 to 3.
            destination.storeBytes(of: source.load(as: UInt8.self), as: UInt8.self)
            destination.storeBytes(
                of: source.load(fromByteOffset: count &>> 1, as: UInt8.self), toByteOffset: count &>> 1,
                as: UInt8.self)
            destination.storeBytes(
                of: source.load(fromByteOffset: count &- 1, as: UInt8.self), toByteOffset: count &- 1,
                as: UInt8.self)
        }
    }

    /// Room for at least `count` bytes in all, in a storage nothing else holds (see ``growNodes(toHold:)``).
    @inline(never)
    private mutating func growBytes(toHold count: Int) {
        byteLimit = Self.makeRoom(in: &bytes, count: byteCount, toHold: count)
    }

    /// Where a scalar's bytes will be: in the borrowed document when they are inside it, else copied.
    @inline(__always)
    private func isInBorrowed(_ utf8: UnsafeRawBufferPointer) -> Bool {
        guard let borrowed, let pointer = utf8.baseAddress else { return false }
        return pointer >= borrowed.base && pointer + utf8.count <= borrowed.base + borrowed.count
    }

    @inline(__always)
    private mutating func place(_ utf8: UnsafeRawBufferPointer) throws -> (start: UInt32, flag: UInt32) {
        if let borrowed, isInBorrowed(utf8), let pointer = utf8.baseAddress {
            return (UInt32(truncatingIfNeeded: pointer - borrowed.base), JSONTape.bytesInInput)
        }
        return (try appendBytes(utf8), 0)
    }

    /// For a string yajl decoded into its own buffer (it had escapes): its raw text in the borrowed document,
    /// from just after the opening quote at `offset` to the closing quote, if the document has it there.
    @inline(__always)
    private func rawString(at offset: Int) -> (start: UInt32, count: UInt32)? {
        guard let borrowed, offset >= 0, offset < borrowed.count,
            borrowed.base.load(fromByteOffset: offset, as: UInt8.self) == UInt8(ascii: "\"")
        else { return nil }
        var position = offset + 1
        while position < borrowed.count {
            let byte = borrowed.base.load(fromByteOffset: position, as: UInt8.self)
            if byte == UInt8(ascii: "\"") {
                return (UInt32(truncatingIfNeeded: offset + 1), UInt32(truncatingIfNeeded: position - offset - 1))
            }
            position += byte == UInt8(ascii: "\\") ? 2 : 1
        }
        return nil
    }

    // MARK: Events

    mutating func appendScalar(_ kind: JSONTape.NodeKind, _ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        if kind == .string, borrowed != nil, !isInBorrowed(utf8), let raw = rawString(at: offset) {
            // Kept escaped in the document and decoded when read: no copy of the decoded text.
            countInParent()
            appendNode(
                JSONTape.Node(
                    info: kind.rawValue | JSONTape.bytesInInput | JSONTape.escapedInInput, offset: relative,
                    a: raw.start, b: raw.count))
            return
        }
        let (start, flag) = try place(utf8)
        countInParent()
        appendNode(
            JSONTape.Node(info: kind.rawValue | flag, offset: relative, a: start, b: UInt32(truncatingIfNeeded: utf8.count))
        )
    }

    mutating func appendLiteral(_ kind: JSONTape.NodeKind, _ value: UInt32, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        appendNode(JSONTape.Node(info: kind.rawValue, offset: relative, a: value, b: 0))
    }

    mutating func startContainer(isObject: Bool, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        if openCount == openCapacity { growOpen() }
        (open + openCount).initialize(
            to: OpenContainer(position: nodeCount, count: 0, isObject: isObject, keyMask: 0))
        openCount &+= 1
        let kind: JSONTape.NodeKind = isObject ? .object : .array
        appendNode(JSONTape.Node(info: kind.rawValue, offset: relative, a: 0, b: 0))
    }

    @inline(never)
    private mutating func growOpen() {
        let grown = UnsafeMutablePointer<OpenContainer>.allocate(capacity: openCapacity * 2)
        grown.moveInitialize(from: open, count: openCount)
        open.deallocate()
        open = grown
        openCapacity *= 2
    }

    mutating func endContainer() {
        precondition(openCount > 0, "JSONTapeBuilder: end of a container that was not started")
        openCount &-= 1
        let container = open[openCount]
        let end = UInt32(truncatingIfNeeded: nodeCount)
        modifyNode(at: container.position) { node in
            node.a = end
            node.b = container.count
        }
    }

    mutating func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        let hash = JSONKey.hash(utf8)
        precondition(openCount > 0, "JSONTapeBuilder: a key outside an object")
        let container = open + (openCount &- 1)
        let count = container.pointee.count
        if count < 64 {
            let bit = UInt64(1) << UInt64(hash & 63)
            if container.pointee.keyMask & bit != 0, hasKey(utf8, hash: hash, inOpenObjectAt: container.pointee.position) {
                modifyNode(at: container.pointee.position) { $0.info |= JSONTape.mayHaveDuplicateKeys }
            }
            container.pointee.keyMask |= bit
        } else if count == 64 {
            // Too many members to check cheaply: lookups will search the whole object.
            modifyNode(at: container.pointee.position) { $0.info |= JSONTape.mayHaveDuplicateKeys }
        }
        container.pointee.count = count &+ 1
        let (start, flag) = try place(utf8)
        appendNode(
            JSONTape.Node(
                info: JSONTape.NodeKind.key.rawValue | flag | hash << 8,
                offset: relative,
                a: start,
                b: UInt32(truncatingIfNeeded: utf8.count)
            )
        )
    }

    /// Whether the open object at `object` already has a key equal to `utf8` (its members are all complete).
    @inline(never)
    private func hasKey(_ utf8: UnsafeRawBufferPointer, hash: UInt32, inOpenObjectAt object: Int) -> Bool {
        guard let nodeStorage = nodes else { return false }
        return nodeStorage.withUnsafeMutablePointerToElements { nodes in
            withOwnedBytes { owned in
                var position = object + 1
                while position < nodeCount {
                    let node = nodes[position]
                    if node.keyHash == hash, Int(node.b) == utf8.count {
                        let bytes = node.info & JSONTape.bytesInInput != 0 ? borrowed?.base : owned.baseAddress
                        if utf8.isEmpty || Bytes.equal(bytes! + Int(node.a), utf8.baseAddress, count: utf8.count) {
                            return true
                        }
                    }
                    let value = nodes[position + 1]
                    switch value.kind {
                    case .object, .array: position = Int(value.a)
                    default: position += 2
                    }
                }
                return false
            }
        }
    }

    /// Calls `body` with the bytes in use.
    private func withOwnedBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        guard let bytes else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return bytes.withUnsafeMutablePointerToElements { body(UnsafeRawBufferPointer(start: $0, count: byteCount)) }
    }
}

