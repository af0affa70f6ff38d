#ifndef LIMIT_IMPORTER_H
#define LIMIT_IMPORTER_H

#include <stdint.h>

/// The limit baseline of the import benchmark: what a hand-written C program does with the reference dump, as
/// fast as it can. yajl's callback parser reads the dump in 64 KiB chunks into fixed structs; batches of 64
/// records are written with cached multi-row upserts (64 rows a statement) in one transaction, into the minimal
/// schema (users, labels and issues keyed by their integer id as INTEGER PRIMARY KEY; issue_labels(issue_id,
/// label_id) WITHOUT ROWID). A record's labels replace its links; a later record of the same id wins.
///
/// `wal`: 1 for WAL (as CodableStore's stores), 0 for a rollback journal. Returns the number of records, or -1
/// after printing the error on standard error.
int64_t limit_import(const char *dump_path, const char *store_path, int wal);

#endif
