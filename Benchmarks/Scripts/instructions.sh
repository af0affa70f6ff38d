#!/usr/bin/env bash
# Counts the instructions of one decode of N reference records (default 20000) with callgrind: StoreDecoder
# (upsert into a new store) against Foundation's JSONDecoder into plain structs, and prints their ratio.
#
#   Benchmarks/Scripts/instructions.sh [N] [extra callgrind options, e.g. --branch-sim=yes]
#
# Wall times on the development machines drift by ±20% between runs; instruction counts do not (about ±0.5%), so they
# tell whether a change does less work. They do not see what makes an instruction slow (cache misses, atomic
# reference counting, mispredicted branches): check wall time with CodecBenchmarks too. With --branch-sim=yes or
# --cache-sim=yes, read the output files with callgrind_annotate.
set -euo pipefail
count=${1:-20000}
shift || true
extra=("$@")
here=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
# BIN=PATH counts another build (a CodecBenchmarks binary copied aside) instead of this checkout's.
if [ -n "${BIN:-}" ]; then
    bin=$BIN
else
    (cd "$here" && swift build -c release --product CodecBenchmarks >/dev/null)
    bin="$here/.build/release/CodecBenchmarks"
fi
dump="${TMPDIR:-/tmp}/codec-bench-$count.json"
# The benchmark writes its dump (IssueDumpGenerator, seed 42, 10% repeated ids) when it is missing.
[ -f "$dump" ] || "$bin" --count "$count" --rounds 1 >/dev/null
out="${TMPDIR:-/tmp}/codablestore-callgrind"
mkdir -p "$out"
# The functions whose instructions count, by exact mangled name (a pattern matching nested functions of the same
# name would toggle collection off inside them): StoreDecoder.decode(_:from:into:) and JSONDecoder.decode(_:from:).
# StoreDecoder runs on one thread here (parallelDecodingThreshold = nil): the parser thread of its default would
# not be counted (collection follows the calling thread), so the ratio is of the work, not of the wall time.
collect() {  # contender, function
    valgrind --tool=callgrind ${extra[@]+"${extra[@]}"} --callgrind-out-file="$out/$1.out" "--toggle-collect=$2" "$bin" \
        --contender "$1" --dump "$dump" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'
}
# StoreDecoder's module is CodableStoreCore since the split (CodableStore before): its name is read from the binary.
decode=$(nm "$bin" | sed -n 's/^[0-9a-f]* T \(\$s[0-9]*CodableStore[A-Za-z]*0B7DecoderC6decode_4from4intoxxm_20FoundationEssentials4DataVAA7ContextCtKSeRzlF\)$/\1/p' | head -1)
[ -n "$decode" ] || { echo "StoreDecoder.decode(_:from:into:) not found in $bin" >&2; exit 1; }
store=$(collect storedecoder-1thread "$decode")
json=$(collect jsondecoder '$s20FoundationEssentials11JSONDecoderC6decode_4fromxxm_AA4DataVtKSeRzlF')
printf 'decode %s records, instructions: StoreDecoder %s, JSONDecoder %s, ratio %s\n' "$count" "$store" "$json" \
    "$(awk -v a="$store" -v b="$json" 'BEGIN { printf "%.3f", a / b }')"
echo "profiles: $out/storedecoder-1thread.out, $out/jsondecoder.out (callgrind_annotate FILE)"
