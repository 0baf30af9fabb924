#!/bin/sh
# bench/report.sh: scry report / scry flamegraph side by side with their
# peers on one system-wide recording, in one run; prints time, peak memory
# and the ratios.
#
# Usage: bench/report.sh [SECONDS=20] [FREQ=10000] [WORKLOAD=deep]
#   SCRY_BENCH_DATA=FILE   reuse an existing recording instead of making one
#   SCRY_BENCH_RECORDER=perf  record with perf instead of scry
#
# The recording: `scry record -a -F FREQ -g -- sleep SECONDS` with a busy
# workload on every CPU: about FREQ x CPUs x SECONDS samples (400k with the
# defaults on 2 CPUs). WORKLOAD is a workloads/ program: `deep` (the
# default: work 24-71 frames down, many distinct stacks, as real programs
# have; perf report's cost grows with depth) or `cpu7525` (4 frames).
# Each command then runs RUNS times (default 3) under /usr/bin/time -f
# '%e %M' (elapsed seconds, peak RSS in KiB), output to /dev/null; the
# medians are printed. Peers: `perf report --stdio` (children, the default for a -g
# file, and --no-children), `perf script | inferno-collapse-perf |
# inferno-flamegraph`, and FlameGraph's Perl scripts when installed
# (stackcollapse-perf.pl + flamegraph.pl on PATH, e.g. from a git clone;
# Debian has no package: skipped otherwise).
# Targets: scry report >= 20x faster than perf report with < 1/10 of its
# memory; scry flamegraph >= 10x faster than perf script + inferno.
set -eu

seconds=${1:-20}
freq=${2:-10000}
workload=${3:-deep}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/scry-bench-report.XXXXXX)
trap 'kill $(cat "$work/pids" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM

need() { command -v "$1" >/dev/null 2>&1 || { echo "bench/report.sh: $1 is missing ($2)" >&2; exit 2; }; }
need perf "apt-get install linux-perf"
[ -x /usr/bin/time ] || { echo "bench/report.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
need inferno-collapse-perf "cargo install inferno --locked"
need inferno-flamegraph "cargo install inferno --locked"

echo "building scry (release)..." >&2
(cd "$repo" && cargo build --release --quiet)
scry="$repo/target/release/scry"

data=${SCRY_BENCH_DATA:-}
if [ -z "$data" ]; then
    data="$work/perf.data"
    mkdir -p "$repo/target/workloads"
    cc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
        -o "$work/$workload" "$repo/workloads/$workload.c"
    ncpu=$(nproc)
    : > "$work/pids"
    i=0
    while [ "$i" -lt "$ncpu" ]; do
        "$work/$workload" 1000000000 & echo $! >> "$work/pids"
        i=$((i + 1))
    done
    echo "recording $seconds s system-wide at $freq Hz on $ncpu CPUs..." >&2
    if [ "${SCRY_BENCH_RECORDER:-scry}" = perf ]; then
        perf record -q -a -F "$freq" -g -o "$data" -- sleep "$seconds" 2>/dev/null
    else
        "$scry" record -q -a -F "$freq" -g -o "$data" -- sleep "$seconds"
    fi
    kill $(cat "$work/pids") 2>/dev/null || true
    : > "$work/pids"
fi
samples=$(perf report -i "$data" --stdio --no-children --sort comm 2>/dev/null | sed -n 's/^# Samples: \([^ ]*\).*/\1/p' | head -1)
origin="workload $workload"
[ -n "${SCRY_BENCH_DATA:-}" ] && origin="given"
echo "file: $data ($(du -h "$data" | cut -f1), $samples samples, $origin)"
echo

# Each command runs RUNS times (default 3: this VM's timings move ~20%
# between runs); the median time and the median peak memory are kept.
runs=${RUNS:-3}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# measure NAME COMMAND...: runs COMMAND (a shell string) $runs times,
# records "NAME seconds KiB" (medians) in $work/results.
measure() {
    name=$1; shift
    : > "$work/secs"; : > "$work/kibs"
    r=0
    while [ "$r" -lt "$runs" ]; do
        /usr/bin/time -f '%e %M' -o "$work/time" sh -c "$*" > /dev/null 2> "$work/err" || {
            echo "$name: failed:" >&2; cat "$work/err" >&2; return 0; }
        read -r secs kib < "$work/time"
        echo "$secs" >> "$work/secs"; echo "$kib" >> "$work/kibs"
        r=$((r + 1))
    done
    secs=$(median < "$work/secs"); kib=$(median < "$work/kibs")
    echo "$name $secs $kib" >> "$work/results"
    printf '%-38s %8.2f s %10d KiB\n' "$name" "$secs" "$kib"
}

# A pipeline's stages run at once, so its peak memory is (at most) the sum
# of the stages' peaks: we print the sum; time is wall clock of the whole.
measure_pipeline() {
    name=$1; shift
    i=0
    cmd=""
    for stage in "$@"; do
        i=$((i + 1))
        if [ -z "$cmd" ]; then
            cmd="/usr/bin/time -f '%M' -o $work/stage$i $stage"
        else
            cmd="$cmd | /usr/bin/time -f '%M' -o $work/stage$i $stage"
        fi
    done
    : > "$work/secs"; : > "$work/kibs"
    r=0
    while [ "$r" -lt "$runs" ]; do
        start=$(date +%s.%N)
        sh -c "$cmd" > /dev/null 2> "$work/err" || { echo "$name: failed:" >&2; cat "$work/err" >&2; return 0; }
        end=$(date +%s.%N)
        total_kib=0
        j=1
        while [ "$j" -le "$i" ]; do
            kib=$(tail -1 "$work/stage$j")
            total_kib=$((total_kib + kib))
            j=$((j + 1))
        done
        awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f\n", b - a }' >> "$work/secs"
        echo "$total_kib" >> "$work/kibs"
        r=$((r + 1))
    done
    secs=$(median < "$work/secs"); total_kib=$(median < "$work/kibs")
    echo "$name $secs $total_kib" >> "$work/results"
    printf '%-38s %8.2f s %10d KiB (sum of stages)\n' "$name" "$secs" "$total_kib"
}

: > "$work/results"
measure "perf report --stdio (children)" perf report -i "$data" --stdio
measure "perf report --stdio --no-children" perf report -i "$data" --stdio --no-children
measure "scry report --stdio (children)" "$scry" report -i "$data" --stdio
measure "scry report --stdio --no-children" "$scry" report -i "$data" --stdio --no-children
measure_pipeline "perf script | inferno (collapse+svg)" \
    "perf script -i $data" inferno-collapse-perf inferno-flamegraph
if command -v stackcollapse-perf.pl >/dev/null 2>&1 && command -v flamegraph.pl >/dev/null 2>&1; then
    measure_pipeline "perf script | FlameGraph perl" \
        "perf script -i $data" stackcollapse-perf.pl flamegraph.pl
else
    echo "(FlameGraph's Perl scripts not on PATH: skipped)"
fi
measure "scry flamegraph -i" "$scry" flamegraph -i "$data" -o "$work/scry.svg"

get() { awk -v n="$1" -F' ' '{ name=$0; sub(/ [^ ]+ [^ ]+$/, "", name); if (name == n) print $(NF-1), $NF }' "$work/results"; }
ratio() {
    # ratio PEER OURS: PEER time / OURS time and OURS mem / PEER mem
    set -- "$(get "$1")" "$(get "$2")" "$1" "$2"
    [ -n "$1" ] && [ -n "$2" ] || return 0
    echo "$1 $2" | awk -v peer="$3" -v ours="$4" '{
        t = ($3 > 0) ? $1 / $3 : 0; m = ($2 > 0) ? $4 / $2 : 0;
        printf "%-36s vs %-36s %6.1fx faster, %5.3f of the memory\n", ours, peer, t, m }'
}
echo
echo "ratios:"
ratio "perf report --stdio (children)" "scry report --stdio (children)"
ratio "perf report --stdio --no-children" "scry report --stdio --no-children"
ratio "perf script | inferno (collapse+svg)" "scry flamegraph -i"
ratio "perf script | FlameGraph perl" "scry flamegraph -i"
echo "targets: report >= 20x faster and < 0.1 of the memory; flamegraph >= 10x faster"
