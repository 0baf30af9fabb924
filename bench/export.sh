#!/bin/sh
# bench/export.sh: each `scry convert --to FORMAT` of one large recording
# against `scry report` on the same file; prints time, peak memory and the
# ratio to report (the goal: every export within 2x).
#
# Usage: bench/export.sh [SECONDS=20] [FREQ=10000] [WORKLOAD=deep]
#   SCRY_BENCH_DATA=FILE   reuse an existing recording instead of making one
#   RUNS=N                 runs per command (default 3; medians printed)
#   SCRY_BIN=PATH          time this scry binary instead of building a release one
#
# The recording: bench/bench_data.sh's (400k samples with the defaults on
# 2 CPUs, plus the switches, so chrome-trace has a timeline to write). Output goes
# to standard output (`-o -`), sent to /dev/null.
set -eu

seconds=${1:-20}
freq=${2:-10000}
workload=${3:-deep}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/scry-bench-export.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
[ -x /usr/bin/time ] || { echo "bench/export.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

scry=${SCRY_BIN:-}
if [ -z "$scry" ]; then
    echo "building scry (release)..." >&2
    (cd "$repo" && cargo build --release --quiet)
    scry="$repo/target/release/scry"
fi

data=${SCRY_BENCH_DATA:-}
if [ -z "$data" ]; then
    data="$work/perf.data"
    "$repo/bench/bench_data.sh" "$scry" "$data" "$seconds" "$freq" "$workload"
fi
echo "file: $data ($(du -h "$data" | cut -f1))"
"$scry" report -i "$data" --stdio --no-children -g none 2>/dev/null | sed -n 's/^# Samples: /samples: /p'
echo

runs=${RUNS:-3}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# measure NAME COMMAND...: the median time and peak memory of $runs runs.
measure() {
    name=$1; shift
    : > "$work/secs"; : > "$work/kibs"; : > "$work/cpus"
    r=0
    while [ "$r" -lt "$runs" ]; do
        /usr/bin/time -f '%e %U %S %M' -o "$work/time" sh -c "$*" > /dev/null 2> "$work/err" || {
            echo "$name: failed:" >&2; cat "$work/err" >&2; return 0; }
        read -r secs user sys kib < "$work/time"
        echo "$secs" >> "$work/secs"; echo "$kib" >> "$work/kibs"
        awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }' >> "$work/cpus"
        r=$((r + 1))
    done
    secs=$(median < "$work/secs"); kib=$(median < "$work/kibs"); cpu=$(median < "$work/cpus")
    if [ -z "${base:-}" ]; then
        base=$secs base_cpu=$cpu
        printf '%-40s %8.2f s wall %7.2f s CPU %10d KiB\n' "$name" "$secs" "$cpu" "$kib"
    else
        ratio=$(awk -v a="$secs" -v b="$base" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        cratio=$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 2 ? "ok" : "over 2x") }')
        printf '%-40s %8.2f s wall %7.2f s CPU %10d KiB  %5sx report (CPU %sx)  %s\n' "$name" "$secs" "$cpu" "$kib" "$ratio" "$cratio" "$verdict"
    fi
}

base=
measure "scry report --stdio --no-children" "$scry" report -i "$data" --stdio --no-children
for format in pprof firefox speedscope chrome-trace folded; do
    measure "scry convert --to $format" "$scry" convert -i "$data" --to "$format" -o -
done
