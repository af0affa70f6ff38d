/// References kept by the ``StoreDecoder/UnknownReferencePolicy/deferred`` policy whose object never arrived, where
/// they had to: a decode with ``StoreDecoder/failsOnUnresolvedReferences``, ``Context/requireResolvedReferences()``,
/// or an import with `ImportOptions/failsOnUnresolvedReferences` (its `ImportError/underlyingError`).
///
/// ```swift
/// do {
///     try store.write { context in
///         _ = try decoder.decode([Comment].self, from: comments, into: context)
///         _ = try decoder.decode([Issue].self, from: issues, into: context)
///         try context.requireResolvedReferences()
///     }
/// } catch let error as UnresolvedReferencesError {
///     for reference in error.references { print(reference) }   // Comment id = 7: issue → Issue id = 99 never arrived
/// }
/// ```
///
/// It is neither a `DecodingError` (no value of the JSON is wrong, and the coding path of the reference is long gone
/// when the payload ends without its object) nor a ``StoreError`` (the store is fine: the input is incomplete, and
/// `ImportError/isStoreFailure` says so). `description` is one line naming the first three references.
public struct UnresolvedReferencesError: Error, Sendable, CustomStringConvertible {
    /// How many references never arrived (all of them, also when ``references`` lists fewer).
    public let count: Int
    /// How many, per destination entity.
    public let counts: [String: Int]
    /// The references, in the order of ``Context/listUnresolvedReferences(limit:)``: all of them, but for an
    /// import, which lists the first `ImportOptions/unresolvedReferenceListLimit`.
    public let references: [UnresolvedReference]

    package init(count: Int, counts: [String: Int], references: [UnresolvedReference]) {
        self.count = count
        self.counts = counts
        self.references = references
    }

    /// The error for `references`, all of them listed.
    init(listing references: [UnresolvedReference]) {
        var counts: [String: Int] = [:]
        for reference in references { counts[reference.destinationEntity, default: 0] += 1 }
        self.init(count: references.count, counts: counts, references: references)
    }

    /// References shown in ``description``.
    static let describedReferences = 3

    /// `2 unresolved references: Comment id = 7: issue → Issue id = 99 never arrived; Comment id = 8: …`, with at
    /// most three references and how many more there are.
    public var description: String {
        let shown = references.prefix(Self.describedReferences)
        var text = "\(count) unresolved reference\(count == 1 ? "" : "s")"
        if !shown.isEmpty { text += ": " + shown.map(\.description).joined(separator: "; ") }
        if count > shown.count { text += "; and \(count - shown.count) more" }
        return text
    }

    /// A multi-line rendering: the counts per destination entity, then every listed reference.
    ///
    /// ```
    /// UnresolvedReferencesError: 2 references never arrived
    /// ├─ To Issue: 2
    /// ├─ Comment id = 7: issue → Issue id = 99 never arrived
    /// └─ Comment id = 8: issue → Issue id = 99 never arrived
    /// ```
    public func detailedDescription() -> String {
        var lines = ["UnresolvedReferencesError: \(count) reference\(count == 1 ? "" : "s") never arrived"]
        for (entity, count) in counts.sorted(by: { $0.key < $1.key }) { lines.append("├─ To \(entity): \(count)") }
        for reference in references { lines.append("├─ \(reference)") }
        if count > references.count { lines.append("├─ and \(count - references.count) more, not listed") }
        if lines.count > 1 { lines[lines.count - 1] = "└" + lines[lines.count - 1].dropFirst() }
        return lines.joined(separator: "\n")
    }
}
