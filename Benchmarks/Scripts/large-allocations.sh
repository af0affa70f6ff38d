#!/usr/bin/env bash
# Lists the large heap allocations a run makes (malloc, calloc, realloc, posix_memalign of MIN_BYTES or more, 128 KiB
# by default), grouped by where in the binary they come from, most frequent first.
#
#   Benchmarks/Scripts/large-allocations.sh BINARY [ARGUMENTS...]
#   e.g. Benchmarks/Scripts/large-allocations.sh .build/release/ImportBenchmarks --contender import \
#            --dump /tmp/dump.json --store /tmp/store.sqlite
#
# Why: glibc serves allocations from 128 KiB up with mmap, and raises that threshold to the size of each such block
# freed; allocations of that size afterwards come from the heap and can leave it in pieces, which shows as a peak RSS
# above what malloc has in use (ImportBenchmarks prints both with IMPORT_BENCH_MEMORY=1). An array grown, copied and
# freed again and again at that size is the usual cause (the identity filter's bitmap once was: see Benchmarks/README,
# twentieth session). A shim preloaded into the process logs each such call with its stack; frames in BINARY are
# named with addr2line and swift demangle.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARY [ARGUMENTS...]" >&2; exit 2; }
bin=$(readlink -f "$1")
shift
min=${MIN_BYTES:-131072}
work=$(mktemp -d "${TMPDIR:-/tmp}/large-allocations.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/shim.c" <<C
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static __thread int busy;
static void note(const char *what, size_t size) {
    if (busy) return;
    busy = 1;
    void *frames[10];
    int count = backtrace(frames, 10), length;
    char line[1024];
    length = snprintf(line, sizeof line, "%s %zu", what, size);
    for (int i = 2; i < count && length < 900; i++) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname && strcmp(info.dli_fname, "$bin") == 0)
            length += snprintf(line + length, sizeof line - length, " 0x%lx", (unsigned long)((char *)frames[i] - (char *)info.dli_fbase));
        else
            length += snprintf(line + length, sizeof line - length, " %s", info.dli_sname ? info.dli_sname : "?");
    }
    line[length++] = '\n';
    (void)!write(2, line, length);
    busy = 0;
}
void *malloc(size_t size) { void *p = __libc_malloc(size); if (size >= $min) note("malloc", size); return p; }
void *calloc(size_t n, size_t size) { void *p = __libc_calloc(n, size); if (n * size >= $min) note("calloc", n * size); return p; }
void *realloc(void *old, size_t size) { void *p = __libc_realloc(old, size); if (size >= $min) note("realloc", size); return p; }
int posix_memalign(void **out, size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    if (!p) return 12;
    *out = p;
    if (size >= $min) note("posix_memalign", size);
    return 0;
}
C
cc -O2 -shared -fPIC -o "$work/shim.so" "$work/shim.c" -ldl
# The program's own standard error goes to the log too: its lines do not start with an allocator's name.
LD_PRELOAD="$work/shim.so" "$bin" "$@" 2>"$work/log" >/dev/null || true
grep -E '^(malloc|calloc|realloc|posix_memalign) ' "$work/log" >"$work/calls" || { echo "no allocation of $min bytes or more"; exit 0; }
echo "$(wc -l <"$work/calls") allocations of $min bytes or more; by call site (count, largest, frames):"
# A call site is its frames; sizes are summed per site.
awk '{ site = ""; for (i = 3; i <= NF; i++) site = site " " $i; count[site]++; if ($2 > largest[site]) largest[site] = $2 }
     END { for (site in count) printf "%d %d%s\n", count[site], largest[site], site }' "$work/calls" | sort -rn |
while read -r count largest frames; do
    named=""
    for frame in $frames; do
        if [[ $frame == 0x* ]]; then
            frame=$(addr2line -f -e "$bin" "$frame" | head -1 | swift demangle --simplified 2>/dev/null | cut -c1-80)
        fi
        named+="  <- $frame"
    done
    printf '%6d x, up to %9d bytes%s\n' "$count" "$largest" "$named"
done
