#include <sqlite3.h>

// `SQLITE_TRANSIENT` is a macro casting -1 to a destructor pointer, which Swift cannot import.
static inline sqlite3_destructor_type _codablestore_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

// `sqlite3_db_config` is variadic, which Swift cannot call: this is its form for the options that take an int
// (the new value, or -1 to leave it) and an int* (NULL here).
static inline int _codablestore_sqlite_db_config_int(sqlite3 *db, int op, int value) {
    return sqlite3_db_config(db, op, value, (int *)0);
}
