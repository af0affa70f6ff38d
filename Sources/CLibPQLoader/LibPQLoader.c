// The libpq functions CodableStorePostgres calls (CLibPQLoader.h lists them), defined as `codable_store_PQ…`
// forwarders to the libpq that `codable_store_load_libpq` opens with dlopen, so that nothing links libpq when the
// program starts.

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "CLibPQLoader.h"

#define FORWARDED(X) CODABLE_STORE_LIBPQ_FUNCTIONS(X)
#define FORWARDED_VOID(X) CODABLE_STORE_LIBPQ_VOID_FUNCTIONS(X)

#define POINTER(name, type, parameters, arguments) static type(*loaded_##name) parameters;
#define POINTER_VOID(name, parameters, arguments) static void(*loaded_##name) parameters;
FORWARDED(POINTER)
FORWARDED_VOID(POINTER_VOID)

#define FORWARDER(name, type, parameters, arguments) \
    __attribute__((visibility("hidden"))) type codable_store_##name parameters { return loaded_##name arguments; }
#define FORWARDER_VOID(name, parameters, arguments) \
    __attribute__((visibility("hidden"))) void codable_store_##name parameters { loaded_##name arguments; }
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

