#!/usr/bin/env bash
# bench/stat.sh: what `scry stat` adds to a syscall-heavy workload, next to
# `perf stat` with the same events, measured in one run (release build).
#
# The workload is workloads/calls (exactly CALLS getppid syscalls). Each
# configuration runs REPS times, interleaved: the bare workload, then under
# `perf stat` and `scry stat` with
#   1. -e 'syscalls:sys_enter_*'  (every syscall-entry tracepoint, ~350 counters)
#   2. the default event set      (task-clock, page-faults, ... no -e)
# For each: the median wall time (date +%s%N around the command, so tool
# start-up and tear-down count) and CPU time (user+sys from /usr/bin/time,
# the tool plus the workload it reaped). "extra" is the difference to the
# bare workload: what counting costs. The last lines give scry's extra as a
# ratio to perf's (target: <= 1.0). Both tools must also agree on the count
# of syscalls:sys_enter_getppid (= CALLS), checked once.
#
# Usage: bench/stat.sh   (env REPS=7, CALLS=1000000, SCRY_BIN=path to skip the build)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$HOME/.cargo/bin:$PATH"
REPS=${REPS:-7}
CALLS=${CALLS:-1000000}

for tool in perf /usr/bin/time cc; do
    command -v "$tool" >/dev/null || { echo "bench/stat.sh: $tool is missing; run scripts/deps" >&2; exit 2; }
done

if [ -n "${SCRY_BIN:-}" ]; then
    scry=$SCRY_BIN
else
    cargo build --release --locked --quiet
    scry=${CARGO_TARGET_DIR:-$repo/target}/release/scry
fi
calls=$("$repo/scripts/workload" calls)

tmp=$(mktemp -d /tmp/scry-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# measure NAME CMD...: run once, append "wall cpu" (seconds) to $tmp/NAME.times.
measure() {
    local name=$1
    shift
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$tmp/time.out" "$@" >/dev/null 2>"$tmp/$name.stderr" || {
        echo "bench/stat.sh: '$*' failed:" >&2
        cat "$tmp/$name.stderr" >&2
        exit 1
    }
    end=$(date +%s%N)
    awk -v ns=$((end - start)) '{ printf "%.4f %.3f\n", ns / 1e9, $1 + $2 }' "$tmp/time.out" >>"$tmp/$name.times"
}

# median NAME COLUMN: the median of one column of $tmp/NAME.times.
median() {
    sort -n -k"$2" "$tmp/$1.times" | awk -v c="$2" '{ v[NR] = $c } END {
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Both tools count the same thing first.
getppid() {
    "$@" -x, -e syscalls:sys_enter_getppid -- "$calls" "$CALLS" 2>&1 >/dev/null |
        awk -F, '/sys_enter_getppid/ { print $1 }'
}
perf_count=$(getppid perf stat)
scry_count=$(getppid "$scry" stat)
if [ "$perf_count" != "$CALLS" ] || [ "$scry_count" != "$CALLS" ]; then
    echo "bench/stat.sh: counts differ: expected $CALLS, perf $perf_count, scry $scry_count" >&2
    exit 1
fi

configs=(bare perf_tp scry_tp perf_default scry_default)
declare -A label=(
    [bare]="bare workload"
    [perf_tp]="perf stat -e 'syscalls:sys_enter_*'"
    [scry_tp]="scry stat -e 'syscalls:sys_enter_*'"
    [perf_default]="perf stat (default events)"
    [scry_default]="scry stat (default events)"
)

ntp=$(ls -d /sys/kernel/tracing/events/syscalls/sys_enter_* 2>/dev/null | wc -l)
echo "stat: calls $CALLS (getppid), median of $REPS interleaved runs, $(nproc) CPUs, $(uname -r)"
echo "both count syscalls:sys_enter_getppid = $CALLS; 'syscalls:sys_enter_*' is $ntp tracepoints"
for ((rep = 0; rep < REPS; rep++)); do
    for c in "${configs[@]}"; do
        case $c in
            bare) measure "$c" "$calls" "$CALLS" ;;
            perf_tp) measure "$c" perf stat -e 'syscalls:sys_enter_*' -- "$calls" "$CALLS" ;;
            scry_tp) measure "$c" "$scry" stat -e 'syscalls:sys_enter_*' -- "$calls" "$CALLS" ;;
            perf_default) measure "$c" perf stat -- "$calls" "$CALLS" ;;
            scry_default) measure "$c" "$scry" stat -- "$calls" "$CALLS" ;;
        esac
    done
done

bare_wall=$(median bare 1)
bare_cpu=$(median bare 2)
declare -A extra_wall extra_cpu
echo
printf '%-40s %8s %8s %10s %10s\n' "" "wall s" "cpu s" "+wall s" "+cpu s"
for c in "${configs[@]}"; do
    w=$(median "$c" 1)
    u=$(median "$c" 2)
    extra_wall[$c]=$(awk -v a="$w" -v b="$bare_wall" 'BEGIN { printf "%.4f", a - b }')
    extra_cpu[$c]=$(awk -v a="$u" -v b="$bare_cpu" 'BEGIN { printf "%.3f", a - b }')
    if [ "$c" = bare ]; then
        printf '%-40s %8s %8s\n' "${label[$c]}" "$w" "$u"
    else
        printf '%-40s %8s %8s %+10.4f %+10.3f\n' "${label[$c]}" "$w" "$u" "${extra_wall[$c]}" "${extra_cpu[$c]}"
    fi
done
ratio() {
    awk -v s="$1" -v p="$2" 'BEGIN { if (p < 0.002) print "n/a (perf adds ~0)"; else printf "%.2f\n", s / p }'
}
echo
for kind in tp default; do
    printf 'scry extra / perf extra, %-8s wall %s, cpu %s\n' "$kind:" \
        "$(ratio "${extra_wall[scry_$kind]}" "${extra_wall[perf_$kind]}")" \
        "$(ratio "${extra_cpu[scry_$kind]}" "${extra_cpu[perf_$kind]}")"
done
