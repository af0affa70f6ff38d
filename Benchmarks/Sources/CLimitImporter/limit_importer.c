// The import benchmark's limit baseline: see include/limit_importer.h.
#include "limit_importer.h"

#include <sqlite3.h>
#include <yajl/yajl_parse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 64
#define MAX_LABELS 32
#define MAX_DEPTH 64

typedef struct { size_t offset, length; int is_null; } text;

typedef struct {
    int64_t id, number, comments, user_id;
    double created_at, updated_at, score;
    text title, state, body, login;
    int has_user, has_labels, label_count;
    int64_t label_ids[MAX_LABELS];
    text label_names[MAX_LABELS];
} record;

enum context { TOP, RECORDS, RECORD, USER, LABELS, LABEL, SKIP };
enum key {
    K_OTHER, K_ID, K_NUMBER, K_TITLE, K_STATE, K_CREATED, K_UPDATED, K_COMMENTS, K_SCORE, K_BODY, K_USER, K_LABELS,
    K_LOGIN, K_NAME
};

typedef struct {
    sqlite3 *db;
    record batch[BATCH];
    int count;
    char *arena;  // the batch's strings
    size_t arena_used, arena_capacity;
    enum context stack[MAX_DEPTH];
    int depth;
    enum key key;
    int64_t records;
    int failed;
    // A batch's labels and links, flat.
    struct { int64_t id; text name; } label_rows[BATCH * MAX_LABELS];
    struct { int64_t issue, label; } link_rows[BATCH * MAX_LABELS];
    // Cached statements by row count (index 1 ... BATCH).
    sqlite3_stmt *users[BATCH + 1], *labels[BATCH + 1], *issues[BATCH + 1], *unlink[BATCH + 1], *link[BATCH + 1];
} importer;

static int fail(importer *im, const char *what) {
    fprintf(stderr, "limit importer: %s: %s\n", what, im->db ? sqlite3_errmsg(im->db) : "");
    im->failed = 1;
    return 0;
}

static text keep(importer *im, const unsigned char *bytes, size_t length) {
    if (im->arena_used + length > im->arena_capacity) {
        im->arena_capacity = (im->arena_used + length) * 2;
        im->arena = realloc(im->arena, im->arena_capacity);
    }
    memcpy(im->arena + im->arena_used, bytes, length);
    text t = {im->arena_used, length, 0};
    im->arena_used += length;
    return t;
}

static double iso8601(const unsigned char *s, size_t length) {
    char buffer[32];
    if (length >= sizeof buffer) return 0;
    memcpy(buffer, s, length);
    buffer[length] = 0;
    struct tm tm = {0};
    if (sscanf(buffer, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (double)timegm(&tm);
}

// MARK: - Writing

static sqlite3_stmt *statement(importer *im, sqlite3_stmt **cache, int rows, const char *head, const char *row, const char *tail) {
    if (cache[rows]) return cache[rows];
    size_t size = strlen(head) + (size_t)rows * (strlen(row) + 1) + strlen(tail) + 1;
    char *sql = malloc(size);
    strcpy(sql, head);
    for (int i = 0; i < rows; i++) {
        if (i) strcat(sql, ",");
        strcat(sql, row);
    }
    strcat(sql, tail);
    if (sqlite3_prepare_v3(im->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &cache[rows], NULL) != SQLITE_OK) {
        fail(im, sql);
        cache[rows] = NULL;
    }
    free(sql);
    return cache[rows];
}

static int run(importer *im, sqlite3_stmt *s) {
    if (!s) return 0;
    int code = sqlite3_step(s);
    sqlite3_reset(s);
    if (code != SQLITE_DONE) return fail(im, "step");
    return 1;
}

static void bind_text(importer *im, sqlite3_stmt *s, int index, text t) {
    if (t.is_null) sqlite3_bind_null(s, index);
    else sqlite3_bind_text(s, index, im->arena + t.offset, (int)t.length, SQLITE_STATIC);
}

/// Whether a later record of the batch has the same id (its labels win).
static int superseded(importer *im, int position) {
    for (int later = position + 1; later < im->count; later++)
        if (im->batch[later].id == im->batch[position].id) return 1;
    return 0;
}

static int flush(importer *im) {
    if (im->count == 0) return 1;
    int n = 0, p;
    // Users, in record order (a later record's login wins).
    sqlite3_stmt *s;
    for (int i = 0; i < im->count; i++) n += im->batch[i].has_user;
    if (n) {
        s = statement(im, im->users, n, "INSERT INTO users (id, login) VALUES ", "(?,?)",
                      " ON CONFLICT (id) DO UPDATE SET login = excluded.login");
        if (!s) return 0;
        p = 1;
        for (int i = 0; i < im->count; i++) {
            record *r = &im->batch[i];
            if (!r->has_user) continue;
            sqlite3_bind_int64(s, p++, r->user_id);
            bind_text(im, s, p++, r->login);
        }
        if (!run(im, s)) return 0;
    }
    // Labels, 64 rows a statement, in record order.
    int total = 0;
    for (int i = 0; i < im->count; i++)
        for (int j = 0; j < im->batch[i].label_count; j++) {
            im->label_rows[total].id = im->batch[i].label_ids[j];
            im->label_rows[total].name = im->batch[i].label_names[j];
            total++;
        }
    for (int done = 0; done < total;) {
        int rows = total - done < BATCH ? total - done : BATCH;
        s = statement(im, im->labels, rows, "INSERT INTO labels (id, name) VALUES ", "(?,?)",
                      " ON CONFLICT (id) DO UPDATE SET name = excluded.name");
        if (!s) return 0;
        int p = 1;
        for (int k = done; k < done + rows; k++) {
            sqlite3_bind_int64(s, p++, im->label_rows[k].id);
            bind_text(im, s, p++, im->label_rows[k].name);
        }
        if (!run(im, s)) return 0;
        done += rows;
    }
    // Issues.
    s = statement(im, im->issues, im->count,
                  "INSERT INTO issues (id, number, title, state, created_at, updated_at, comments, score, body, user_id) VALUES ",
                  "(?,?,?,?,?,?,?,?,?,?)",
                  " ON CONFLICT (id) DO UPDATE SET number = excluded.number, title = excluded.title, state = excluded.state,"
                  " created_at = excluded.created_at, updated_at = excluded.updated_at, comments = excluded.comments,"
                  " score = excluded.score, body = excluded.body, user_id = excluded.user_id");
    if (!s) return 0;
    p = 1;
    for (int i = 0; i < im->count; i++) {
        record *r = &im->batch[i];
        sqlite3_bind_int64(s, p++, r->id);
        sqlite3_bind_int64(s, p++, r->number);
        bind_text(im, s, p++, r->title);
        bind_text(im, s, p++, r->state);
        sqlite3_bind_double(s, p++, r->created_at);
        sqlite3_bind_double(s, p++, r->updated_at);
        sqlite3_bind_int64(s, p++, r->comments);
        sqlite3_bind_double(s, p++, r->score);
        bind_text(im, s, p++, r->body);
        if (r->has_user) sqlite3_bind_int64(s, p++, r->user_id);
        else sqlite3_bind_null(s, p++);
    }
    if (!run(im, s)) return 0;
    // Links: the batch's records with labels lose their old links, then get their own (the last record of an id).
    n = 0;
    for (int i = 0; i < im->count; i++) n += im->batch[i].has_labels;
    if (n) {
        s = statement(im, im->unlink, n, "DELETE FROM issue_labels WHERE issue_id IN (", "?", ")");
        if (!s) return 0;
        p = 1;
        for (int i = 0; i < im->count; i++)
            if (im->batch[i].has_labels) sqlite3_bind_int64(s, p++, im->batch[i].id);
        if (!run(im, s)) return 0;
    }
    int links = 0;
    for (int i = 0; i < im->count; i++) {
        record *r = &im->batch[i];
        if (!r->has_labels || superseded(im, i)) continue;
        for (int j = 0; j < r->label_count; j++) {
            im->link_rows[links].issue = r->id;
            im->link_rows[links].label = r->label_ids[j];
            links++;
        }
    }
    for (int done = 0; done < links;) {
        int rows = links - done < BATCH ? links - done : BATCH;
        s = statement(im, im->link, rows, "INSERT OR IGNORE INTO issue_labels (issue_id, label_id) VALUES ", "(?,?)", "");
        if (!s) return 0;
        int p = 1;
        for (int k = done; k < done + rows; k++) {
            sqlite3_bind_int64(s, p++, im->link_rows[k].issue);
            sqlite3_bind_int64(s, p++, im->link_rows[k].label);
        }
        if (!run(im, s)) return 0;
        done += rows;
    }
    im->count = 0;
    im->arena_used = 0;
    return 1;
}

// MARK: - Parsing

static enum context top(importer *im) { return im->stack[im->depth - 1]; }

static int push(importer *im, enum context c) {
    if (im->depth == MAX_DEPTH) return 0;
    im->stack[im->depth++] = c;
    return 1;
}

static record *current(importer *im) { return &im->batch[im->count]; }

static int on_start_map(void *ctx) {
    importer *im = ctx;
    enum context c = top(im);
    if (c == RECORDS) {
        memset(current(im), 0, sizeof(record));
        current(im)->body.is_null = 1;
        return push(im, RECORD);
    }
    if (c == RECORD && im->key == K_USER) {
        current(im)->has_user = 1;
        current(im)->login.is_null = 1;
        return push(im, USER);
    }
    if (c == LABELS) {
        record *r = current(im);
        if (r->label_count == MAX_LABELS) return fail(im, "too many labels");
        r->label_names[r->label_count].is_null = 1;
        r->label_count++;
        return push(im, LABEL);
    }
    return push(im, SKIP);
}

static int on_end_map(void *ctx) {
    importer *im = ctx;
    enum context c = top(im);
    im->depth--;
    if (c == RECORD) {
        im->records++;
        if (++im->count == BATCH) return flush(im);
    }
    return 1;
}

static int on_start_array(void *ctx) {
    importer *im = ctx;
    enum context c = top(im);
    if (c == TOP) return push(im, RECORDS);
    if (c == RECORD && im->key == K_LABELS) {
        current(im)->has_labels = 1;
        return push(im, LABELS);
    }
    return push(im, SKIP);
}

static int on_end_array(void *ctx) {
    importer *im = ctx;
    im->depth--;
    return 1;
}

static int on_map_key(void *ctx, const unsigned char *key, size_t length) {
    importer *im = ctx;
#define IS(name) (length == sizeof(name) - 1 && memcmp(key, name, length) == 0)
    switch (top(im)) {
    case RECORD:
        im->key = IS("id") ? K_ID : IS("number") ? K_NUMBER : IS("title") ? K_TITLE : IS("state") ? K_STATE
            : IS("created_at") ? K_CREATED : IS("updated_at") ? K_UPDATED : IS("comments") ? K_COMMENTS
            : IS("score") ? K_SCORE : IS("body") ? K_BODY : IS("user") ? K_USER : IS("labels") ? K_LABELS : K_OTHER;
        break;
    case USER: im->key = IS("id") ? K_ID : IS("login") ? K_LOGIN : K_OTHER; break;
    case LABEL: im->key = IS("id") ? K_ID : IS("name") ? K_NAME : K_OTHER; break;
    default: im->key = K_OTHER;
    }
#undef IS
    return 1;
}

static int on_number(void *ctx, const char *s, size_t length) {
    importer *im = ctx;
    char buffer[64];
    if (length >= sizeof buffer) return fail(im, "number too long");
    memcpy(buffer, s, length);
    buffer[length] = 0;
    record *r = current(im);
    switch (top(im)) {
    case RECORD:
        switch (im->key) {
        case K_ID: r->id = strtoll(buffer, NULL, 10); break;
        case K_NUMBER: r->number = strtoll(buffer, NULL, 10); break;
        case K_COMMENTS: r->comments = strtoll(buffer, NULL, 10); break;
        case K_SCORE: r->score = strtod(buffer, NULL); break;
        default: break;
        }
        break;
    case USER: if (im->key == K_ID) r->user_id = strtoll(buffer, NULL, 10); break;
    case LABEL: if (im->key == K_ID) r->label_ids[r->label_count - 1] = strtoll(buffer, NULL, 10); break;
    default: break;
    }
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t length) {
    importer *im = ctx;
    record *r = current(im);
    switch (top(im)) {
    case RECORD:
        switch (im->key) {
        case K_TITLE: r->title = keep(im, s, length); break;
        case K_STATE: r->state = keep(im, s, length); break;
        case K_BODY: r->body = keep(im, s, length); break;
        case K_CREATED: r->created_at = iso8601(s, length); break;
        case K_UPDATED: r->updated_at = iso8601(s, length); break;
        default: break;
        }
        break;
    case USER: if (im->key == K_LOGIN) r->login = keep(im, s, length); break;
    case LABEL: if (im->key == K_NAME) r->label_names[r->label_count - 1] = keep(im, s, length); break;
    default: break;
    }
    return 1;
}

static int on_null(void *ctx) {
    importer *im = ctx;
    if (top(im) == RECORD && im->key == K_USER) current(im)->has_user = 0;
    if (top(im) == RECORD && im->key == K_BODY) current(im)->body.is_null = 1;
    return 1;
}

static int on_boolean(void *ctx, int value) { (void)ctx; (void)value; return 1; }

static const yajl_callbacks callbacks = {
    on_null, on_boolean, NULL, NULL, on_number, on_string, on_start_map, on_map_key, on_end_map, on_start_array, on_end_array,
};

// MARK: - The import

static const char *schema =
    "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, login TEXT);"
    "CREATE TABLE IF NOT EXISTS labels (id INTEGER PRIMARY KEY, name TEXT);"
    "CREATE TABLE IF NOT EXISTS issues (id INTEGER PRIMARY KEY, number INTEGER NOT NULL, title TEXT NOT NULL,"
    " state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, comments INTEGER NOT NULL,"
    " score REAL NOT NULL, body TEXT, user_id INTEGER);"
    "CREATE TABLE IF NOT EXISTS issue_labels (issue_id INTEGER NOT NULL, label_id INTEGER NOT NULL,"
    " PRIMARY KEY (issue_id, label_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS issue_labels_label ON issue_labels (label_id);";

// LIMIT_LAYOUT=indexed: the minimal layout plus the index an inverse to-many relationship (a user's issues) needs,
// which any store that answers `user.issues` or nullifies issues when a user is deleted must keep.
static const char *indexed_index = "CREATE INDEX IF NOT EXISTS issues_user ON issues (user_id);";

// LIMIT_LAYOUT=codablestore: the same import into CodableStore's table layout (a row id apart from the identity,
// with a unique index on it; an index on the user foreign key; join rows keyed by (source, target) WITHOUT ROWID
// with a reverse index; foreign keys enforced), to measure what the layout costs apart from the rest of the importer.
static const char *codablestore_schema =
    "PRAGMA foreign_keys = ON;"
    "CREATE TABLE IF NOT EXISTS users (_pk INTEGER PRIMARY KEY, id INTEGER NOT NULL, login TEXT);"
    "CREATE UNIQUE INDEX IF NOT EXISTS users_identity ON users (id);"
    "CREATE TABLE IF NOT EXISTS labels (_pk INTEGER PRIMARY KEY, id INTEGER NOT NULL, name TEXT);"
    "CREATE UNIQUE INDEX IF NOT EXISTS labels_identity ON labels (id);"
    "CREATE TABLE IF NOT EXISTS issues (_pk INTEGER PRIMARY KEY, id INTEGER NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,"
    " state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, comments INTEGER NOT NULL,"
    " score REAL NOT NULL, body TEXT, user_id INTEGER REFERENCES users (id) DEFERRABLE INITIALLY DEFERRED);"
    "CREATE UNIQUE INDEX IF NOT EXISTS issues_identity ON issues (id);"
    "CREATE INDEX IF NOT EXISTS issues_user ON issues (user_id);"
    "CREATE TABLE IF NOT EXISTS issue_labels (issue_id INTEGER NOT NULL REFERENCES issues (id) DEFERRABLE INITIALLY DEFERRED,"
    " label_id INTEGER NOT NULL REFERENCES labels (id) DEFERRABLE INITIALLY DEFERRED, position INTEGER,"
    " PRIMARY KEY (issue_id, label_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS issue_labels_label ON issue_labels (label_id);";

int64_t limit_import(const char *dump_path, const char *store_path, int wal) {
    importer *im = calloc(1, sizeof(importer));
    int64_t result = -1;
    FILE *file = fopen(dump_path, "rb");
    yajl_handle parser = yajl_alloc(&callbacks, NULL, im);
    unsigned char *chunk = malloc(64 << 10);
    if (!file) {
        fprintf(stderr, "limit importer: cannot open %s\n", dump_path);
        goto done;
    }
    im->stack[0] = TOP;
    im->depth = 1;
    im->arena_capacity = 1 << 20;
    im->arena = malloc(im->arena_capacity);
    if (sqlite3_open(store_path, &im->db) != SQLITE_OK) { fail(im, "open"); goto done; }
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas, "PRAGMA journal_mode = %s; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536;",
             wal ? "WAL" : "DELETE");
    if (sqlite3_exec(im->db, pragmas, NULL, NULL, NULL) != SQLITE_OK) { fail(im, "pragmas"); goto done; }
    const char *layout = getenv("LIMIT_LAYOUT");
    const char *chosen = layout && strcmp(layout, "codablestore") == 0 ? codablestore_schema
        : layout && strcmp(layout, "custom") == 0 ? getenv("LIMIT_SCHEMA") : schema;
    if (sqlite3_exec(im->db, chosen, NULL, NULL, NULL) != SQLITE_OK) { fail(im, "schema"); goto done; }
    if (layout && strcmp(layout, "indexed") == 0 && sqlite3_exec(im->db, indexed_index, NULL, NULL, NULL) != SQLITE_OK) {
        fail(im, "index");
        goto done;
    }
    if (sqlite3_exec(im->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) { fail(im, "begin"); goto done; }
    size_t read;
    while ((read = fread(chunk, 1, 64 << 10, file)) > 0) {
        if (yajl_parse(parser, chunk, read) != yajl_status_ok) {
            if (!im->failed) {
                unsigned char *message = yajl_get_error(parser, 0, chunk, read);
                fprintf(stderr, "limit importer: %s\n", message);
                yajl_free_error(parser, message);
            }
            goto done;
        }
    }
    if (yajl_complete_parse(parser) != yajl_status_ok || !flush(im)) goto done;
    if (sqlite3_exec(im->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) { fail(im, "commit"); goto done; }
    result = im->records;
done:
    for (int i = 0; i <= BATCH; i++) {
        sqlite3_finalize(im->users[i]);
        sqlite3_finalize(im->labels[i]);
        sqlite3_finalize(im->issues[i]);
        sqlite3_finalize(im->unlink[i]);
        sqlite3_finalize(im->link[i]);
    }
    if (im->db) sqlite3_close(im->db);
    if (file) fclose(file);
    yajl_free(parser);
    free(chunk);
    free(im->arena);
    free(im);
    return result;
}
