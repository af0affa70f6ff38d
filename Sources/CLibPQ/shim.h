// libpq, PostgreSQL's own client library: its declarations (the functions are CLibPQLoader's forwarders). Debian's
// libpq-dev puts its headers in a folder of their own (/usr/include/postgresql); the second form finds them without
// pkg-config.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
