#!/usr/bin/env bash
# Counts the instructions of one import of N reference records (default 100000) into a new store with callgrind, per
# thread (reading, decoding, writing), and keeps the profiles for callgrind_annotate.
#
#   Benchmarks/Scripts/import-instructions.sh [N] [ImportBenchmarks binary]
#
# Wall times of an import on the development machines move by ±15% from run to run, and the import is bound by the
# CPU of its three threads on two cores: instruction counts (stable to a fraction of a percent for the same binary
# and input) tell whether a change does less work, and which thread does it. They do not see what makes an
# instruction slow (cache misses at 1M rows, atomics): check wall time too (ImportBenchmarks, alternating runs).
# Give a second binary (a build of another commit, copied aside) to compare two builds on the same dump.
# CONTENDER=import-plain counts the import that decodes every record (skipsUnchangedRecords off); REIMPORT=1 counts a
# re-import of the dump into the store its import (not counted) made; OUT=DIR keeps the files apart from another run.
set -euo pipefail
count=${1:-100000}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
if [ $# -ge 2 ]; then
    bin=$2
else
    (cd "$here" && swift build -c release --product ImportBenchmarks >/dev/null)
    bin="$here/.build/release/ImportBenchmarks"
fi
contender=${CONTENDER:-import}
out=${OUT:-"${TMPDIR:-/tmp}/codablestore-import-callgrind"}
mkdir -p "$out"
# valgrind 3.19 gives up on the full debug information of this binary ("possibly corrupted debuginfo"): a copy
# without it keeps the symbols, which is all callgrind_annotate needs.
strip -g -o "$out/ImportBenchmarks" "$bin" 2>/dev/null || llvm-strip -g -o "$out/ImportBenchmarks" "$bin"
dump="$out/issues-$count.json"
[ -f "$dump" ] || "$bin" --write-dump "$dump" --count "$count"
rm -f "$out"/store.sqlite* "$out"/import.out*
what=import
if [ "${REIMPORT:-0}" = 1 ]; then
    "$out/ImportBenchmarks" --contender "$contender" --dump "$dump" --store "$out/store.sqlite" >/dev/null 2>&1
    what=re-import
fi
total=$(valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/import.out" "$out/ImportBenchmarks" \
    --contender "$contender" --dump "$dump" --store "$out/store.sqlite" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
printf '%s (%s) of %s records, instructions: %s in all\n' "$what" "$contender" "$count" "$total"
# The first thread is the calling one (decoding); of the others, the one that runs yajl reads, the other writes.
for profile in "$out"/import.out-*; do
    summary=$(callgrind_annotate "$profile" 2>/dev/null)
    instructions=$(sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' <<<"$summary")
    if [ "$profile" = "$out/import.out-01" ]; then role=decoding
    elif grep -q 'yajl_parse' <<<"$summary"; then role=reading
    else role=writing; fi
    printf '  %-8s %15s  %s\n' "$role" "$instructions" "$profile"
done
