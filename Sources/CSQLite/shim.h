#include <sqlite3.h>

// `SQLITE_TRANSIENT` is a macro casting -1 to a destructor pointer, which Swift cannot import.
static inline sqlite3_destructor_type _codablestore_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
