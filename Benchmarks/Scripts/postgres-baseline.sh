#!/usr/bin/env bash
# The hand-made baseline a PostgreSQL user would write for the reference dump, run by psql: COPY the records (as
# JSON Lines) into a staging table, then one INSERT … SELECT … ON CONFLICT DO UPDATE each for users, labels and
# issues (the last occurrence of an id wins, as in CodableStore), and the links of every record replaced.
#
#     Scripts/postgres-baseline.sh DUMP.jsonl postgres://user@host:port/database SCHEMA
#
# The tables are the minimal layout: users, labels and issues keyed by their id, issue_labels keyed by (issue,
# label) with a reverse index, and an index on issues.user_id (what the inverse relationship user → issues needs).
set -euo pipefail
jsonl=$1
url=$2
schema=$3

psql "$url" -q -v ON_ERROR_STOP=1 <<SQL
CREATE SCHEMA IF NOT EXISTS "$schema";
SET search_path TO "$schema";
BEGIN;
CREATE TABLE IF NOT EXISTS users (id bigint PRIMARY KEY, login text);
CREATE TABLE IF NOT EXISTS labels (id bigint PRIMARY KEY, name text);
CREATE TABLE IF NOT EXISTS issues (
    id bigint PRIMARY KEY, number bigint NOT NULL, title text NOT NULL, state text NOT NULL,
    created_at double precision NOT NULL, updated_at double precision NOT NULL, comments bigint NOT NULL,
    score double precision NOT NULL, body text, user_id bigint REFERENCES users (id) ON DELETE SET NULL);
CREATE INDEX IF NOT EXISTS issues_user ON issues (user_id);
CREATE TABLE IF NOT EXISTS issue_labels (
    issue_id bigint NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    label_id bigint NOT NULL REFERENCES labels (id) ON DELETE CASCADE,
    PRIMARY KEY (issue_id, label_id));
CREATE INDEX IF NOT EXISTS issue_labels_label ON issue_labels (label_id);

CREATE TEMP TABLE staging (n bigserial, doc jsonb) ON COMMIT DROP;
-- One record per line, taken whole: a quote and a delimiter that JSON text never contains.
\copy staging (doc) FROM '$jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')

CREATE TEMP TABLE latest ON COMMIT DROP AS
    SELECT DISTINCT ON ((doc->>'id')::bigint) (doc->>'id')::bigint AS id, doc FROM staging ORDER BY (doc->>'id')::bigint, n DESC;

INSERT INTO users (id, login)
    SELECT DISTINCT ON ((doc->'user'->>'id')::bigint) (doc->'user'->>'id')::bigint, doc->'user'->>'login'
    FROM staging WHERE jsonb_typeof(doc->'user') = 'object'
    ORDER BY (doc->'user'->>'id')::bigint, n DESC
    ON CONFLICT (id) DO UPDATE SET login = EXCLUDED.login;

INSERT INTO labels (id, name)
    SELECT DISTINCT ON ((label->>'id')::bigint) (label->>'id')::bigint, label->>'name'
    FROM staging, jsonb_array_elements(doc->'labels') WITH ORDINALITY AS l (label, position)
    ORDER BY (label->>'id')::bigint, n DESC, position DESC
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name;

INSERT INTO issues (id, number, title, state, created_at, updated_at, comments, score, body, user_id)
    SELECT id, (doc->>'number')::bigint, doc->>'title', doc->>'state',
        extract(epoch FROM (doc->>'created_at')::timestamptz), extract(epoch FROM (doc->>'updated_at')::timestamptz),
        (doc->>'comments')::bigint, (doc->>'score')::double precision, doc->>'body', (doc->'user'->>'id')::bigint
    FROM latest
    ON CONFLICT (id) DO UPDATE SET number = EXCLUDED.number, title = EXCLUDED.title, state = EXCLUDED.state,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, comments = EXCLUDED.comments,
        score = EXCLUDED.score, body = EXCLUDED.body, user_id = EXCLUDED.user_id;

DELETE FROM issue_labels WHERE issue_id IN (SELECT id FROM latest);
INSERT INTO issue_labels (issue_id, label_id)
    SELECT DISTINCT id, (label->>'id')::bigint FROM latest, jsonb_array_elements(doc->'labels') AS label
    ON CONFLICT DO NOTHING;
COMMIT;
SQL
