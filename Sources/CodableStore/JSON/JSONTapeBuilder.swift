/// Builds a ``JSONTape`` from reader events. Reused record after record: ``reset(baseOffset:)`` empties the tape
/// and keeps the buffers' capacity.
final class JSONTapeBuilder: JSONEventHandler {
    private struct OpenContainer {
        var position: Int
        var count: UInt32
        var isObject: Bool
        /// One bit per key hash modulo 64, to detect duplicate keys cheaply (first 64 members).
        var keyMask: UInt64
    }

    var tape = JSONTape()
    private var open: [OpenContainer] = []

    init() {}

    /// Empties the tape for the next value, whose source starts at `baseOffset`. Keeps the capacity, unless a copy
    /// of the tape is still alive somewhere (then the next value gets fresh buffers, as a value type must).
    func reset(baseOffset: Int) {
        tape.nodes.removeAll(keepingCapacity: true)
        tape.bytes.removeAll(keepingCapacity: true)
        tape.baseOffset = baseOffset
        open.removeAll(keepingCapacity: true)
    }

    /// Whether the value started is complete.
    var isComplete: Bool { open.isEmpty && !tape.nodes.isEmpty }

    // MARK: - Appending

    @inline(__always)
    private func relativeOffset(_ offset: Int) throws -> UInt32 {
        let relative = offset - tape.baseOffset
        guard relative >= 0, relative <= Int(UInt32.max), tape.nodes.count < Int(UInt32.max) else {
            throw JSONTape.LimitError()
        }
        return UInt32(truncatingIfNeeded: relative)
    }

    @inline(__always)
    private func countInParent() {
        let last = open.count - 1
        if last >= 0, !open[last].isObject { open[last].count &+= 1 }
    }

    @inline(__always)
    private func appendBytes(_ utf8: UnsafeRawBufferPointer) throws -> UInt32 {
        let start = tape.bytes.count
        guard start + utf8.count <= Int(UInt32.max) else { throw JSONTape.LimitError() }
        if utf8.count > 0 {
            tape.bytes.append(contentsOf: UnsafeBufferPointer(start: utf8.baseAddress!.assumingMemoryBound(to: UInt8.self), count: utf8.count))
        }
        return UInt32(truncatingIfNeeded: start)
    }

    @inline(__always)
    private func appendScalar(_ kind: JSONTape.NodeKind, _ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        let start = try appendBytes(utf8)
        countInParent()
        tape.nodes.append(
            JSONTape.Node(info: kind.rawValue, offset: relative, a: start, b: UInt32(truncatingIfNeeded: utf8.count))
        )
    }

    private func startContainer(isObject: Bool, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        open.append(OpenContainer(position: tape.nodes.count, count: 0, isObject: isObject, keyMask: 0))
        let kind: JSONTape.NodeKind = isObject ? .object : .array
        tape.nodes.append(JSONTape.Node(info: kind.rawValue, offset: relative, a: 0, b: 0))
    }

    private func endContainer() {
        let container = open.removeLast()
        tape.nodes[container.position].a = UInt32(truncatingIfNeeded: tape.nodes.count)
        tape.nodes[container.position].b = container.count
    }

    // MARK: - Events

    func startObject(at offset: Int) throws { try startContainer(isObject: true, at: offset) }

    func endObject(at offset: Int) throws { endContainer() }

    func startArray(at offset: Int) throws { try startContainer(isObject: false, at: offset) }

    func endArray(at offset: Int) throws { endContainer() }

    func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        let hash = JSONKey.hash(utf8)
        let last = open.count - 1
        var container = open[last]
        if container.count < 64 {
            let bit = UInt64(1) << UInt64(hash & 63)
            if container.keyMask & bit != 0,
                tape.lookup(utf8, hash: hash, in: container.position, upTo: tape.nodes.count)
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
        let start = try appendBytes(utf8)
        tape.nodes.append(
            JSONTape.Node(
                info: JSONTape.NodeKind.key.rawValue | hash << 8,
                offset: relative,
                a: start,
                b: UInt32(truncatingIfNeeded: utf8.count)
            )
        )
    }

    func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws { try appendScalar(.string, utf8, at: offset) }

    func number(_ text: UnsafeRawBufferPointer, at offset: Int) throws { try appendScalar(.number, text, at: offset) }

    func bool(_ value: Bool, at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        tape.nodes.append(JSONTape.Node(info: JSONTape.NodeKind.bool.rawValue, offset: relative, a: value ? 1 : 0, b: 0))
    }

    func null(at offset: Int) throws {
        let relative = try relativeOffset(offset)
        countInParent()
        tape.nodes.append(JSONTape.Node(info: JSONTape.NodeKind.null.rawValue, offset: relative, a: 0, b: 0))
    }
}

extension JSONTape {
    /// Whether the (open) object at `object` already has a key equal to `utf8` among its nodes before `limit`.
    fileprivate func lookup(_ utf8: UnsafeRawBufferPointer, hash: UInt32, in object: Int, upTo limit: Int) -> Bool {
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
