#!/usr/bin/env bash
# bench/runqlat.sh: the slowdown of a scheduler-heavy workload while
# `scry runqlat` counts every run-queue wait of the machine in the kernel,
# next to libbpf-tools' `runqlat` (bcc's tool on libbpf), side by side in
# one run.
#
# Workload: `perf bench sched messaging` (NGROUPS groups of 20 senders and
# 20 receivers passing LOOPS messages over sockets: wakeups and switches
# by the hundred thousand). Each tracer runs system-wide and is attached
# (its first line printed) before the workload starts; timed: the
# workload's wall time. For each: the median of REPS runs, in an order
# rotated each repetition; slowdown: the median of the per repetition
# ratios traced / bare, with its spread (bench/common.sh's
# slowdown_table); the last line prints scry's time as a ratio to the
# peer's, per repetition (below 1 means scry slows the workload less).
# Each tracer's histogram total is printed; each runs under `timeout -s
# KILL`.
#
# Usage: bench/runqlat.sh   (env REPS=7, NGROUPS=10, LOOPS=300, SCRY_BIN=path to skip the build)
# Needs: root, libbpf-tools and perf (scripts/deps).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-7} NGROUPS=${NGROUPS:-10} LOOPS=${LOOPS:-300}
for tool in runqlat perf stdbuf; do
    command -v "$tool" >/dev/null || { echo "bench/runqlat.sh: no $tool (scripts/deps installs it)" >&2; exit 2; }
done
. bench/common.sh
bench_scry runqlat.sh
# The total of a histogram's `low -> high : count |...|` rows.
total() { awk -F: '/ -> / {split($2, c, " "); n += c[1]} END {print n + 0}'; }

# run NAME [TRACER ARGS...]: one timed workload run, under TRACER if given.
run() {
    local name=$1; shift
    local tracer=""
    if [ $# -gt 0 ]; then
        rm -f "$out/fifo"; mkfifo "$out/fifo"
        stdbuf -oL "$@" >"$out/fifo" 2>>"$out/$name.err" &
        tracer=$!
        exec 3<"$out/fifo"
        read -r _ <&3   # its first line: attached
    fi
    local t0=$EPOCHREALTIME
    perf bench sched messaging -g "$NGROUPS" -l "$LOOPS" >/dev/null
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    if [ -n "$tracer" ]; then
        kill -INT "$tracer" 2>/dev/null || true
        wait "$tracer" || true
        total <&3 >>"$out/$name.total"
        exec 3<&-
    fi
}

for rep in $(seq "$REPS"); do
    for name in $(rotated "$rep" bare libbpf-tools scry); do
        case $name in
            bare) run bare ;;
            libbpf-tools) run libbpf-tools timeout -s KILL 120 runqlat ;;
            scry) run scry timeout -s KILL 120 "$scry" runqlat ;;
        esac
    done
done

echo "bench/runqlat.sh: perf bench sched messaging -g $NGROUPS -l $LOOPS, $REPS repetitions (load average $(cut -d' ' -f1-3 /proc/loadavg))"
slowdown_table "" bare libbpf-tools scry
echo "waits counted (median): libbpf-tools $(median libbpf-tools.total), scry $(median scry.total)"
echo "scry / libbpf-tools wall time: $(versus "" scry libbpf-tools)"
