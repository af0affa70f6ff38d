// Test support only: see include/CSQLiteFaultVFS.h.
//
// A VFS "shim" in SQLite's sense: xOpen opens the file with the wrapped VFS into the bytes that follow our own
// file struct, and every I/O method counts the call, fails it when the armed fault says so, and otherwise hands
// it to the wrapped file. The methods are version 2 (shared memory, for WAL, but no xFetch), so SQLite never
// reads through a memory map around xRead.
//
// Related SQLite documentation: <https://www.sqlite.org/vfs.html> ("VFS Shims"), <https://www.sqlite.org/c3ref/io_methods.html>
#include "CSQLiteFaultVFS.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct cs_fault_vfs {
    sqlite3_vfs base;  // first: SQLite hands us back this pointer
    sqlite3_vfs *root;
    char *name;
    pthread_mutex_t mutex;
    int64_t counts[CS_FAULT_OPERATION_COUNT][CS_FAULT_FILE_KIND_COUNT];
    // The armed fault.
    int armed;
    int operation;
    int file_mask;
    int64_t nth;
    int flags;
    int result_code;
    int64_t seen;      // matching calls since armed
    int64_t injected;  // faults injected since armed
};

typedef struct FaultFile {
    sqlite3_file base;  // first: SQLite's sqlite3_file* is ours
    cs_fault_vfs *vfs;
    int kind;            // one CS_FAULT_FILE_… bit
    sqlite3_file *real;  // the wrapped VFS's file, in the bytes after this struct
} FaultFile;

#define ROUND8(n) (((n) + 7) & ~(size_t)7)

static int kind_index(int kind) {
    switch (kind) {
    case CS_FAULT_FILE_MAIN: return 0;
    case CS_FAULT_FILE_WAL: return 1;
    case CS_FAULT_FILE_JOURNAL: return 2;
    default: return 3;
    }
}

static int default_code(int operation) {
    switch (operation) {
    case CS_FAULT_READ: return SQLITE_IOERR_READ;
    case CS_FAULT_WRITE: return SQLITE_IOERR_WRITE;
    case CS_FAULT_SYNC: return SQLITE_IOERR_FSYNC;
    default: return SQLITE_IOERR_TRUNCATE;
    }
}

/// Counts a call; returns the error it must fail with, or SQLITE_OK. `*torn` says whether a failing write
/// writes half its bytes first.
static int count_call(FaultFile *file, int operation, int *torn) {
    cs_fault_vfs *vfs = file->vfs;
    int code = SQLITE_OK;
    pthread_mutex_lock(&vfs->mutex);
    vfs->counts[operation][kind_index(file->kind)] += 1;
    if (vfs->armed && vfs->operation == operation && (vfs->file_mask & file->kind)) {
        int64_t call = ++vfs->seen;
        if (call == vfs->nth || ((vfs->flags & CS_FAULT_PERSISTENT) && call > vfs->nth)) {
            code = vfs->result_code ? vfs->result_code : default_code(operation);
            vfs->injected += 1;
            if (torn) *torn = (vfs->flags & CS_FAULT_TORN) != 0;
        }
    }
    pthread_mutex_unlock(&vfs->mutex);
    return code;
}

// MARK: - I/O methods

static int fault_close(sqlite3_file *pFile) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xClose(file->real);
}

static int fault_read(sqlite3_file *pFile, void *buffer, int amount, sqlite3_int64 offset) {
    FaultFile *file = (FaultFile *)pFile;
    int code = count_call(file, CS_FAULT_READ, NULL);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xRead(file->real, buffer, amount, offset);
}

static int fault_write(sqlite3_file *pFile, const void *buffer, int amount, sqlite3_int64 offset) {
    FaultFile *file = (FaultFile *)pFile;
    int torn = 0;
    int code = count_call(file, CS_FAULT_WRITE, &torn);
    if (code != SQLITE_OK) {
        if (torn && amount > 1) file->real->pMethods->xWrite(file->real, buffer, amount / 2, offset);
        return code;
    }
    return file->real->pMethods->xWrite(file->real, buffer, amount, offset);
}

static int fault_truncate(sqlite3_file *pFile, sqlite3_int64 size) {
    FaultFile *file = (FaultFile *)pFile;
    int code = count_call(file, CS_FAULT_TRUNCATE, NULL);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xTruncate(file->real, size);
}

static int fault_sync(sqlite3_file *pFile, int flags) {
    FaultFile *file = (FaultFile *)pFile;
    int code = count_call(file, CS_FAULT_SYNC, NULL);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xSync(file->real, flags);
}

static int fault_file_size(sqlite3_file *pFile, sqlite3_int64 *size) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xFileSize(file->real, size);
}

static int fault_lock(sqlite3_file *pFile, int level) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xLock(file->real, level);
}

static int fault_unlock(sqlite3_file *pFile, int level) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xUnlock(file->real, level);
}

static int fault_check_reserved_lock(sqlite3_file *pFile, int *result) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xCheckReservedLock(file->real, result);
}

static int fault_file_control(sqlite3_file *pFile, int op, void *argument) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xFileControl(file->real, op, argument);
}

static int fault_sector_size(sqlite3_file *pFile) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xSectorSize(file->real);
}

static int fault_device_characteristics(sqlite3_file *pFile) {
    FaultFile *file = (FaultFile *)pFile;
    return file->real->pMethods->xDeviceCharacteristics(file->real);
}

static int fault_shm_map(sqlite3_file *pFile, int region, int size, int extend, void volatile **pointer) {
    FaultFile *file = (FaultFile *)pFile;
    if (file->real->pMethods->iVersion < 2) return SQLITE_IOERR_SHMMAP;
    return file->real->pMethods->xShmMap(file->real, region, size, extend, pointer);
}

static int fault_shm_lock(sqlite3_file *pFile, int offset, int count, int flags) {
    FaultFile *file = (FaultFile *)pFile;
    if (file->real->pMethods->iVersion < 2) return SQLITE_IOERR_SHMLOCK;
    return file->real->pMethods->xShmLock(file->real, offset, count, flags);
}

static void fault_shm_barrier(sqlite3_file *pFile) {
    FaultFile *file = (FaultFile *)pFile;
    if (file->real->pMethods->iVersion >= 2) file->real->pMethods->xShmBarrier(file->real);
}

static int fault_shm_unmap(sqlite3_file *pFile, int deleteFlag) {
    FaultFile *file = (FaultFile *)pFile;
    if (file->real->pMethods->iVersion < 2) return SQLITE_OK;
    return file->real->pMethods->xShmUnmap(file->real, deleteFlag);
}

static const sqlite3_io_methods fault_io_methods = {
    2,  // version 2: shared memory (WAL), no memory-mapped reads (xFetch) that would bypass xRead
    fault_close,
    fault_read,
    fault_write,
    fault_truncate,
    fault_sync,
    fault_file_size,
    fault_lock,
    fault_unlock,
    fault_check_reserved_lock,
    fault_file_control,
    fault_sector_size,
    fault_device_characteristics,
    fault_shm_map,
    fault_shm_lock,
    fault_shm_barrier,
    fault_shm_unmap,
    NULL,
    NULL,
};

// MARK: - VFS methods

static sqlite3_vfs *root_of(sqlite3_vfs *vfs) { return ((cs_fault_vfs *)vfs)->root; }

static int fault_open(sqlite3_vfs *pVfs, const char *name, sqlite3_file *pFile, int flags, int *outFlags) {
    FaultFile *file = (FaultFile *)pFile;
    sqlite3_vfs *root = root_of(pVfs);
    file->vfs = (cs_fault_vfs *)pVfs;
    file->real = (sqlite3_file *)((char *)pFile + ROUND8(sizeof(FaultFile)));
    if (flags & SQLITE_OPEN_MAIN_DB) file->kind = CS_FAULT_FILE_MAIN;
    else if (flags & SQLITE_OPEN_WAL) file->kind = CS_FAULT_FILE_WAL;
    else if (flags & SQLITE_OPEN_MAIN_JOURNAL) file->kind = CS_FAULT_FILE_JOURNAL;
    else file->kind = CS_FAULT_FILE_OTHER;
    int code = root->xOpen(root, name, file->real, flags, outFlags);
    // > The xOpen method must set the sqlite3_file.pMethods to either a valid sqlite3_io_methods object or to
    // > NULL. xOpen must do this even if the open fails. SQLite expects that the sqlite3_file.pMethods element
    // > will be valid after xOpen returns regardless of the success or failure of the xOpen call.
    pFile->pMethods = file->real->pMethods ? &fault_io_methods : NULL;
    return code;
}

static int fault_delete(sqlite3_vfs *pVfs, const char *name, int syncDirectory) {
    return root_of(pVfs)->xDelete(root_of(pVfs), name, syncDirectory);
}

static int fault_access(sqlite3_vfs *pVfs, const char *name, int flags, int *result) {
    return root_of(pVfs)->xAccess(root_of(pVfs), name, flags, result);
}

static int fault_full_pathname(sqlite3_vfs *pVfs, const char *name, int size, char *out) {
    return root_of(pVfs)->xFullPathname(root_of(pVfs), name, size, out);
}

static void *fault_dl_open(sqlite3_vfs *pVfs, const char *path) { return root_of(pVfs)->xDlOpen(root_of(pVfs), path); }

static void fault_dl_error(sqlite3_vfs *pVfs, int size, char *message) {
    root_of(pVfs)->xDlError(root_of(pVfs), size, message);
}

static void (*fault_dl_sym(sqlite3_vfs *pVfs, void *handle, const char *symbol))(void) {
    return root_of(pVfs)->xDlSym(root_of(pVfs), handle, symbol);
}

static void fault_dl_close(sqlite3_vfs *pVfs, void *handle) { root_of(pVfs)->xDlClose(root_of(pVfs), handle); }

static int fault_randomness(sqlite3_vfs *pVfs, int size, char *out) {
    return root_of(pVfs)->xRandomness(root_of(pVfs), size, out);
}

static int fault_sleep(sqlite3_vfs *pVfs, int microseconds) { return root_of(pVfs)->xSleep(root_of(pVfs), microseconds); }

static int fault_current_time(sqlite3_vfs *pVfs, double *now) {
    return root_of(pVfs)->xCurrentTime(root_of(pVfs), now);
}

static int fault_get_last_error(sqlite3_vfs *pVfs, int size, char *message) {
    return root_of(pVfs)->xGetLastError(root_of(pVfs), size, message);
}

static int fault_current_time_int64(sqlite3_vfs *pVfs, sqlite3_int64 *now) {
    return root_of(pVfs)->xCurrentTimeInt64(root_of(pVfs), now);
}

// MARK: - API

cs_fault_vfs *cs_fault_vfs_register(const char *name) {
    if (sqlite3_initialize() != SQLITE_OK) return NULL;
    if (sqlite3_vfs_find(name) != NULL) return NULL;
    sqlite3_vfs *root = sqlite3_vfs_find(NULL);
    if (root == NULL || root->iVersion < 2) return NULL;
    cs_fault_vfs *vfs = calloc(1, sizeof(cs_fault_vfs));
    if (vfs == NULL) return NULL;
    vfs->name = strdup(name);
    if (vfs->name == NULL) {
        free(vfs);
        return NULL;
    }
    pthread_mutex_init(&vfs->mutex, NULL);
    vfs->root = root;
    vfs->base.iVersion = 2;  // up to xCurrentTimeInt64; no system-call overrides
    vfs->base.szOsFile = (int)(ROUND8(sizeof(FaultFile)) + (size_t)root->szOsFile);
    vfs->base.mxPathname = root->mxPathname;
    vfs->base.zName = vfs->name;
    vfs->base.pAppData = NULL;
    vfs->base.xOpen = fault_open;
    vfs->base.xDelete = fault_delete;
    vfs->base.xAccess = fault_access;
    vfs->base.xFullPathname = fault_full_pathname;
    vfs->base.xDlOpen = fault_dl_open;
    vfs->base.xDlError = fault_dl_error;
    vfs->base.xDlSym = fault_dl_sym;
    vfs->base.xDlClose = fault_dl_close;
    vfs->base.xRandomness = fault_randomness;
    vfs->base.xSleep = fault_sleep;
    vfs->base.xCurrentTime = fault_current_time;
    vfs->base.xGetLastError = fault_get_last_error;
    vfs->base.xCurrentTimeInt64 = fault_current_time_int64;
    if (sqlite3_vfs_register(&vfs->base, 0) != SQLITE_OK) {
        pthread_mutex_destroy(&vfs->mutex);
        free(vfs->name);
        free(vfs);
        return NULL;
    }
    return vfs;
}

void cs_fault_vfs_unregister(cs_fault_vfs *vfs) {
    if (vfs == NULL) return;
    sqlite3_vfs_unregister(&vfs->base);
    pthread_mutex_destroy(&vfs->mutex);
    free(vfs->name);
    free(vfs);
}

void cs_fault_vfs_arm(cs_fault_vfs *vfs, int operation, int file_mask, int64_t nth, int flags, int result_code) {
    pthread_mutex_lock(&vfs->mutex);
    vfs->armed = 1;
    vfs->operation = operation;
    vfs->file_mask = file_mask;
    vfs->nth = nth;
    vfs->flags = flags;
    vfs->result_code = result_code;
    vfs->seen = 0;
    vfs->injected = 0;
    pthread_mutex_unlock(&vfs->mutex);
}

void cs_fault_vfs_disarm(cs_fault_vfs *vfs) {
    pthread_mutex_lock(&vfs->mutex);
    vfs->armed = 0;
    pthread_mutex_unlock(&vfs->mutex);
}

int64_t cs_fault_vfs_injected(cs_fault_vfs *vfs) {
    pthread_mutex_lock(&vfs->mutex);
    int64_t injected = vfs->injected;
    pthread_mutex_unlock(&vfs->mutex);
    return injected;
}

void cs_fault_vfs_reset_counts(cs_fault_vfs *vfs) {
    pthread_mutex_lock(&vfs->mutex);
    memset(vfs->counts, 0, sizeof(vfs->counts));
    pthread_mutex_unlock(&vfs->mutex);
}

int64_t cs_fault_vfs_count(cs_fault_vfs *vfs, int operation, int file_mask) {
    if (operation < 0 || operation >= CS_FAULT_OPERATION_COUNT) return 0;
    int64_t total = 0;
    pthread_mutex_lock(&vfs->mutex);
    for (int kind = 0; kind < CS_FAULT_FILE_KIND_COUNT; kind++) {
        if (file_mask & (1 << kind)) total += vfs->counts[operation][kind];
    }
    pthread_mutex_unlock(&vfs->mutex);
    return total;
}
