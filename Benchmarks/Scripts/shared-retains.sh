#!/usr/bin/env bash
# Lists the objects that more than one thread of an import retains and releases, and who does it.
#
#   Benchmarks/Scripts/shared-retains.sh [N] [ImportBenchmarks binary]
#
# Swift's reference counting is an atomic read-modify-write of the object's first cache line: when two threads count
# the same object at the same time, that line moves between cores at every count (a contended retain and release
# cost about 6x an uncontended pair on the development machine). The import's three threads run on two cores, so
# any object all of them touch per record costs all of them. This counts every swift_retain and swift_release of one
# import of N reference records (default 2000: uprobes stop the program at each call, ~1 us apiece) per object and
# thread with perf uprobes (root, and a kernel with uprobes), and prints the objects with more than `MIN` (default
# 100) counts on each of two threads or more, busiest first, with the functions that count them on each thread.
# The calling thread (decoding) has the process id as thread id; the writer thread is made before the reader.
#
# A symptom to look for first: the per-thread CPU of an import pinned to one core (`taskset -c 0`) against the same
# import on two (IMPORT_BENCH_CPU=1). Data shared between the threads costs only on two.
functions="swift_retain swift_release"
default_out="${TMPDIR:-/tmp}/codablestore-shared-retains"
source "$(dirname "$0")/record-retains.sh"
perf script -i "$out/perf.data" -F tid,event,trace,ip,sym 2>/dev/null | MIN=${MIN:-100} python3 -c '
import collections, os, re, sys
minimum = int(os.environ["MIN"])
counts = collections.defaultdict(collections.Counter)     # object -> thread -> counts
callers = collections.defaultdict(collections.Counter)    # (object, thread) -> caller -> counts
runtime = ("swift_retain", "swift_release", "swift_bridgeObject", "doDecrementSlow", "swift_arrayDestroy")
pending = None
for line in sys.stdin:
    if "object=" in line:
        fields = line.split()
        thread, obj = fields[0], int(fields[-1].split("=")[1])
        # Null and tagged values are not counted atomically.
        pending = (obj, thread) if 0 < obj < 1 << 63 else None
        if pending: counts[obj][thread] += 1
    elif pending and line.strip():
        frame = line.split(None, 1)
        if len(frame) == 2 and not any(name in frame[1] for name in runtime):
            callers[pending][re.sub(r"\+0x[0-9a-f]+$", "", frame[1].strip())] += 1
            pending = None
shared = [(sorted(c.values())[-2], obj, c) for obj, c in counts.items() if len(c) > 1 and sorted(c.values())[-2] >= minimum]
totals = collections.Counter()
for c in counts.values(): totals.update(c)
print("counts per thread:", ", ".join(f"{t}: {n}" for t, n in totals.most_common()))
print(f"objects counted at least {minimum} times on each of two threads or more: {len(shared)}")
for _, obj, c in sorted(shared, reverse=True)[:20]:
    print(hex(obj), ", ".join(f"thread {t}: {n}" for t, n in c.most_common()))
    for thread in c:
        for caller, n in callers[(obj, thread)].most_common(2):
            print(f"    {thread} {n:7d}  {caller[:110]}")
'
