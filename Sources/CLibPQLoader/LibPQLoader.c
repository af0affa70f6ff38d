// The libpq functions CodableStorePostgres calls, defined here as forwarders to the libpq that
// `codable_store_load_libpq` opens with dlopen, so that nothing links libpq when the program starts.
//
// The forwarders are hidden: they resolve the Swift module's calls inside the program, and are not exported, so
// that libpq's calls to its own functions still reach libpq's definitions. A function CodableStorePostgres
// starts to call must be added to FORWARDED below (the link fails until it is).

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC visibility push(hidden)
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
#include "CLibPQLoader.h"

// name, return type, parameters, arguments
#define FORWARDED(X) \
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
    X(PQnotifies, PGnotify *, (PGconn *conn), (conn))

#define FORWARDED_VOID(X) \
    X(PQfinish, (PGconn *conn), (conn)) \
    X(PQclear, (PGresult *res), (res)) \
    X(PQfreemem, (void *ptr), (ptr))

#define POINTER(name, type, parameters, arguments) static type(*loaded_##name) parameters;
#define POINTER_VOID(name, parameters, arguments) static void(*loaded_##name) parameters;
FORWARDED(POINTER)
FORWARDED_VOID(POINTER_VOID)

#define FORWARDER(name, type, parameters, arguments) \
    type name parameters { return loaded_##name arguments; }
#define FORWARDER_VOID(name, parameters, arguments) \
    void name parameters { loaded_##name arguments; }
FORWARDED(FORWARDER)
FORWARDED_VOID(FORWARDER_VOID)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure = NULL;
static char message[2048];

/// Resolves every forwarded function in `library`, or says which one it lacks.
static int resolve(void *library, const char *file) {
#define RESOLVE(name, ...)                                                                                          \
    *(void **)(&loaded_##name) = dlsym(library, #name);                                                             \
    if (!loaded_##name) {                                                                                           \
        snprintf(message, sizeof message, "%s has no function %s (libpq 10 or later is needed)", file, #name);     \
        return 0;                                                                                                   \
    }
    FORWARDED(RESOLVE)
    FORWARDED_VOID(RESOLVE)
#undef RESOLVE
    return 1;
}

static void load(void) {
    // CODABLE_STORE_LIBPQ names the file; otherwise the dynamic loader's search finds the installed library
    // (Debian's and Ubuntu's libpq5, a Homebrew libpq).
    const char *chosen = getenv("CODABLE_STORE_LIBPQ");
    const char *candidates[] = {
        chosen && *chosen ? chosen : "libpq.so.5",
        "libpq.so",
        "libpq.5.dylib",
        "/opt/homebrew/opt/libpq/lib/libpq.5.dylib",
        "/usr/local/opt/libpq/lib/libpq.5.dylib",
    };
    size_t count = chosen && *chosen ? 1 : sizeof candidates / sizeof candidates[0];
    size_t used = 0;
    int written = snprintf(message, sizeof message, "cannot load PostgreSQL's client library (libpq; on Debian or Ubuntu: apt-get install libpq5)");
    used = written > 0 ? (size_t)written : 0;
    for (size_t index = 0; index < count; index++) {
        void *library = dlopen(candidates[index], RTLD_NOW | RTLD_LOCAL);
        if (library) {
            if (resolve(library, candidates[index])) return;
            dlclose(library);
            failure = message;
            return;
        }
        const char *reason = dlerror();
        if (used < sizeof message) {
            written = snprintf(message + used, sizeof message - used, "%s %s", index == 0 ? ":" : ";", reason ? reason : candidates[index]);
            if (written > 0) used += (size_t)written;
        }
    }
    failure = message;
}

int codable_store_load_libpq(const char **error) {
    pthread_once(&once, load);
    if (failure) {
        if (error) *error = failure;
        return 0;
    }
    return 1;
}

#pragma GCC visibility pop
