#!/usr/bin/env bash
# bench/sched.sh: the probe effect of scheduler tracing, side by side in one
# run (release build): `perf bench sched messaging` alone, under
# `perf sched record -a`, under `scry profile -a` (the full default profile:
# sched events, with stacks on the sched_switch switch-outs where a task
# blocks, and switch records through perf rings; system calls, page faults
# and irqs summed in the kernel by BPF),
# under `scry profile -a --no-bpf` (the same profile with every event
# streamed through perf rings: the fallback, and the figure before BPF) and
# under `scry sched runqlat -a` (sched events only: the like-for-like peer
# of perf sched). Each is run ROUNDS times, interleaved; the slowdown is the
# median of the workload's own "Total time" over the median alone. Also the
# events each tracer lost (perf: PERF_RECORD_LOST in its file; scry: the
# per-CPU lost counts it reports, plus in-kernel pairs a full BPF map could
# not count). Prints scry/perf ratios (target <= 1.0).
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
    scry-profile | scry-nobpf)
        local flags=()
        [ "$name" = scry-nobpf ] && flags=(--no-bpf)
        "$scry" profile -a "${flags[@]}" --format json -o "$work/$name.json" -- "${bench[@]}" >"$out" 2>&1
        lost[$name]=$(( ${lost[$name]:-0} + $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
k = r.get("kernel") or {}
print(sum(c["lost"] for c in r["cpus"]) + k.get("map_full", 0))' "$work/$name.json") ))
        ;;
    scry-runqlat)
        "$scry" sched runqlat -a --format json -o "$work/runqlat.json" -- "${bench[@]}" >"$out" 2>&1
        lost[$name]=$(( ${lost[$name]:-0} + $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["lost"])' "$work/runqlat.json") ))
        ;;
    esac
    times[$name]="${times[$name]:-} $(total_time "$out")"
}

names=(alone perf scry-profile scry-nobpf scry-runqlat)
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
for name in scry-profile scry-nobpf scry-runqlat; do
    awk -v s="${med[$name]}" -v p="${med[perf]}" -v b="${med[alone]}" -v n="$name" 'BEGIN {
        ps = p - b; ss = s - b;
        printf "%s / perf sched record: time %.2fx, added time %.2fx\n", n, s / p, (ps > 0 ? ss / ps : 0) }'
done
