#ifndef CODABLE_STORE_LIBPQ_LOADER_H
#define CODABLE_STORE_LIBPQ_LOADER_H

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

/// Loads PostgreSQL's client library (libpq) the first time a PostgreSQL store is opened, rather than when the
/// process starts: a program that only ever opens SQLite stores (most runs of the CLI) neither needs libpq
/// installed nor pays for it and its dependencies (OpenSSL, GnuTLS, Kerberos, LDAP: about 5 MiB of resident memory
/// and their start-up work).
///
/// Returns 1 once libpq is loaded (the `codable_store_PQ…` functions below then call it), or 0 with `*error` set to
/// a message that says which files were tried and why they failed. Thread-safe; the library is loaded once and
/// stays loaded.
int codable_store_load_libpq(const char **error);

// The libpq functions the backend calls, each as `codable_store_` + its name, with libpq's parameters: they call the
// loaded libpq's function (after `codable_store_load_libpq` returned 1). Names of their own, not libpq's: a program
// that also uses libpq directly, or another library that does, keeps libpq's functions. A function the backend
// starts to call is added here.
// name, return type, parameters, arguments
#define CODABLE_STORE_LIBPQ_FUNCTIONS(X) \
    X(PQconnectdbParams, PGconn *, (const char *const *keywords, const char *const *values, int expand_dbname), (keywords, values, expand_dbname)) \
    X(PQstatus, ConnStatusType, (const PGconn *conn), (conn)) \
    X(PQerrorMessage, char *, (const PGconn *conn), (conn)) \
    X(PQsocket, int, (const PGconn *conn), (conn)) \
    X(PQsetNoticeReceiver, PQnoticeReceiver, (PGconn *conn, PQnoticeReceiver proc, void *arg), (conn, proc, arg)) \
    X(PQexecParams, PGresult *, (PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat), (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat)) \
    X(PQresultStatus, ExecStatusType, (const PGresult *res), (res)) \
    X(PQresultErrorMessage, char *, (const PGresult *res), (res)) \
    X(PQresultErrorField, char *, (const PGresult *res, int fieldcode), (res, fieldcode)) \
    X(PQntuples, int, (const PGresult *res), (res)) \
    X(PQnfields, int, (const PGresult *res), (res)) \
    X(PQftype, Oid, (const PGresult *res, int field_num), (res, field_num)) \
    X(PQgetvalue, char *, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(PQgetlength, int, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(PQgetisnull, int, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(PQconsumeInput, int, (PGconn *conn), (conn)) \
    X(PQisBusy, int, (PGconn *conn), (conn)) \
    X(PQnotifies, PGnotify *, (PGconn *conn), (conn)) \
    X(PQputCopyData, int, (PGconn *conn, const char *buffer, int nbytes), (conn, buffer, nbytes)) \
    X(PQputCopyEnd, int, (PGconn *conn, const char *errormsg), (conn, errormsg)) \
    X(PQgetResult, PGresult *, (PGconn *conn), (conn))

#define CODABLE_STORE_LIBPQ_VOID_FUNCTIONS(X) \
    X(PQfinish, (PGconn *conn), (conn)) \
    X(PQclear, (PGresult *res), (res)) \
    X(PQfreemem, (void *ptr), (ptr))

#define CODABLE_STORE_LIBPQ_DECLARE(name, type, parameters, arguments) type codable_store_##name parameters;
#define CODABLE_STORE_LIBPQ_DECLARE_VOID(name, parameters, arguments) void codable_store_##name parameters;
CODABLE_STORE_LIBPQ_FUNCTIONS(CODABLE_STORE_LIBPQ_DECLARE)
CODABLE_STORE_LIBPQ_VOID_FUNCTIONS(CODABLE_STORE_LIBPQ_DECLARE_VOID)

#endif
