#include <sqlite3.h>

static inline sqlite3_destructor_type _benchmark_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
