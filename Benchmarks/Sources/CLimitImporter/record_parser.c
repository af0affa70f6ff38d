// The limit baselines' reader of the reference dump: see record_parser.h.
#include "record_parser.h"

#include <yajl/yajl_parse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEPTH 64
#define CHUNK (64 << 10)

enum context { TOP, RECORDS, RECORD, USER, LABELS, LABEL, SKIP };
enum key {
    K_OTHER, K_ID, K_NUMBER, K_TITLE, K_STATE, K_CREATED, K_UPDATED, K_COMMENTS, K_SCORE, K_BODY, K_USER, K_LABELS,
    K_LOGIN, K_NAME
};

typedef struct {
    record *batch;
    int capacity, count;
    char *arena;  // the batch's strings
    size_t arena_used, arena_capacity;
    enum context stack[MAX_DEPTH];
    int depth;
    enum key key;
    int64_t records;
    int failed;  // the error is printed
    record_sink sink;
    void *context;
} parser;

static int fail(parser *p, const char *what) {
    fprintf(stderr, "limit importer: %s\n", what);
    p->failed = 1;
    return 0;
}

static int flush(parser *p) {
    if (p->count == 0) return 1;
    if (!p->sink(p->context, p->batch, p->count, p->arena)) {
        p->failed = 1;
        return 0;
    }
    p->count = 0;
    p->arena_used = 0;
    return 1;
}

static text keep(parser *p, const unsigned char *bytes, size_t length) {
    if (p->arena_used + length > p->arena_capacity) {
        p->arena_capacity = (p->arena_used + length) * 2;
        p->arena = realloc(p->arena, p->arena_capacity);
    }
    memcpy(p->arena + p->arena_used, bytes, length);
    text t = {p->arena_used, length, 0};
    p->arena_used += length;
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

static enum context top(parser *p) { return p->stack[p->depth - 1]; }

static int push(parser *p, enum context c) {
    if (p->depth == MAX_DEPTH) return fail(p, "nested too deep");
    p->stack[p->depth++] = c;
    return 1;
}

static record *current(parser *p) { return &p->batch[p->count]; }

static int on_start_map(void *ctx) {
    parser *p = ctx;
    enum context c = top(p);
    if (c == RECORDS) {
        memset(current(p), 0, sizeof(record));
        current(p)->body.is_null = 1;
        return push(p, RECORD);
    }
    if (c == RECORD && p->key == K_USER) {
        current(p)->has_user = 1;
        current(p)->login.is_null = 1;
        return push(p, USER);
    }
    if (c == LABELS) {
        record *r = current(p);
        if (r->label_count == MAX_LABELS) return fail(p, "too many labels");
        r->label_names[r->label_count].is_null = 1;
        r->label_count++;
        return push(p, LABEL);
    }
    return push(p, SKIP);
}

static int on_end_map(void *ctx) {
    parser *p = ctx;
    enum context c = top(p);
    p->depth--;
    if (c == RECORD) {
        p->records++;
        if (++p->count == p->capacity) return flush(p);
    }
    return 1;
}

static int on_start_array(void *ctx) {
    parser *p = ctx;
    enum context c = top(p);
    if (c == TOP) return push(p, RECORDS);
    if (c == RECORD && p->key == K_LABELS) {
        current(p)->has_labels = 1;
        return push(p, LABELS);
    }
    return push(p, SKIP);
}

static int on_end_array(void *ctx) {
    parser *p = ctx;
    p->depth--;
    return 1;
}

static int on_map_key(void *ctx, const unsigned char *key, size_t length) {
    parser *p = ctx;
#define IS(name) (length == sizeof(name) - 1 && memcmp(key, name, length) == 0)
    switch (top(p)) {
    case RECORD:
        p->key = IS("id") ? K_ID : IS("number") ? K_NUMBER : IS("title") ? K_TITLE : IS("state") ? K_STATE
            : IS("created_at") ? K_CREATED : IS("updated_at") ? K_UPDATED : IS("comments") ? K_COMMENTS
            : IS("score") ? K_SCORE : IS("body") ? K_BODY : IS("user") ? K_USER : IS("labels") ? K_LABELS : K_OTHER;
        break;
    case USER: p->key = IS("id") ? K_ID : IS("login") ? K_LOGIN : K_OTHER; break;
    case LABEL: p->key = IS("id") ? K_ID : IS("name") ? K_NAME : K_OTHER; break;
    default: p->key = K_OTHER;
    }
#undef IS
    return 1;
}

static int on_number(void *ctx, const char *s, size_t length) {
    parser *p = ctx;
    char buffer[64];
    if (length >= sizeof buffer) return fail(p, "number too long");
    memcpy(buffer, s, length);
    buffer[length] = 0;
    record *r = current(p);
    switch (top(p)) {
    case RECORD:
        switch (p->key) {
        case K_ID: r->id = strtoll(buffer, NULL, 10); break;
        case K_NUMBER: r->number = strtoll(buffer, NULL, 10); break;
        case K_COMMENTS: r->comments = strtoll(buffer, NULL, 10); break;
        case K_SCORE: r->score = strtod(buffer, NULL); break;
        default: break;
        }
        break;
    case USER: if (p->key == K_ID) r->user_id = strtoll(buffer, NULL, 10); break;
    case LABEL: if (p->key == K_ID) r->label_ids[r->label_count - 1] = strtoll(buffer, NULL, 10); break;
    default: break;
    }
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t length) {
    parser *p = ctx;
    record *r = current(p);
    switch (top(p)) {
    case RECORD:
        switch (p->key) {
        case K_TITLE: r->title = keep(p, s, length); break;
        case K_STATE: r->state = keep(p, s, length); break;
        case K_BODY: r->body = keep(p, s, length); break;
        case K_CREATED: r->created_at = iso8601(s, length); break;
        case K_UPDATED: r->updated_at = iso8601(s, length); break;
        default: break;
        }
        break;
    case USER: if (p->key == K_LOGIN) r->login = keep(p, s, length); break;
    case LABEL: if (p->key == K_NAME) r->label_names[r->label_count - 1] = keep(p, s, length); break;
    default: break;
    }
    return 1;
}

static int on_null(void *ctx) {
    parser *p = ctx;
    if (top(p) == RECORD && p->key == K_USER) current(p)->has_user = 0;
    if (top(p) == RECORD && p->key == K_BODY) current(p)->body.is_null = 1;
    return 1;
}

static int on_boolean(void *ctx, int value) { (void)ctx; (void)value; return 1; }

static const yajl_callbacks callbacks = {
    on_null, on_boolean, NULL, NULL, on_number, on_string, on_start_map, on_map_key, on_end_map, on_start_array, on_end_array,
};

int64_t parse_records(const char *dump_path, int batch, record_sink sink, void *context) {
    parser p = {0};
    p.capacity = batch;
    p.batch = malloc(sizeof(record) * (size_t)batch);
    p.arena_capacity = 1 << 20;
    p.arena = malloc(p.arena_capacity);
    p.stack[0] = TOP;
    p.depth = 1;
    p.sink = sink;
    p.context = context;
    int64_t result = -1;
    FILE *file = fopen(dump_path, "rb");
    yajl_handle handle = yajl_alloc(&callbacks, NULL, &p);
    unsigned char *chunk = malloc(CHUNK);
    if (!file) {
        fprintf(stderr, "limit importer: cannot open %s\n", dump_path);
        goto done;
    }
    size_t read;
    while ((read = fread(chunk, 1, CHUNK, file)) > 0) {
        if (yajl_parse(handle, chunk, read) != yajl_status_ok) {
            if (!p.failed) {
                unsigned char *message = yajl_get_error(handle, 0, chunk, read);
                fprintf(stderr, "limit importer: %s\n", message);
                yajl_free_error(handle, message);
            }
            goto done;
        }
    }
    if (yajl_complete_parse(handle) != yajl_status_ok) {
        if (!p.failed) fprintf(stderr, "limit importer: the dump ends early\n");
        goto done;
    }
    if (!flush(&p)) goto done;
    result = p.records;
done:
    if (file) fclose(file);
    yajl_free(handle);
    free(chunk);
    free(p.batch);
    free(p.arena);
    return result;
}
