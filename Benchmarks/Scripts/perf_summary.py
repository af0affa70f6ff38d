#!/usr/bin/env python3
"""Summarizes `perf script -F ip,sym` output: where the samples of a window of the program go.

    perf record -F 2500 --call-graph dwarf,16384 -o /tmp/perf.data <benchmark child command>
    perf script -i /tmp/perf.data -F ip,sym > /tmp/stacks.txt
    Scripts/perf_summary.py /tmp/stacks.txt --window decodeEntityArray          # inclusive and self shares
    Scripts/perf_summary.py /tmp/stacks.txt --window Context.flush --children   # what a function calls

--window keeps the samples whose stack contains a frame with that text (demangled); shares are of those
samples. --children lists, for the outermost frame matching --window, the function it calls directly.
Symbols are demangled with `swift demangle`.

An import runs on three threads (see Importer): to see one of them, record its thread ids too and pick one:

    perf script -i /tmp/perf.data -F tid,ip,sym > /tmp/stacks.txt
    Scripts/perf_summary.py /tmp/stacks.txt --threads                 # samples per thread id
    Scripts/perf_summary.py /tmp/stacks.txt --thread 9724             # the calling (decoding) thread: the process id
"""
import argparse, collections, subprocess

parser = argparse.ArgumentParser()
parser.add_argument("stacks")
parser.add_argument("--window", default="")
parser.add_argument("--children", action="store_true")
parser.add_argument("--top", type=int, default=40)
parser.add_argument("--thread", type=int, help="only the samples of this thread id (needs `-F tid,ip,sym`)")
parser.add_argument("--threads", action="store_true", help="count the samples of each thread id, and stop")
args = parser.parse_args()

# A sample is its frames, innermost first, after a line of its own with the thread id when the script printed it.
samples, current, thread, threads = [], [], None, collections.Counter()
def finish():
    global current
    if current:
        threads[thread] += 1
        if args.thread is None or thread == args.thread: samples.append(current)
    current = []
for line in open(args.stacks, errors="replace"):
    if not line.strip():
        finish()
        continue
    if not line.startswith("\t"):  # frames start with a tab; the line before them names the thread
        finish()
        first = line.split()[0]
        thread = int(first) if first.isdigit() else None
        continue
    parts = line.strip().split(None, 1)
    current.append((parts[1] if len(parts) > 1 else parts[0]).rsplit(" (", 1)[0])
finish()
if args.threads:
    for tid, count in threads.most_common(): print(f"{count:8d} samples  thread {tid}")
    raise SystemExit

symbols = sorted({frame for sample in samples for frame in sample})
demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(symbols),
                           capture_output=True, text=True).stdout.split("\n")
name = dict(zip(symbols, demangled))
stacks = [[name.get(frame, frame) for frame in sample] for sample in samples]
window = [stack for stack in stacks if not args.window or any(args.window in frame for frame in stack)]
print(f"{len(window)} of {len(stacks)} samples")
if not window: raise SystemExit
if args.children:
    skipped = ("closure", "partial apply", "thunk", "specialized closure", "outlined")
    counts = collections.Counter()
    for stack in window:
        outer = max(i for i, frame in enumerate(stack) if args.window in frame)
        i = outer - 1
        while i >= 0 and stack[i].startswith(skipped): i -= 1
        counts[stack[i] if i >= 0 else "(self)"] += 1
    for frame, count in counts.most_common(args.top): print(f"{100 * count / len(window):5.1f}% {frame[:150]}")
else:
    inclusive, leaf = collections.Counter(), collections.Counter()
    for stack in window:
        for frame in set(stack): inclusive[frame] += 1
        leaf[stack[0]] += 1
    print("-- inclusive")
    for frame, count in inclusive.most_common(args.top): print(f"{100 * count / len(window):5.1f}% {frame[:150]}")
    print("-- self")
    for frame, count in leaf.most_common(args.top): print(f"{100 * count / len(window):5.1f}% {frame[:150]}")
