# Sourced by shared-retains.sh and retain-counts.sh: records one import of N reference records (default 2000) under
# perf uprobes on the reference-counting functions named in $functions, each with its object (first argument) and
# the call stack, into "$out/perf.data". Needs root, perf and a kernel with uprobes. Arguments: [N] [binary]
# (without a binary, ImportBenchmarks is built in release mode). Sets count, bin and out ($OUT, else $default_out).
set -euo pipefail
count=${1:-2000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v perf >/dev/null || { echo "needs perf (apt-get install -y linux-perf)" >&2; exit 1; }
if [ $# -ge 2 ]; then
    bin=$2
else
    (cd "$here" && swift build -c release --product ImportBenchmarks >/dev/null)
    bin="$here/.build/release/ImportBenchmarks"
fi
out=${OUT:-$default_out}
mkdir -p "$out"
runtime=$(ldd "$bin" | awk '/libswiftCore.so/ {print $3}')
[ -n "$runtime" ] || { echo "cannot find libswiftCore.so in ldd $bin" >&2; exit 1; }
for function in $functions; do
    perf probe -q -d "probe_libswiftCore:$function" 2>/dev/null || true
    perf probe -q -x "$runtime" -a "$function object=%di:u64"
done
dump="$out/issues-$count.json"
[ -f "$dump" ] || "$bin" --write-dump "$dump" --count "$count"
rm -f "$out"/store.sqlite*
events=()
for function in $functions; do events+=(-e "probe_libswiftCore:$function"); done
perf record -q -g "${events[@]}" -o "$out/perf.data" \
    "$bin" --contender import --dump "$dump" --store "$out/store.sqlite" >/dev/null
for function in $functions; do perf probe -q -d "probe_libswiftCore:$function" || true; done
