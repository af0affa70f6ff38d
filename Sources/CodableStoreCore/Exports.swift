// The layers below are modules of their own; what of them is API (SQLiteError, DatabaseValue, Connection for the
// statement log, JSONSyntaxError, JSONRecordStream…) is part of CodableStore's API too.
@_exported import CodableStoreJSON
@_exported import CodableStoreValues
@_exported import CodableStoreSQLite
