#ifndef CODABLE_STORE_LIBPQ_LOADER_H
#define CODABLE_STORE_LIBPQ_LOADER_H

/// Loads PostgreSQL's client library (libpq) the first time a PostgreSQL store is opened, rather than when the
/// process starts: a program that only ever opens SQLite stores (most runs of the CLI) neither needs libpq
/// installed nor pays for it and its dependencies (OpenSSL, GnuTLS, Kerberos, LDAP: about 4 MiB of resident memory
/// and their start-up work).
///
/// Returns 1 once libpq is loaded (the libpq functions CodableStorePostgres calls then forward to it), or 0 with
/// `*error` set to a message that says which files were tried and why they failed. Thread-safe; the library is
/// loaded once and stays loaded.
int codable_store_load_libpq(const char **error);

#endif
