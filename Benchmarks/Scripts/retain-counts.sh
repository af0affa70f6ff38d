#!/usr/bin/env bash
# Counts the reference-counting operations of an import's decoding thread per record, by the function that makes them.
#
#   Benchmarks/Scripts/retain-counts.sh [N] [ImportBenchmarks binary]
#
# A retain or release of an object is an atomic read-modify-write of its header, about 10 ns on the development
# machine, and they were 41% of the decoding thread's samples at 1M records (perf) while callgrind put them at 17% of
# its instructions: count them, not instructions, to see what a change spares. This probes swift_retain,
# swift_release and their bridge-object variants with perf uprobes (root, a kernel with uprobes) during one import
# of N reference records (default 2000, ~1 minute), keeps the calls on the calling thread (the decoding thread: its
# id is the process id) whose argument is a real object (null and tagged values cost no atomic operation), and prints
# them per record, in all and by the first caller outside the runtime (a closure's or an inlined function's count goes
# to the function it was compiled into). The same binary and dump give the same counts within about 1%.
#
# To see which values a function retains, mark it `@_assemblyVision` and build release: the compiler then reports each
# retain and release it left in, with the type and the source position (as remarks in the build output).
functions="swift_retain swift_release swift_bridgeObjectRetain swift_bridgeObjectRelease"
default_out="${TMPDIR:-/tmp}/codablestore-retain-counts"
source "$(dirname "$0")/record-retains.sh"
perf script -i "$out/perf.data" -F pid,tid,event,trace,ip,sym 2>/dev/null | COUNT=$count python3 -c '
import collections, os, re, subprocess, sys
records = int(os.environ["COUNT"])
runtime = ("swift_retain", "swift_release", "swift_bridgeObject", "doDecrementSlow", "_swift_release_dealloc")
totals, callers = collections.Counter(), collections.Counter()
pending = None  # the operation whose caller is still to be found in the stack that follows
for line in sys.stdin:
    if not line.startswith("\t"):
        pending = None
        match = re.match(r"\s*(\d+)/(\d+)\s+probe_libswiftCore:(\w+):.*object=(0x[0-9a-f]+|\d+)", line)
        if match and match.group(1) == match.group(2) and 0 < int(match.group(4), 0) < 1 << 56:
            pending = match.group(3)
            totals[pending] += 1
    elif pending and line.strip() and not any(name in line for name in runtime):
        frame = line.split(None, 1)[1].strip()  # "symbol+0xoffset (library)" after the address
        callers[re.sub(r"(\+0x[0-9a-f]+)? \([^()]*\)$", "", frame)] += 1
        pending = None
names = sorted(callers)
demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                           capture_output=True, text=True).stdout.split("\n")
readable = dict(zip(names, demangled))
print(f"decoding thread, per record: {sum(totals.values()) / records:.1f} in all; "
      + ", ".join(f"{name} {n / records:.1f}" for name, n in totals.most_common()))
for name, n in callers.most_common(int(os.environ.get("TOP", "30"))):
    print(f"{n / records:8.2f}  {readable.get(name, name)[:130]}")
'
rm -f "$out/perf.data"
