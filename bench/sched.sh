#!/usr/bin/env bash
# bench/sched.sh: the probe effect of scheduler tracing, side by side in one
# run (release build): `perf bench sched messaging` alone, under
# `perf sched record -a`, under `scry profile -a` (every default hook:
# sched, syscalls, irq, page faults, stacks on sched_switch, switch records)
# and under `scry sched runqlat -a` (sched events only: the like-for-like
# peer of perf sched). Each is run ROUNDS times, interleaved; the slowdown
# is the median of the workload's own "Total time" over the median alone.
# Also the events each tracer lost (perf: PERF_RECORD_LOST in its file;
# scry: the per-CPU lost counts it reports). Prints scry/perf ratios
# (target <= 1.0).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
ROUNDS=${ROUNDS:-3}
GROUPS_=${GROUPS_:-10}
LOOPS=${LOOPS:-300}
cargo build --release --locked -q
scry=$repo/target/release/scry
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench=(perf bench sched messaging -g "$GROUPS_" -l "$LOOPS")

total_time() { # file with the bench's output -> seconds
    awk '/Total time:/ { print $3 }' "$1" | tail -1
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

declare -A times lost
run_one() { # name
    local name=$1 out=$work/$1.out
    case $name in
    alone) "${bench[@]}" >"$out" 2>&1 ;;
    perf)
        perf sched record -a -o "$work/perf.data" -- "${bench[@]}" >"$out" 2>"$work/perf.err"
        lost[$name]=$(( ${lost[$name]:-0} + $(perf script -D -i "$work/perf.data" 2>/dev/null |
            awk '/PERF_RECORD_LOST/ { for (i = 1; i <= NF; i++) if ($i == "lost") s += $(i + 1) } END { print s + 0 }') ))
        ;;
    scry-profile)
        "$scry" profile -a --format json -o "$work/profile.json" -- "${bench[@]}" >"$out" 2>&1
        lost[$name]=$(( ${lost[$name]:-0} + $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(c["lost"] for c in r["cpus"]))' "$work/profile.json") ))
        ;;
    scry-runqlat)
        "$scry" sched runqlat -a --format json -o "$work/runqlat.json" -- "${bench[@]}" >"$out" 2>&1
        lost[$name]=$(( ${lost[$name]:-0} + $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["lost"])' "$work/runqlat.json") ))
        ;;
    esac
    times[$name]="${times[$name]:-} $(total_time "$out")"
}

names=(alone perf scry-profile scry-runqlat)
for _ in $(seq "$ROUNDS"); do
    for name in "${names[@]}"; do run_one "$name"; done
done

echo "perf bench sched messaging -g $GROUPS_ -l $LOOPS, $ROUNDS rounds, $(nproc) CPUs, medians"
declare -A med
for name in "${names[@]}"; do
    med[$name]=$(echo "${times[$name]}" | tr ' ' '\n' | grep . | median)
done
for name in "${names[@]}"; do
    slow=$(awk -v t="${med[$name]}" -v b="${med[alone]}" 'BEGIN { printf "%.2f", t / b }')
    printf "%-14s %7.3f s  slowdown %5sx  lost %s\n" "$name" "${med[$name]}" "$slow" "${lost[$name]:-0}"
done
for name in scry-profile scry-runqlat; do
    awk -v s="${med[$name]}" -v p="${med[perf]}" -v b="${med[alone]}" -v n="$name" 'BEGIN {
        ps = p - b; ss = s - b;
        printf "%s / perf sched record: time %.2fx, added time %.2fx\n", n, s / p, (ps > 0 ? ss / ps : 0) }'
done
