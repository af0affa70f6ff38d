#include <sqlite3.h>
#if __has_include(<malloc.h>)
#include <malloc.h>  // mallinfo2: the import benchmark's memory report
#endif

static inline sqlite3_destructor_type _benchmark_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
