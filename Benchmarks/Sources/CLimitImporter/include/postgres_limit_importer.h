#ifndef POSTGRES_LIMIT_IMPORTER_H
#define POSTGRES_LIMIT_IMPORTER_H

#include <stdint.h>

/// The PostgreSQL limit baseline of the import benchmark: what a hand-written C program does with the reference
/// dump, as fast as it can, in one transaction on one libpq connection to `url`.
///
/// yajl's callback parser reads the dump in 64 KiB chunks into fixed structs (the reader limit_importer.c uses,
/// record_parser.c). Each record is streamed as it is read, with `COPY … FROM STDIN (FORMAT binary)`, into a TEMP
/// staging table of issues (the record's place in the dump `n`, its columns, its user's id and login); its labels
/// go to a second one (n, position, issue id, label id, name), copied whenever 8 MiB of them are waiting (two COPYs
/// cannot interleave on a connection). Then, in the same transaction, one set-based statement per table merges the
/// staging into the minimal layout of Scripts/postgres-baseline.sh (users, labels and issues keyed by their bigint
/// id; issue_labels keyed by (issue, label), with its reverse index, the index on issues.user_id and the foreign
/// keys) in `schema`, made if missing:
///
/// - users, labels, issues: `INSERT … SELECT DISTINCT ON (id) … ORDER BY id, n DESC … ON CONFLICT (id) DO UPDATE …
///   WHERE (row) IS DISTINCT FROM (EXCLUDED row)`: the last occurrence of an id in the dump wins, as in
///   CodableStore, and a row that would not change is left alone;
/// - links: the links of every staged issue are replaced by those of its last record: `DELETE` of the links that
///   record lacks, then `INSERT` of its links `ON CONFLICT DO NOTHING` (those it keeps conflict and stay).
///
/// Dates are epoch seconds (double precision) of the ISO 8601 strings. When the tables do not exist yet, they are
/// made with their primary keys only, and the secondary indexes and foreign keys are added after the load. A
/// re-import of the same dump into the same schema leaves the same rows (and writes none).
///
/// Environment: `LIMIT_COPY=text` copies in the text format instead (slower: figures in the .c file);
/// `LIMIT_MERGE=rewrite` rewrites every row and deletes and inserts every link of the staged issues (the plain form
/// of the statements; the same rows, slower into tables that hold rows); `LIMIT_PROFILE=1` prints each phase's time,
/// `LIMIT_EXPLAIN=1` each merge statement's plan (EXPLAIN ANALYZE), on standard error.
///
/// Returns the number of records, or -1 after printing the error on standard error.
int64_t postgres_limit_import(const char *dump_path, const char *url, const char *schema);

#endif
