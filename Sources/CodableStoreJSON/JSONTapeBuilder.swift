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

    /// The tape built so far.
    var tape: JSONTape {
        get {
            state.pointee.trim()
            return state.pointee.tape
        }
        _modify {
            state.pointee.trim()
            defer { state.pointee.adoptTape() }
            yield &state.pointee.tape
        }
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

/// What a builder changes while it builds, written through pointers.
///
/// Every array write (`append`, a subscript set, `withUnsafeMutableBytes`) checks that the array's buffer is not
/// shared, a call into the runtime (`swift_isUniquelyReferenced_nonNull_native`) besides the bounds and capacity
/// checks: about 75 of them per reference record, which made keys cost 170 instructions each and values 120
/// (callgrind). So while a value is built, `tape.nodes` and `tape.bytes` are kept grown with zeroed room past what
/// is in use (``nodeCount``, ``byteCount``), their buffers made unique once, and nodes and bytes are written
/// through pointers to those buffers; ``trim()`` cuts the arrays to what is in use, and forgets the pointers,
/// before anyone else sees the tape. The open containers are in memory of the state's own, which nothing shares.
///
/// Invariants: `nodeLimit` (`byteLimit`) is 0, or the count of `tape.nodes` (`tape.bytes`), whose buffer is
/// uniquely referenced and starts at `nodeBase` (`byteBase`); nothing but this state changes the arrays while the
/// limit is not 0. `nodeCount <= tape.nodes.count` and `byteCount <= tape.bytes.count`.
struct JSONTapeBuilderState: ~Copyable {
    private struct OpenContainer {
        var position: Int
        var count: UInt32
        var isObject: Bool
        /// One bit per key hash modulo 64, to detect duplicate keys cheaply (first 64 members).
        var keyMask: UInt64
    }

    var tape = JSONTape()
    /// The nodes of `tape.nodes` in use; past them, zeroed room up to `nodeLimit`.
    private var nodeCount = 0
    private var nodeLimit = 0
    private var nodeBase: UnsafeMutablePointer<JSONTape.Node>?
    /// The bytes of `tape.bytes` in use; past them, zeroed room up to `byteLimit`.
    private var byteCount = 0
    private var byteLimit = 0
    private var byteBase: UnsafeMutableRawPointer?
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

    /// The arrays keep what they hold (the previous value): the first append of the next one grows them with zeroed
    /// room from there, and ``trim()`` cuts them to the new value. Emptying them first (`removeAll`) cost about 130
    /// instructions a record, and then more zeros to append (callgrind).
    mutating func reset(baseOffset: Int) {
        nodeCount = 0
        byteCount = 0
        forgetBuffers()
        tape.baseOffset = baseOffset
        openCount = 0
    }

    mutating func reserveCapacity(forInputSize inputSize: Int, borrowing input: UnsafeRawBufferPointer?) {
        // Nodes are estimated (reference dumps need one per 12 input bytes); the buffers still grow if a
        // denser document needs more.
        forgetBuffers()
        tape.nodes.reserveCapacity(inputSize / 12 + 16)
        if let input, let base = input.baseAddress, input.count <= Int(UInt32.max) {
            borrowed = (UnsafeRawPointer(base), input.count)
            tape.bytes.reserveCapacity(inputSize / 16)  // escaped strings only
        } else {
            tape.bytes.reserveCapacity(inputSize / 2)
        }
    }

    /// Cuts `tape.nodes` and `tape.bytes` to what is in use, before the tape is read or changed from outside.
    mutating func trim() {
        forgetBuffers()
        if tape.nodes.count > nodeCount { tape.nodes.removeLast(tape.nodes.count - nodeCount) }
        if tape.bytes.count > byteCount { tape.bytes.removeLast(tape.bytes.count - byteCount) }
    }

    /// After the tape was changed from outside (a record's tape swapped out and back in): what it holds is in use.
    mutating func adoptTape() {
        forgetBuffers()
        nodeCount = tape.nodes.count
        byteCount = tape.bytes.count
    }

    @inline(__always)
    private mutating func forgetBuffers() {
        nodeLimit = 0
        byteLimit = 0
    }

    @inline(__always)
    private func relativeOffset(_ offset: Int) throws -> UInt32 {
        let relative = offset &- tape.baseOffset
        guard relative >= 0, relative <= Int(UInt32.max), nodeCount < Int(UInt32.max) else {
            throw JSONTape.LimitError()
        }
        return UInt32(truncatingIfNeeded: relative)
    }

    // MARK: Nodes

    @inline(__always)
    private mutating func appendNode(_ node: JSONTape.Node) {
        if nodeCount >= nodeLimit { growNodes(toHold: nodeCount &+ 1) }
        nodeBase.unsafelyUnwrapped[nodeCount] = node
        nodeCount &+= 1
    }

    /// The node at `position` (in use), to change it in place.
    @inline(__always)
    private mutating func node(at position: Int) -> UnsafeMutablePointer<JSONTape.Node> {
        if nodeLimit == 0 { growNodes(toHold: nodeCount) }
        return nodeBase.unsafelyUnwrapped + position
    }

    /// Zeroed room for at least `count` nodes in all, and the buffer's address: as for bytes (``growBytes(toHold:)``),
    /// the capacity the array already has, up to 64 KiB of it at once, or else twice what is in use.
    @inline(never)
    private mutating func growNodes(toHold count: Int) {
        let target = Swift.max(count, nodeCount * 2, 16, Swift.min(tape.nodes.capacity, (1 << 16) / 16))
        while tape.nodes.count < target {
            tape.nodes.append(contentsOf: zeroNodes[..<Swift.min(zeroNodes.count, target - tape.nodes.count)])
        }
        // Appending made the buffer unique; when nothing needed appending, this does.
        nodeBase = tape.nodes.withUnsafeMutableBufferPointer { $0.baseAddress }
        nodeLimit = tape.nodes.count
    }

    @inline(__always)
    private mutating func countInParent() {
        let last = openCount &- 1
        if last >= 0, !open[last].isObject { open[last].count &+= 1 }
    }

    // MARK: Bytes

    /// Copies a scalar's bytes to the end of the tape's own. Most are keys and short strings: `Array.append(contentsOf:)`
    /// cost about 90 instructions a call around the copy (callgrind: 7% of an import's reading thread), so the
    /// array is grown with zeroed room (doubling) and the bytes are copied into it in place; up to 16 bytes without
    /// calling `memcpy`.
    @inline(__always)
    private mutating func appendBytes(_ utf8: UnsafeRawBufferPointer) throws -> UInt32 {
        let start = byteCount
        let count = utf8.count
        let end = start &+ count
        guard end <= Int(UInt32.max) else { throw JSONTape.LimitError() }
        guard count > 0, let source = utf8.baseAddress else { return UInt32(truncatingIfNeeded: start) }
        if end > byteLimit { growBytes(toHold: end) }
        let destination = byteBase.unsafelyUnwrapped + start
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
        byteCount = end
        return UInt32(truncatingIfNeeded: start)
    }

    /// Zeroed room for at least `count` bytes in all, and the buffer's address: the capacity the array already has
    /// (a record stream's buffer is reused record after record), up to 64 KiB of it at once, or else twice what is
    /// in use, so that appends stay amortized O(1) without zeroing a capacity reserved for a whole document at once.
    @inline(never)
    private mutating func growBytes(toHold count: Int) {
        let target = Swift.max(count, byteCount * 2, 64, Swift.min(tape.bytes.capacity, 1 << 16))
        while tape.bytes.count < target {
            tape.bytes.append(contentsOf: zeroBytes[..<Swift.min(zeroBytes.count, target - tape.bytes.count)])
        }
        // Appending made the buffer unique; when nothing needed appending, this does.
        byteBase = tape.bytes.withUnsafeMutableBytes { $0.baseAddress }
        byteLimit = tape.bytes.count
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
        let node = node(at: container.position)
        node.pointee.a = UInt32(truncatingIfNeeded: nodeCount)
        node.pointee.b = container.count
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
                node(at: container.pointee.position).pointee.info |= JSONTape.mayHaveDuplicateKeys
            }
            container.pointee.keyMask |= bit
        } else if count == 64 {
            // Too many members to check cheaply: lookups will search the whole object.
            node(at: container.pointee.position).pointee.info |= JSONTape.mayHaveDuplicateKeys
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

    /// Whether the open object at `object` already has a key equal to `utf8` (its members are all complete). Reads
    /// the arrays (what is in use is in them, room or not), which needs no unique buffer.
    @inline(never)
    private func hasKey(_ utf8: UnsafeRawBufferPointer, hash: UInt32, inOpenObjectAt object: Int) -> Bool {
        tape.nodes.withUnsafeBufferPointer { nodes in
            tape.bytes.withUnsafeBytes { owned in
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
}

/// Zeros to grow a tape's nodes with (appending a slice of an array is a `memcpy`; appending a repeated element
/// is a loop).
private let zeroNodes = [JSONTape.Node](repeating: JSONTape.Node(info: 0, offset: 0, a: 0, b: 0), count: 256)

/// Zeros to grow a tape's bytes with (appending a slice of an array is a `memcpy`; appending a repeated element
/// is a loop).
private let zeroBytes = [UInt8](repeating: 0, count: 4_096)
