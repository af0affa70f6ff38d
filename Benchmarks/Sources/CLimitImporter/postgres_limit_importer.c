// The import benchmark's PostgreSQL limit baseline: see include/postgres_limit_importer.h.
#include "postgres_limit_importer.h"
#include "record_parser.h"

#include <postgresql/libpq-fe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Records a parser batch: small, so that the COPY stream follows the parser closely.
#define BATCH 64
// Bytes of COPY data handed to libpq at a time.
#define SEND_SIZE (256 << 10)
// Bytes of staged label rows kept before they are copied.
#define LINKS_SIZE (8 << 20)

typedef struct { char *bytes; size_t used, capacity; } buffer;

typedef struct {
    PGconn *conn;
    int binary;
    int profile, explain;
    buffer issues;  // COPY data of the staged issues, not yet sent
    buffer links;   // COPY data of the staged labels, waiting for their COPY
    size_t links_header;  // bytes of the COPY header that starts `links`
    int64_t n;      // records staged so far: each record's place in the dump
    double started, copying;  // seconds: the import's start, COPY commands waiting for the server
} importer;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int fail(importer *im, const char *what) {
    fprintf(stderr, "postgres limit importer: %s: %s", what, im->conn ? PQerrorMessage(im->conn) : "\n");
    return 0;
}

// MARK: - COPY data

static char *reserve(buffer *b, size_t length) {
    if (b->used + length > b->capacity) {
        b->capacity = (b->used + length) * 2;
        b->bytes = realloc(b->bytes, b->capacity);
    }
    return b->bytes + b->used;
}

static void put(buffer *b, const void *bytes, size_t length) {
    memcpy(reserve(b, length), bytes, length);
    b->used += length;
}

static void put_be(buffer *b, uint64_t value, int size) {
    char *out = reserve(b, (size_t)size);
    for (int i = 0; i < size; i++) out[i] = (char)(value >> (8 * (size - 1 - i)));
    b->used += (size_t)size;
}

// The binary format: a header per COPY, a field count per row, each field as its length and bytes (-1: NULL),
// integers and doubles big-endian, and -1 as the trailer. The text format: tab-separated fields, a row per line,
// \N for NULL, backslash, tab, newline and carriage return escaped.
//
// Binary is the default: the 1M reference dump (472 MiB), new tables, 3 alternating pairs on 2 cores (AMD EPYC,
// PostgreSQL 15 on the same machine): reading and COPY 3.33, 3.53, 3.69 s in binary against 4.05, 4.63, 4.73 s in
// text (0.76x the median), the client's CPU 2.68, 2.99, 3.01 s against 3.47, 3.89, 4.18 s (no number to print, no
// escaping; the server parses no text either). The whole import varied more with the merge than with the format
// (binary 17.4-19.6 s, text 18.0-18.6 s).
static const char binary_header[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

static void header(importer *im, buffer *b) {
    if (im->binary) put(b, binary_header, sizeof binary_header - 1);
}

static void trailer(importer *im, buffer *b) {
    if (im->binary) put_be(b, (uint64_t)-1, 2);
}

static void row_start(importer *im, buffer *b, int fields) {
    if (im->binary) put_be(b, (uint64_t)fields, 2);
}

static void row_end(importer *im, buffer *b) {
    if (!im->binary) b->bytes[b->used - 1] = '\n';  // the last field's tab
}

static void put_decimal(buffer *b, int64_t value) {
    char digits[24], *end = digits + sizeof digits, *p = end;
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    do { *--p = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude);
    if (value < 0) *--p = '-';
    put(b, p, (size_t)(end - p));
}

static void field_int64(importer *im, buffer *b, int64_t value) {
    if (im->binary) {
        put_be(b, 8, 4);
        put_be(b, (uint64_t)value, 8);
    } else {
        put_decimal(b, value);
        put(b, "\t", 1);
    }
}

static void field_int32(importer *im, buffer *b, int32_t value) {
    if (im->binary) {
        put_be(b, 4, 4);
        put_be(b, (uint32_t)value, 4);
    } else {
        put_decimal(b, value);
        put(b, "\t", 1);
    }
}

static void field_double(importer *im, buffer *b, double value) {
    if (im->binary) {
        uint64_t bits;
        memcpy(&bits, &value, sizeof bits);
        put_be(b, 8, 4);
        put_be(b, bits, 8);
    } else if (value == (double)(int64_t)value) {  // whole seconds: no need for printf
        put_decimal(b, (int64_t)value);
        put(b, "\t", 1);
    } else {
        char *out = reserve(b, 32);
        b->used += (size_t)snprintf(out, 32, "%.17g\t", value);
    }
}

static void field_null(importer *im, buffer *b) {
    if (im->binary) put_be(b, (uint64_t)-1, 4);
    else put(b, "\\N\t", 3);
}

static void field_text(importer *im, buffer *b, const char *arena, text t) {
    if (t.is_null) {
        field_null(im, b);
        return;
    }
    const char *s = arena + t.offset;
    if (im->binary) {
        put_be(b, t.length, 4);
        put(b, s, t.length);
        return;
    }
    char *out = reserve(b, 2 * t.length + 1), *start = out;
    for (size_t i = 0; i < t.length; i++) {
        char c = s[i];
        switch (c) {
        case '\\': *out++ = '\\'; *out++ = '\\'; break;
        case '\t': *out++ = '\\'; *out++ = 't'; break;
        case '\n': *out++ = '\\'; *out++ = 'n'; break;
        case '\r': *out++ = '\\'; *out++ = 'r'; break;
        default: *out++ = c;
        }
    }
    *out++ = '\t';
    b->used += (size_t)(out - start);
}

// MARK: - COPY commands

static int explain(importer *im, const char *sql) {
    size_t length = strlen(sql) + 64;
    char *text = malloc(length);
    snprintf(text, length, "EXPLAIN (ANALYZE, BUFFERS) %s", sql);
    PGresult *result = PQexec(im->conn, text);
    free(text);
    int ok = PQresultStatus(result) == PGRES_TUPLES_OK;
    for (int i = 0; ok && i < PQntuples(result); i++) fprintf(stderr, "    %s\n", PQgetvalue(result, i, 0));
    PQclear(result);
    return ok ? 1 : fail(im, sql);
}

static int exec(importer *im, const char *sql) {
    if (im->explain && (strncmp(sql, "INSERT", 6) == 0 || strncmp(sql, "DELETE", 6) == 0)) return explain(im, sql);
    double start = now();
    PGresult *result = PQexec(im->conn, sql);
    int ok = PQresultStatus(result) == PGRES_COMMAND_OK || PQresultStatus(result) == PGRES_TUPLES_OK;
    PQclear(result);
    if (!ok) return fail(im, sql);
    if (im->profile) fprintf(stderr, "  %7.3f s  %.100s\n", now() - start, sql);
    return 1;
}

static int copy_begin(importer *im, const char *table) {
    char sql[128];
    snprintf(sql, sizeof sql, "COPY %s FROM STDIN (FORMAT %s)", table, im->binary ? "binary" : "text");
    PGresult *result = PQexec(im->conn, sql);
    int ok = PQresultStatus(result) == PGRES_COPY_IN;
    PQclear(result);
    return ok ? 1 : fail(im, sql);
}

/// Sends a buffer's COPY data, in pieces of SEND_SIZE at most: libpq copies each piece into its own buffer.
static int copy_send(importer *im, buffer *b) {
    for (size_t sent = 0; sent < b->used; sent += SEND_SIZE) {
        size_t length = b->used - sent < SEND_SIZE ? b->used - sent : SEND_SIZE;
        if (PQputCopyData(im->conn, b->bytes + sent, (int)length) != 1) return fail(im, "COPY data");
    }
    b->used = 0;
    return 1;
}

static int copy_end(importer *im, buffer *b) {
    trailer(im, b);
    if (!copy_send(im, b)) return 0;
    double start = now();
    if (PQputCopyEnd(im->conn, NULL) != 1) return fail(im, "COPY end");
    PGresult *result;
    int ok = 1;
    while ((result = PQgetResult(im->conn))) {
        if (PQresultStatus(result) != PGRES_COMMAND_OK) ok = 0;
        PQclear(result);
    }
    im->copying += now() - start;
    return ok ? 1 : fail(im, "COPY");
}

/// Copies the waiting label rows (the buffer starts with the COPY header): the issues' COPY stops for it, and starts
/// again if `resume`.
static int copy_links(importer *im, int resume) {
    if (!copy_end(im, &im->issues)) return 0;
    if (im->links.used > im->links_header) {
        if (!copy_begin(im, "staged_labels") || !copy_end(im, &im->links)) return 0;
        header(im, &im->links);
    }
    if (!resume) return 1;
    if (!copy_begin(im, "staged_issues")) return 0;
    header(im, &im->issues);
    return 1;
}

/// The parser's sink: stages a batch of records.
static int stage(void *context, const record *records, int count, const char *arena) {
    importer *im = context;
    for (int i = 0; i < count; i++) {
        const record *r = &records[i];
        int64_t n = ++im->n;
        buffer *b = &im->issues;
        row_start(im, b, 12);
        field_int64(im, b, n);
        field_int64(im, b, r->id);
        field_int64(im, b, r->number);
        field_text(im, b, arena, r->title);
        field_text(im, b, arena, r->state);
        field_double(im, b, r->created_at);
        field_double(im, b, r->updated_at);
        field_int64(im, b, r->comments);
        field_double(im, b, r->score);
        field_text(im, b, arena, r->body);
        if (r->has_user) {
            field_int64(im, b, r->user_id);
            field_text(im, b, arena, r->login);
        } else {
            field_null(im, b);
            field_null(im, b);
        }
        row_end(im, b);
        for (int j = 0; j < r->label_count; j++) {
            buffer *l = &im->links;
            row_start(im, l, 5);
            field_int64(im, l, n);
            field_int32(im, l, j);
            field_int64(im, l, r->id);
            field_int64(im, l, r->label_ids[j]);
            field_text(im, l, arena, r->label_names[j]);
            row_end(im, l);
        }
    }
    if (im->issues.used >= SEND_SIZE && !copy_send(im, &im->issues)) return 0;
    if (im->links.used >= LINKS_SIZE && !copy_links(im, 1)) return 0;
    return 1;
}

// MARK: - The import

// The tables of a new schema: the layout of Scripts/postgres-baseline.sh without its secondary indexes and foreign
// keys, which `indexes` adds after the load (names as PostgreSQL gives them there).
static const char *tables =
    "CREATE TABLE users (id bigint PRIMARY KEY, login text);"
    "CREATE TABLE labels (id bigint PRIMARY KEY, name text);"
    "CREATE TABLE issues (id bigint PRIMARY KEY, number bigint NOT NULL, title text NOT NULL, state text NOT NULL,"
    " created_at double precision NOT NULL, updated_at double precision NOT NULL, comments bigint NOT NULL,"
    " score double precision NOT NULL, body text, user_id bigint);"
    "CREATE TABLE issue_labels (issue_id bigint NOT NULL, label_id bigint NOT NULL, PRIMARY KEY (issue_id, label_id));";

static const char *indexes[] = {
    "CREATE INDEX issues_user ON issues (user_id)",
    "CREATE INDEX issue_labels_label ON issue_labels (label_id)",
    "ALTER TABLE issues ADD FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL",
    "ALTER TABLE issue_labels ADD FOREIGN KEY (issue_id) REFERENCES issues (id) ON DELETE CASCADE,"
    " ADD FOREIGN KEY (label_id) REFERENCES labels (id) ON DELETE CASCADE",
    NULL,
};

static const char *staging =
    "CREATE TEMP TABLE staged_issues (n bigint, id bigint, number bigint, title text, state text,"
    " created_at double precision, updated_at double precision, comments bigint, score double precision, body text,"
    " user_id bigint, login text) ON COMMIT DROP;"
    "CREATE TEMP TABLE staged_labels (n bigint, position integer, issue_id bigint, label_id bigint, name text)"
    " ON COMMIT DROP";

// The merge, one statement per table: the last record of an id wins. `latest` holds each issue id's last record;
// DISTINCT ON picks the last occurrence of a user or a label.
#define LATEST "CREATE TEMP TABLE latest ON COMMIT DROP AS SELECT DISTINCT ON (id) n, id FROM staged_issues ORDER BY id, n DESC"
#define USERS                                                                                                       \
    "INSERT INTO users (id, login)"                                                                                 \
    " SELECT DISTINCT ON (user_id) user_id, login FROM staged_issues WHERE user_id IS NOT NULL ORDER BY user_id, n DESC" \
    " ON CONFLICT (id) DO UPDATE SET login = EXCLUDED.login"
#define LABELS                                                                                                      \
    "INSERT INTO labels (id, name)"                                                                                 \
    " SELECT DISTINCT ON (label_id) label_id, name FROM staged_labels ORDER BY label_id, n DESC, position DESC"     \
    " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name"
#define ISSUE_COLUMNS "id, number, title, state, created_at, updated_at, comments, score, body, user_id"
#define ISSUES                                                                                                      \
    "INSERT INTO issues (" ISSUE_COLUMNS ")"                                                                        \
    " SELECT DISTINCT ON (id) " ISSUE_COLUMNS " FROM staged_issues ORDER BY id, n DESC"                             \
    " ON CONFLICT (id) DO UPDATE SET number = EXCLUDED.number, title = EXCLUDED.title, state = EXCLUDED.state,"     \
    " created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, comments = EXCLUDED.comments,"            \
    " score = EXCLUDED.score, body = EXCLUDED.body, user_id = EXCLUDED.user_id"
#define LINKS                                                                                                       \
    "INSERT INTO issue_labels (issue_id, label_id)"                                                                 \
    " SELECT s.issue_id, s.label_id FROM staged_labels s JOIN latest USING (n) ON CONFLICT DO NOTHING"

// Rows that would not change are left alone (no new row version, no index entries, no foreign key checks), and of
// a staged issue's links only those its last record lacks are deleted: the links it keeps conflict and stay. The
// rows and links are those of `merge_rewriting` (every row rewritten, every link of a staged issue deleted and
// inserted again), in less time where the tables hold rows already: re-importing the 1M reference dump took 14.7 and
// 16.8 s (ImportBenchmarks --postgres, 2 rounds) against 41.5 s rewriting (one run into a schema just loaded: the
// issues' upsert 10.6 s, the links' insert 20.1 s, most of it their foreign key checks). New tables take the same.
static const char *merge[] = {
    LATEST,
    USERS " WHERE users.login IS DISTINCT FROM EXCLUDED.login",
    LABELS " WHERE labels.name IS DISTINCT FROM EXCLUDED.name",
    ISSUES " WHERE (issues.number, issues.title, issues.state, issues.created_at, issues.updated_at, issues.comments,"
    " issues.score, issues.body, issues.user_id) IS DISTINCT FROM (EXCLUDED.number, EXCLUDED.title, EXCLUDED.state,"
    " EXCLUDED.created_at, EXCLUDED.updated_at, EXCLUDED.comments, EXCLUDED.score, EXCLUDED.body, EXCLUDED.user_id)",
    "DELETE FROM issue_labels l USING latest WHERE l.issue_id = latest.id"
    " AND NOT EXISTS (SELECT FROM staged_labels s WHERE s.n = latest.n AND s.label_id = l.label_id)",
    LINKS,
    NULL,
};

// LIMIT_MERGE=rewrite: every row updated, every link of a staged issue deleted and inserted again.
static const char *merge_rewriting[] = {
    LATEST, USERS, LABELS, ISSUES, "DELETE FROM issue_labels WHERE issue_id IN (SELECT id FROM latest)", LINKS, NULL,
};

int64_t postgres_limit_import(const char *dump_path, const char *url, const char *schema) {
    importer *im = calloc(1, sizeof(importer));
    int64_t result = -1;
    char *quoted = NULL, *sql = NULL;
    const char *format = getenv("LIMIT_COPY");
    im->binary = !(format && strcmp(format, "text") == 0);
    im->profile = getenv("LIMIT_PROFILE") != NULL;
    im->explain = getenv("LIMIT_EXPLAIN") != NULL;
    im->started = now();
    im->conn = PQconnectdb(url);
    if (PQstatus(im->conn) != CONNECTION_OK) { fail(im, "connect"); goto done; }
    quoted = PQescapeIdentifier(im->conn, schema, strlen(schema));
    if (!quoted) { fail(im, "schema name"); goto done; }
    sql = malloc(strlen(quoted) * 2 + 256);
    // Sorts of the merge in memory where they fit; the index builds too.
    if (!exec(im, "SET client_min_messages = warning; SET work_mem = '64MB'; SET maintenance_work_mem = '256MB'")) goto done;
    if (!exec(im, "BEGIN")) goto done;
    sprintf(sql, "CREATE SCHEMA IF NOT EXISTS %s; SET LOCAL search_path TO %s", quoted, quoted);
    if (!exec(im, sql)) goto done;
    PGresult *found = PQexec(im->conn, "SELECT to_regclass('issues') IS NULL");
    if (PQresultStatus(found) != PGRES_TUPLES_OK) { PQclear(found); fail(im, "tables"); goto done; }
    int fresh = strcmp(PQgetvalue(found, 0, 0), "t") == 0;
    PQclear(found);
    if (fresh && !exec(im, tables)) goto done;
    if (!exec(im, staging) || !copy_begin(im, "staged_issues")) goto done;
    // Room for what is kept before it is sent, so that the buffers are not reallocated (and copied) as they fill.
    reserve(&im->issues, SEND_SIZE + (64 << 10));
    reserve(&im->links, LINKS_SIZE + (64 << 10));
    header(im, &im->issues);
    header(im, &im->links);
    im->links_header = im->links.used;
    int64_t records = parse_records(dump_path, BATCH, stage, im);
    if (records < 0 || !copy_links(im, 0)) goto done;
    if (im->profile)
        fprintf(stderr, "  %7.3f s  reading and COPY (%.3f s of it waiting for COPYs to end), %s format\n",
                now() - im->started, im->copying, im->binary ? "binary" : "text");
    const char *chosen = getenv("LIMIT_MERGE");
    const char **statements = chosen && strcmp(chosen, "rewrite") == 0 ? merge_rewriting : merge;
    for (int i = 0; statements[i]; i++)
        if (!exec(im, statements[i])) goto done;
    for (int i = 0; fresh && indexes[i]; i++)
        if (!exec(im, indexes[i])) goto done;
    if (!exec(im, "COMMIT")) goto done;
    if (im->profile) fprintf(stderr, "  %7.3f s  in all (%s tables)\n", now() - im->started, fresh ? "new" : "existing");
    result = records;
done:
    free(sql);
    PQfreemem(quoted);
    PQfinish(im->conn);
    free(im->issues.bytes);
    free(im->links.bytes);
    free(im);
    return result;
}
