/// Runs the steps of write plans, in order. Each step is a statement of its own, run at once (a statement costs
/// microseconds in SQLite), unless the dialect has a ``StepGatherer``: a backend where every statement is a round trip
/// gathers consecutive steps into fewer statements.
///
/// Call ``finish()`` once the steps of a plan are given: steps may wait in the gatherer until then.
package final class StepWriter {
    private let storage: SQLStorage
    private let statements: (String) throws -> any DatabaseStatement
    /// The connection does not enforce foreign keys: deletes clear what refers to their rows themselves, one by one
    /// (outside the gatherer).
    private let clearsReferences: Bool
    /// Nil where each step runs at once.
    private let gatherer: (any StepGatherer)?

    package init(
        storage: SQLStorage, connection: any DatabaseConnection, clearsReferences: Bool = false,
        statements: @escaping (String) throws -> any DatabaseStatement
    ) {
        self.storage = storage
        self.clearsReferences = clearsReferences
        self.statements = statements
        gatherer = storage.dialect.makeStepGatherer(storage: storage, connection: connection, statements: statements)
    }

    /// Not inlined: inlined into the import's writer loop, the call of `SQLStorage.run` was specialized for the
    /// writer's closure at the cost of a retain and a release per step.
    @inline(never)
    package func run(_ step: WritePlan.Step) throws {
        guard let gatherer, !(clearsReferences && step.isDelete), try gatherer.gather(step) else {
            try finish()
            try storage.run(step, clearsReferences: clearsReferences, statements: statements)
            return
        }
    }

    /// Writes what was gathered.
    package func finish() throws {
        try gatherer?.finish()
    }
}

/// Gathers consecutive steps of write plans and writes them in fewer statements than one per step, in an order that
/// gives the same rows as running each step at once: what a backend whose statements are round trips supplies
/// (``SQLDialect/makeStepGatherer(storage:connection:statements:)``).
package protocol StepGatherer: AnyObject {
    /// Takes `step`, to be written with others before the next step that is not taken; false, with nothing written,
    /// for a step that must run alone (the writer then finishes what was gathered, and runs it).
    func gather(_ step: WritePlan.Step) throws -> Bool
    /// Writes what was gathered.
    func finish() throws
}

extension WritePlan.Step {
    var isDelete: Bool {
        if case .delete = self { true } else { false }
    }
}
