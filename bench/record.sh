#!/usr/bin/env bash
# bench/record.sh: the probe effect of `scry record` next to `perf record`,
# measured in one run on the same machine (release build).
#
# 1. Sampling: workloads/cpu7525 (~1 s of CPU) bare, under `perf record -F 999
#    -g`, `scry record -F 999 -g`, and both at -F 20000. For each: the median
#    (of REPS runs, interleaved) wall time and CPU time (user+sys, which
#    /usr/bin/time takes from wait4: the recorder plus the workload it
#    reaped). "extra" is the difference to the bare workload, i.e. what
#    recording costs; the last lines give scry's extra as a ratio to perf's.
# 2. Tracepoint storm: `calls 1000000` (exactly 1M getppid syscalls) under
#    `-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit` with perf (default
#    buffer, and -m 1024 like scry's default) and scry: events recorded (as
#    `perf report --stats` counts them in each file), events lost as each
#    recorder reports them, and events missing against the exact expectation
#    (2M + the startup syscalls, counted by recording `calls 0`).
#
# Usage: bench/record.sh   (env REPS=5, ROUNDS=100 cpu7525 rounds, CALLS=1000000,
#                          SCRY_BIN=path to skip the release build)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$HOME/.cargo/bin:$PATH"
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-100}
CALLS=${CALLS:-1000000}

for tool in perf /usr/bin/time cc; do
    command -v "$tool" >/dev/null || { echo "bench/record.sh: $tool is missing; run scripts/deps" >&2; exit 2; }
done

if [ -n "${SCRY_BIN:-}" ]; then
    scry=$SCRY_BIN
else
    cargo build --release --locked --quiet
    scry=${CARGO_TARGET_DIR:-$repo/target}/release/scry
fi
cpu7525=$("$repo/scripts/workload" cpu7525)
calls=$("$repo/scripts/workload" calls)

tmp=$(mktemp -d /tmp/scry-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# measure NAME CMD...: run once, append "wall cpu" to $tmp/NAME.times.
measure() {
    local name=$1
    shift
    /usr/bin/time -f '%e %U %S' -o "$tmp/time.out" "$@" >/dev/null 2>"$tmp/$name.stderr" || {
        echo "bench/record.sh: '$*' failed:" >&2
        cat "$tmp/$name.stderr" >&2
        exit 1
    }
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$tmp/time.out" >>"$tmp/$name.times"
    rm -f "$tmp/$name.data" "$tmp/$name.data.old"
}

# median NAME COLUMN: the median of one column of $tmp/NAME.times.
median() {
    sort -n -k"$2" "$tmp/$1.times" | awk -v c="$2" '{ v[NR] = $c } END {
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

configs=(bare perf999 scry999 perf20000 scry20000)
declare -A label=(
    [bare]="bare workload"
    [perf999]="perf record -F 999 -g"
    [scry999]="scry record -F 999 -g"
    [perf20000]="perf record -F 20000 -g"
    [scry20000]="scry record -F 20000 -g"
)

echo "sampling: cpu7525 $ROUNDS rounds, median of $REPS interleaved runs, $(nproc) CPUs, $(uname -r)"
for ((rep = 0; rep < REPS; rep++)); do
    for c in "${configs[@]}"; do
        case $c in
            bare) measure "$c" "$cpu7525" "$ROUNDS" ;;
            perf*) measure "$c" perf record -q -F "${c#perf}" -g -o "$tmp/$c.data" -- "$cpu7525" "$ROUNDS" ;;
            scry*) measure "$c" "$scry" record -q -F "${c#scry}" -g -o "$tmp/$c.data" -- "$cpu7525" "$ROUNDS" ;;
        esac
    done
done

bare_wall=$(median bare 1)
bare_cpu=$(median bare 2)
declare -A extra_wall extra_cpu
echo
printf '%-28s %8s %8s %10s %10s\n' "cpu7525 (~1 s)" "wall s" "cpu s" "+wall s" "+cpu s"
for c in "${configs[@]}"; do
    w=$(median "$c" 1)
    u=$(median "$c" 2)
    extra_wall[$c]=$(awk -v a="$w" -v b="$bare_wall" 'BEGIN { printf "%.3f", a - b }')
    extra_cpu[$c]=$(awk -v a="$u" -v b="$bare_cpu" 'BEGIN { printf "%.3f", a - b }')
    if [ "$c" = bare ]; then
        printf '%-28s %8s %8s %10s %10s\n' "${label[$c]}" "$w" "$u" "" ""
    else
        printf '%-28s %8s %8s %+10.3f %+10.3f\n' "${label[$c]}" "$w" "$u" "${extra_wall[$c]}" "${extra_cpu[$c]}"
    fi
done
ratio() {
    awk -v s="$1" -v p="$2" 'BEGIN { if (p < 0.005) print "n/a (perf adds ~0)"; else printf "%.2fx\n", s / p }'
}
for hz in 999 20000; do
    printf 'scry extra / perf extra at -F %-6s wall %s, cpu %s\n' "$hz:" \
        "$(ratio "${extra_wall[scry$hz]}" "${extra_wall[perf$hz]}")" \
        "$(ratio "${extra_cpu[scry$hz]}" "${extra_cpu[perf$hz]}")"
done

# The tracepoint storm.
tp=(-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit)
perf record -q "${tp[@]}" -o "$tmp/startup.data" -- "$calls" 0 >/dev/null 2>&1
startup=$(perf report --stats -i "$tmp/startup.data" 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
expected=$((2 * CALLS + startup))

# storm NAME CMD...: run it, then print "wall cpu recorded lost".
storm() {
    local name=$1
    shift
    rm -f "$tmp/$name.times"
    /usr/bin/time -f '%e %U %S' -o "$tmp/time.out" "$@" >/dev/null 2>"$tmp/$name.stderr" || {
        echo "bench/record.sh: '$*' failed:" >&2
        cat "$tmp/$name.stderr" >&2
        exit 1
    }
    local wall_cpu recorded lost
    wall_cpu=$(awk '{ printf "%.2f %.2f", $1, $2 + $3 }' "$tmp/time.out")
    recorded=$(perf report --stats -i "$tmp/$name.data" 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
    case $name in
        # perf --stats: per event, "LOST_SAMPLES events: N" counts lost samples.
        perf*) lost=$(perf report --stats -i "$tmp/$name.data" 2>/dev/null |
            awk '/stats:$/ { ev = 1 } ev && /LOST_SAMPLES events:/ { n += $3 } END { print n + 0 }') ;;
        # scry's own summary: "[ scry record: N samples, L lost, ... ]".
        scry*) lost=$(sed -n 's/.*samples, \([0-9]*\) lost.*/\1/p' "$tmp/$name.stderr") ;;
    esac
    echo "$wall_cpu ${recorded:-0} ${lost:-?}"
    rm -f "$tmp/$name.data"
}

echo
echo "tracepoint storm: calls $CALLS under raw_syscalls:sys_enter + sys_exit, expected $expected events ($startup at startup)"
read -r bare_wall bare_cpu <<<"$(/usr/bin/time -f '%e %U %S' "$calls" "$CALLS" 2>&1 >/dev/null |
    awk '{ printf "%.2f %.2f", $1, $2 + $3 }')"
printf '%-34s %7s %7s %10s %10s %10s\n' "" "wall s" "cpu s" recorded lost missing
printf '%-34s %7s %7s\n' "bare workload" "$bare_wall" "$bare_cpu"
for run in "perf record (default -m)|perf|perf record -q ${tp[*]} -o $tmp/perf.data --" \
    "perf record -m 1024|perf1024|perf record -q -m 1024 ${tp[*]} -o $tmp/perf1024.data --" \
    "scry record|scry|$scry record ${tp[*]} -o $tmp/scry.data --"; do
    IFS='|' read -r name key cmd <<<"$run"
    # shellcheck disable=SC2086 # cmd is words
    read -r wall cpu recorded lost <<<"$(storm "$key" $cmd "$calls" "$CALLS")"
    printf '%-34s %7s %7s %10s %10s %10s\n' "$name" "$wall" "$cpu" "$recorded" "$lost" $((expected - recorded))
done
