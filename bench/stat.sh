#!/usr/bin/env bash
# bench/stat.sh: what `scry stat` adds to a syscall-heavy workload, next to
# `perf stat` with the same events, measured in one run (release build).
#
# The workload is workloads/calls (exactly CALLS getppid syscalls). Each
# configuration runs REPS times, interleaved: the bare workload, then under
# `perf stat` and `scry stat` with
#   1. -e 'syscalls:sys_enter_*'  (every syscall-entry tracepoint, ~360 counters)
#   2. the default event set      (task-clock, page-faults, ... no -e)
# Three medians per configuration:
#   - workload wall / cpu: measured around the workload itself by a wrapper
#     inside the counted command (bash's $EPOCHREALTIME, /usr/bin/time's
#     user+sys). The difference to the bare workload is the probe effect:
#     what counting costs the program being measured.
#   - command wall: the whole `perf stat ...` / `scry stat ...` command,
#     start-up (tracefs, opening counters) and tear-down included. Closing
#     the last counter of a tracepoint waits for an RCU grace period under
#     the kernel's event_mutex (~33 ms here, so ~12 s for 360 tracepoints,
#     for both tools): that cost is the kernel's; scry prints its counts
#     before paying it.
# The last lines give scry's extra as a ratio to perf's (target: <= 1.0).
# Both tools must first agree on syscalls:sys_enter_getppid (= CALLS).
#
# Usage: bench/stat.sh   (env REPS=5, CALLS=1000000, SCRY_BIN=path to skip the build)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$HOME/.cargo/bin:$PATH"
REPS=${REPS:-5}
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

# The wrapper inside the counted command: writes "wall cpu" of "$@" to $1.
cat >"$tmp/timed" <<'WRAPPER'
#!/usr/bin/env bash
out=$1
shift
start=$EPOCHREALTIME
/usr/bin/time -f '%U %S' -o "$out.cpu" "$@"
end=$EPOCHREALTIME
awk -v s="$start" -v e="$end" '{ printf "%.4f %.3f", e - s, $1 + $2 }' "$out.cpu" >"$out"
WRAPPER
chmod +x "$tmp/timed"

# measure NAME TOOL...: run TOOL... -- timed calls CALLS once; append
# "workload_wall workload_cpu command_wall" to $tmp/NAME.times.
measure() {
    local name=$1
    shift
    local start end
    start=$(date +%s%N)
    "$@" "$tmp/timed" "$tmp/inner" "$calls" "$CALLS" >/dev/null 2>"$tmp/$name.stderr" || {
        echo "bench/stat.sh: '$*' failed:" >&2
        cat "$tmp/$name.stderr" >&2
        exit 1
    }
    end=$(date +%s%N)
    echo "$(cat "$tmp/inner") $(awk -v ns=$((end - start)) 'BEGIN { printf "%.4f", ns / 1e9 }')" >>"$tmp/$name.times"
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

ntp=$(find /sys/kernel/tracing/events/syscalls -maxdepth 1 -name 'sys_enter_*' 2>/dev/null | wc -l)
echo "stat: calls $CALLS (getppid), median of $REPS interleaved runs, $(nproc) CPUs, $(uname -r)"
echo "both count syscalls:sys_enter_getppid = $CALLS; 'syscalls:sys_enter_*' is $ntp tracepoints"
for ((rep = 0; rep < REPS; rep++)); do
    for c in "${configs[@]}"; do
        case $c in
            bare) measure "$c" env ;;
            perf_tp) measure "$c" perf stat -e 'syscalls:sys_enter_*' -- ;;
            scry_tp) measure "$c" "$scry" stat -e 'syscalls:sys_enter_*' -- ;;
            perf_default) measure "$c" perf stat -- ;;
            scry_default) measure "$c" "$scry" stat -- ;;
        esac
    done
done

declare -A extra
printf '\n%-38s %16s %16s %16s\n' "" "workload wall s" "workload cpu s" "command wall s"
for c in "${configs[@]}"; do
    line=$(printf '%-38s' "${label[$c]}")
    for col in 1 2 3; do
        v=$(median "$c" $col)
        b=$(median bare $col)
        extra[$c.$col]=$(awk -v a="$v" -v b="$b" 'BEGIN { printf "%.4f", a - b }')
        if [ "$c" = bare ]; then
            line+=$(printf ' %16s' "$v")
        else
            line+=$(printf ' %16s' "$v ($(awk -v e="${extra[$c.$col]}" 'BEGIN { printf "%+.3f", e }'))")
        fi
    done
    echo "$line"
done
ratio() {
    awk -v s="$1" -v p="$2" 'BEGIN { if (p < 0.005) print "n/a (perf adds ~0)"; else printf "%.2f\n", s / p }'
}
echo
echo "scry extra / perf extra (<= 1.0: scry costs no more than perf)"
for kind in tp default; do
    printf '  %-9s workload wall %s, workload cpu %s, command wall %s\n' "$kind:" \
        "$(ratio "${extra[scry_$kind.1]}" "${extra[perf_$kind.1]}")" \
        "$(ratio "${extra[scry_$kind.2]}" "${extra[perf_$kind.2]}")" \
        "$(ratio "${extra[scry_$kind.3]}" "${extra[perf_$kind.3]}")"
done
