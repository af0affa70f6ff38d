// `import CodableStore` gives the whole product: the core (entities, contexts, the decoder and encoder, queries,
// observation, the SQLite backend; with the JSON and SQLite layers it re-exports) and the streaming import on top of
// it. Each is a module of its own, so that an arrow from the core to the import does not compile (ARCHITECTURE.md).
@_exported import CodableStoreCore
@_exported import CodableStoreImport
