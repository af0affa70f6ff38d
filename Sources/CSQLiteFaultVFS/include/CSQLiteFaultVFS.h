// Test support only: a SQLite VFS that wraps the default one ("unix") and fails chosen I/O calls.
//
// Only the test target depends on this target; no product exports it. A test registers a VFS under a name of
// its own, opens its store with that name (`Store.Options.vfs`), counts the calls a clean run makes, then
// arms a fault for the Nth call of one kind (read, write, sync, truncate) on a chosen set of files (the main
// database, its -wal or rollback journal, temporary files) and checks what the store makes of it.
//
// Every function is thread-safe: the state of a VFS is behind a mutex, since an import reaches SQLite from a
// writer thread of its own. Each registered VFS has its own counters and fault, so tests may run in parallel.
//
// Related SQLite documentation: <https://www.sqlite.org/vfs.html>, <https://www.sqlite.org/c3ref/vfs.html>,
// <https://www.sqlite.org/c3ref/io_methods.html>
#ifndef CSQLITEFAULTVFS_H
#define CSQLITEFAULTVFS_H

#include <stdint.h>

/// A registered fault-injecting VFS (opaque).
typedef struct cs_fault_vfs cs_fault_vfs;

/// The I/O calls that are counted and can be failed (`xRead`, `xWrite`, `xSync`, `xTruncate`).
enum {
    CS_FAULT_READ = 0,
    CS_FAULT_WRITE = 1,
    CS_FAULT_SYNC = 2,
    CS_FAULT_TRUNCATE = 3,
    CS_FAULT_OPERATION_COUNT = 4,
};

/// The files calls are counted for, as bits of a mask: the main database, its -wal file, its rollback journal,
/// and everything else (temporary databases, statement journals, sorter files).
enum {
    CS_FAULT_FILE_MAIN = 1 << 0,
    CS_FAULT_FILE_WAL = 1 << 1,
    CS_FAULT_FILE_JOURNAL = 1 << 2,
    CS_FAULT_FILE_OTHER = 1 << 3,
    CS_FAULT_FILE_ANY = 0xF,
    CS_FAULT_FILE_KIND_COUNT = 4,
};

/// How an armed fault behaves, as bits.
enum {
    /// Every matching call from the Nth on fails (a disk that stays broken), not only the Nth.
    CS_FAULT_PERSISTENT = 1 << 0,
    /// A failing write first writes the first half of its bytes (a torn write), then reports the error.
    CS_FAULT_TORN = 1 << 1,
};

/// Registers a VFS named `name` that wraps the default VFS, without making it the default. Returns NULL when
/// the name is taken or memory is short. SQLite keeps the pointer: unregister before freeing.
cs_fault_vfs *cs_fault_vfs_register(const char *name);

/// Unregisters and frees the VFS. Every connection opened with it must be closed first.
void cs_fault_vfs_unregister(cs_fault_vfs *vfs);

/// Arms a fault: the `nth` (1-based) call of `operation` on a file whose kind is in `file_mask`, counted from
/// now, returns `result_code` (0: SQLITE_IOERR_READ, _WRITE, _FSYNC or _TRUNCATE, after the operation) instead of
/// reaching the disk. `flags` is a combination of CS_FAULT_PERSISTENT and CS_FAULT_TORN.
void cs_fault_vfs_arm(cs_fault_vfs *vfs, int operation, int file_mask, int64_t nth, int flags, int result_code);

/// Disarms the fault; calls reach the disk again.
void cs_fault_vfs_disarm(cs_fault_vfs *vfs);

/// The number of faults injected since the last `cs_fault_vfs_arm`.
int64_t cs_fault_vfs_injected(cs_fault_vfs *vfs);

/// Sets every call counter to zero.
void cs_fault_vfs_reset_counts(cs_fault_vfs *vfs);

/// Calls of `operation` on files whose kind is in `file_mask` (summed over the kinds) since the last reset,
/// failed ones included.
int64_t cs_fault_vfs_count(cs_fault_vfs *vfs, int operation, int file_mask);

#endif
