// The import benchmark's limit baseline: see include/limit_importer.h.
#include "limit_importer.h"
#include "record_parser.h"

#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

typedef struct {
    sqlite3 *db;
    // The batch being written, as the parser hands it over.
    const record *batch;
    int count;
    const char *arena;
    // A batch's labels and links, flat.
    struct { int64_t id; text name; } label_rows[BATCH * MAX_LABELS];
    struct { int64_t issue, label; } link_rows[BATCH * MAX_LABELS];
    // Cached statements by row count (index 1 ... BATCH).
    sqlite3_stmt *users[BATCH + 1], *labels[BATCH + 1], *issues[BATCH + 1], *unlink[BATCH + 1], *link[BATCH + 1];
} importer;

static int fail(importer *im, const char *what) {
    fprintf(stderr, "limit importer: %s: %s\n", what, im->db ? sqlite3_errmsg(im->db) : "");
    return 0;
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

/// The parser's sink: writes a batch of records.
static int flush(void *context, const record *records, int count, const char *arena) {
    importer *im = context;
    im->batch = records;
    im->count = count;
    im->arena = arena;
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
            const record *r = &im->batch[i];
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
        const record *r = &im->batch[i];
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
        const record *r = &im->batch[i];
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
    return 1;
}

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
    int64_t records = parse_records(dump_path, BATCH, flush, im);
    if (records < 0) goto done;
    if (sqlite3_exec(im->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) { fail(im, "commit"); goto done; }
    result = records;
done:
    for (int i = 0; i <= BATCH; i++) {
        sqlite3_finalize(im->users[i]);
        sqlite3_finalize(im->labels[i]);
        sqlite3_finalize(im->issues[i]);
        sqlite3_finalize(im->unlink[i]);
        sqlite3_finalize(im->link[i]);
    }
    if (im->db) sqlite3_close(im->db);
    free(im);
    return result;
}
