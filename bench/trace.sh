#!/usr/bin/env bash
# bench/trace.sh: the slowdown of a syscall-heavy workload under `scry trace`
# next to `strace -f` and `perf trace`, measured side by side in one run.
#
# Workload: workloads/calls N (exactly N getppid system calls). Each tracer
# writes its full per-call output to a file (strace -f -o, perf trace -o,
# scry trace -o), so terminal speed does not count. For each: the median wall
# time of REPS interleaved runs; slowdown = traced / bare; the last lines
# print scry's time as a ratio to each peer's (below 1 means scry is faster).
#
# Usage: bench/trace.sh   (env REPS=5, CALLS=200000, SCRY_BIN=path to skip the build)
# Needs: strace (apt-get install -y strace), perf (linux-perf), cc.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$HOME/.cargo/bin:$PATH"
REPS=${REPS:-5}
CALLS=${CALLS:-200000}

for tool in perf strace cc; do
    command -v "$tool" >/dev/null || { echo "bench/trace.sh: $tool is missing (apt-get install -y strace linux-perf)" >&2; exit 2; }
done
if [ -n "${SCRY_BIN:-}" ]; then
    scry=$SCRY_BIN
else
    cargo build --release --locked --quiet
    scry=${CARGO_TARGET_DIR:-$repo/target}/release/scry
fi
calls=$("$repo/scripts/workload" calls)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

now() { date +%s.%N; }
run() { # name command...: appends one wall time to $out/name
    local name=$1; shift
    local t0 t1
    t0=$(now)
    "$@" >/dev/null 2>>"$out/$name.err"
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
}
div() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", a / b}'; }
median() { sort -g "$out/$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for _ in $(seq "$REPS"); do
    run bare "$calls" "$CALLS"
    run strace strace -f -o "$out/strace.txt" "$calls" "$CALLS"
    run perf perf trace -o "$out/perf.txt" -- "$calls" "$CALLS"
    run scry "$scry" trace -o "$out/scry.txt" -- "$calls" "$CALLS"
done

bare=$(median bare)
printf '%-12s %10s %10s\n' tracer "wall (s)" slowdown
for name in bare strace perf scry; do
    m=$(median "$name")
    printf '%-12s %10.3f %9.2fx\n' "$name" "$m" "$(div "$m" "$bare")"
done
lines() { grep -c 'getppid' "$out/$1" || true; }
echo "getppid lines written: strace $(lines strace.txt), perf $(lines perf.txt), scry $(lines scry.txt) (expected $CALLS)"
scry_m=$(median scry)
printf 'scry / strace -f: %.2f\n' "$(div "$scry_m" "$(median strace)")"
printf 'scry / perf trace: %.2f\n' "$(div "$scry_m" "$(median perf)")"
grep -h -i 'lost' "$out"/*.err | sort | uniq -c || true
