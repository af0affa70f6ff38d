/// Receives the events of a ``JSONReader``, in document order.
///
/// Every event carries the absolute byte offset where its token starts (the `{`, the opening quote of a string or
/// key, the first character of a number or literal). The buffers are only valid during the call: copy what you keep.
/// Strings and keys are decoded (escapes resolved, valid UTF-8, `\u0000` included as U+0000); numbers are their exact
/// source text (see ``JSONNumber`` for conversions). Duplicate keys are delivered as they come.
///
/// A handler may throw to stop parsing: ``JSONReader/parse(_:)`` rethrows the error unchanged. To report a problem
/// with a location, throw ``JSONReader/syntaxError(_:at:)``.
public protocol JSONEventHandler: AnyObject {
    func startObject(at offset: Int) throws
    func key(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws
    func endObject(at offset: Int) throws
    func startArray(at offset: Int) throws
    func endArray(at offset: Int) throws
    func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws
    func number(_ text: UnsafeRawBufferPointer, at offset: Int) throws
    func bool(_ value: Bool, at offset: Int) throws
    func null(at offset: Int) throws
}
