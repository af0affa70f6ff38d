/// The JSON layer's tape as the decoder's record view: the fast path, with no tree and no dictionaries.
struct JSONTapeView {
    let tape: JSONTape

    var root: JSONTape.Index { tape.root }

    func kind(_ node: JSONTape.Index) -> JSONKind {
        switch tape.kind(of: node) {
        case .object: .object
        case .array: .array
        case .string: .string
        case .number: .number
        case .bool: .bool
        case .null: .null
        }
    }

    func bool(_ node: JSONTape.Index) -> Bool { tape.bool(at: node) ?? false }
    func string(_ node: JSONTape.Index) -> String { tape.string(at: node) ?? "" }
    func numberText(_ node: JSONTape.Index) -> String { tape.number(at: node)?.description ?? "" }
    // Conversions read the number's bytes in the tape: no String is made.
    func int64(_ node: JSONTape.Index) -> Int64? { (try? tape.int64(at: node)) ?? nil }
    func uint64(_ node: JSONTape.Index) -> UInt64? { (try? tape.uint64(at: node)) ?? nil }
    /// The number as `T` when its value is an integer in `T`'s range; nil otherwise (never a rounded value).
    func integer<T: FixedWidthInteger>(_ node: JSONTape.Index, as type: T.Type) -> T? {
        (try? tape.integer(at: node, as: type)) ?? nil
    }
    func double(_ node: JSONTape.Index) -> Double? {
        guard let value = (try? tape.double(at: node)) ?? nil, value.isFinite else { return nil }
        return value
    }
    func elements(_ node: JSONTape.Index) -> [JSONTape.Index] { Array(tape.elements(of: node)) }
    func member(_ node: JSONTape.Index, key: String) -> JSONTape.Index? { tape.value(forKey: key, in: node) }
    func member(_ node: JSONTape.Index, key: JSONKey, hint: inout JSONTape.LookupHint) -> JSONTape.Index? {
        tape.value(forKey: key, in: node, hint: &hint)
    }
    func members(_ node: JSONTape.Index) -> [(key: String, value: JSONTape.Index)] {
        tape.members(of: node).map { (key: tape.string(at: $0.key) ?? "", value: $0.value) }
    }
    func byteOffset(_ node: JSONTape.Index) -> Int? { tape.byteOffset(of: node) }
}
