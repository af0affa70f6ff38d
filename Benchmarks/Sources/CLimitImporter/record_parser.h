// The limit baselines' reader of the reference dump, shared by the SQLite importer (limit_importer.c) and the
// PostgreSQL one (postgres_limit_importer.c). Private to this target.
#ifndef RECORD_PARSER_H
#define RECORD_PARSER_H

#include <stddef.h>
#include <stdint.h>

#define MAX_LABELS 32

/// A string of a batch: `length` bytes at `offset` in the batch's arena (decoded UTF-8, not NUL-terminated).
typedef struct { size_t offset, length; int is_null; } text;

/// One issue record of the dump, in fixed fields.
typedef struct {
    int64_t id, number, comments, user_id;
    double created_at, updated_at, score;  // dates: epoch seconds of the ISO 8601 strings
    text title, state, body, login;
    int has_user, has_labels, label_count;
    int64_t label_ids[MAX_LABELS];
    text label_names[MAX_LABELS];
} record;

/// Takes a batch of `count` records (their strings in `arena`), in dump order. Returns 1 to go on, or 0 to stop
/// the parse, after printing the error.
typedef int (*record_sink)(void *context, const record *records, int count, const char *arena);

/// Reads the JSON array of issue records at `dump_path` with yajl's callback parser, in 64 KiB chunks, and hands
/// them to `sink` in batches of `batch` records (the last one shorter); a batch's records and strings are reused
/// after the sink returns. Returns the number of records, or -1 after printing the error on standard error.
int64_t parse_records(const char *dump_path, int batch, record_sink sink, void *context);

#endif
