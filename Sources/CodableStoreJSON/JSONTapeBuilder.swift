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
            state.pointee.trimBytes()
            return state.pointee.tape
        }
        _modify {
            state.pointee.trimBytes()
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
        // Nodes are estimated (reference dumps need one per 12 input bytes); the buffers still grow if a
        // denser document needs more.
        state.pointee.tape.nodes.reserveCapacity(inputSize / 12 + 16)
        if let input, let base = input.baseAddress, input.count <= Int(UInt32.max) {
            state.pointee.borrowed = (UnsafeRawPointer(base), input.count)
            state.pointee.tape.bytes.reserveCapacity(inputSize / 16)  // escaped strings only
        } else {
            state.pointee.tape.bytes.reserveCapacity(inputSize / 2)
        }
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

struct JSONTapeBuilderState {
    private struct OpenContainer {
        var position: Int
        var count: UInt32
        var isObject: Bool
        /// One bit per key hash modulo 64, to detect duplicate keys cheaply (first 64 members).
        var keyMask: UInt64
    }

    var tape = JSONTape()
    /// The bytes of `tape.bytes` in use: past them, the array holds zeroed room that appends copy into in place
    /// (``appendBytes(_:)``), cut off by ``trimBytes()`` before anyone else sees the tape.
    private var byteCount = 0
    private var open: [OpenContainer] = []
    /// The document whose bytes scalars may point into instead of being copied (see `JSONTape.input`).
    var borrowed: (base: UnsafeRawPointer, count: Int)?

    mutating func reset(baseOffset: Int) {
        tape.nodes.removeAll(keepingCapacity: true)
        tape.bytes.removeAll(keepingCapacity: true)
        byteCount = 0
        tape.baseOffset = baseOffset
        open.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    private func relativeOffset(_ offset: Int) throws -> UInt32 {
        let relative = offset &- tape.baseOffset
        guard relative >= 0, relative <= Int(UInt32.max), tape.nodes.count < Int(UInt32.max) else {
            throw JSONTape.LimitError()
        }
        return UInt32(truncatingIfNeeded: relative)
    }

    @inline(__always)
    private mutating func countInParent() {
        let last = open.count &- 1
        if last >= 0, !open[last].isObject { open[last].count &+= 1 }
    }

    /// Copies a scalar's bytes to the end of the tape's own. Most are keys and short strings: `Array.append(contentsOf:)`
    /// cost about 90 instructions a call around the copy (callgrind: 7% of an import's reading thread), so the
    /// array is grown with zeroed room (doubling) and the bytes are copied into it in place.
    @inline(__always)
    private mutating func appendBytes(_ utf8: UnsafeRawBufferPointer) throws -> UInt32 {
        let start = byteCount
        let count = utf8.count
        let end = start &+ count
        guard end <= Int(UInt32.max) else { throw JSONTape.LimitError() }
        guard count > 0, let source = utf8.baseAddress else { return UInt32(truncatingIfNeeded: start) }
        if end > tape.bytes.count { growBytes(toHold: end) }
        tape.bytes.withUnsafeMutableBytes { bytes in
            let destination = bytes.baseAddress.unsafelyUnwrapped + start
            if count >= 8, count <= 16 {
                // Two overlapping words: no call for the common short keys and strings.
                destination.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
                destination.storeBytes(
                    of: source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self), toByteOffset: count - 8,
                    as: UInt64.self)
            } else {
                destination.copyMemory(from: source, byteCount: count)
            }
        }
        byteCount = end
        return UInt32(truncatingIfNeeded: start)
    }

    /// Zeroed room for at least `count` bytes in all: the capacity the array already has (a record stream's buffer
    /// is reused record after record), up to 64 KiB of it at once, or else twice what is in use, so that appends
    /// stay amortized O(1) without zeroing a capacity reserved for a whole document at once.
    @inline(never)
    private mutating func growBytes(toHold count: Int) {
        let target = Swift.max(count, byteCount * 2, 64, Swift.min(tape.bytes.capacity, 1 << 16))
        while tape.bytes.count < target {
            tape.bytes.append(contentsOf: zeroBytes[..<Swift.min(zeroBytes.count, target - tape.bytes.count)])
        }
    }

    /// Cuts `tape.bytes` to the bytes in use, before the tape is read from outside. (A tape swapped in from outside
    /// while a record is handed over holds no room: it is left alone.)
    @inline(__always)
    mutating func trimBytes() {
        if tape.bytes.count > byteCount { tape.bytes.removeLast(tape.bytes.count - byteCount) }
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

    mutating func appendScalar(_ kind: JSONTape.NodeKind, _ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        if kind == .string, borrowed != nil, !isInBorrowed(utf8), let raw = rawString(at: offset) {
            // Kept escaped in the document and decoded when read: no copy of the decoded text.
            countInParent()
            tape.nodes.append(
                JSONTape.Node(
                    info: kind.rawValue | JSONTape.bytesInInput | JSONTape.escapedInInput, offset: relative,
                    a: raw.start, b: raw.count))
            return
        }
        let (start, flag) = try place(utf8)
        countInParent()
        tape.nodes.append(
            JSONTape.Node(info: kind.rawValue | flag, offset: relative, a: start, b: UInt32(truncatingIfNeeded: utf8.count))
        )
    }

    mutating func appendLiteral(_ kind: JSONTape.NodeKind, _ value: UInt32, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        tape.nodes.append(JSONTape.Node(info: kind.rawValue, offset: relative, a: value, b: 0))
    }

    mutating func startContainer(isObject: Bool, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        open.append(OpenContainer(position: tape.nodes.count, count: 0, isObject: isObject, keyMask: 0))
        let kind: JSONTape.NodeKind = isObject ? .object : .array
        tape.nodes.append(JSONTape.Node(info: kind.rawValue, offset: relative, a: 0, b: 0))
    }

    mutating func endContainer() {
        let container = open.removeLast()
        tape.nodes[container.position].a = UInt32(truncatingIfNeeded: tape.nodes.count)
        tape.nodes[container.position].b = container.count
    }

    mutating func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        let hash = JSONKey.hash(utf8)
        let last = open.count &- 1
        var container = open[last]
        if container.count < 64 {
            let bit = UInt64(1) << UInt64(hash & 63)
            if container.keyMask & bit != 0,
                tape.hasKey(utf8, hash: hash, inOpenObjectAt: container.position, before: tape.nodes.count)
            {
                tape.nodes[container.position].info |= JSONTape.mayHaveDuplicateKeys
            }
            container.keyMask |= bit
        } else if container.count == 64 {
            // Too many members to check cheaply: lookups will search the whole object.
            tape.nodes[container.position].info |= JSONTape.mayHaveDuplicateKeys
        }
        container.count &+= 1
        open[last] = container
        let (start, flag) = try place(utf8)
        tape.nodes.append(
            JSONTape.Node(
                info: JSONTape.NodeKind.key.rawValue | flag | hash << 8,
                offset: relative,
                a: start,
                b: UInt32(truncatingIfNeeded: utf8.count)
            )
        )
    }
}

extension JSONTape {
    /// Whether the (open) object at `object` already has a key equal to `utf8` among its nodes before `limit`.
    fileprivate func hasKey(
        _ utf8: UnsafeRawBufferPointer,
        hash: UInt32,
        inOpenObjectAt object: Int,
        before limit: Int
    ) -> Bool {
        var position = object + 1
        while position < limit {
            let node = nodes[position]
            if node.keyHash == hash, Int(node.b) == utf8.count {
                let equal = withBytes(of: node) { $0.elementsEqual(utf8) }
                if equal { return true }
            }
            position = subtreeEnd(position + 1)
        }
        return false
    }
}

/// Zeros to grow a tape's bytes with (appending a slice of an array is a `memcpy`; appending a repeated element
/// is a loop).
private let zeroBytes = [UInt8](repeating: 0, count: 4_096)
