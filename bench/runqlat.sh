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
# workload's wall time. For each: the median of REPS interleaved runs;
# slowdown = traced / bare; the last line prints scry's time as a ratio to
# the peer's (below 1 means scry slows the workload less). Each tracer's
# histogram total is printed beside it.
#
# Usage: bench/runqlat.sh   (env REPS=5, NGROUPS=10, LOOPS=300, SCRY_BIN=path to skip the build)
# Needs: root, libbpf-tools and perf (scripts/deps).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5} NGROUPS=${NGROUPS:-10} LOOPS=${LOOPS:-300}
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

for _ in $(seq "$REPS"); do
    run bare
    run libbpf-tools runqlat
    run scry "$scry" runqlat
done

bare=$(median bare)
printf '%-14s %10s %10s %16s\n' tracer "wall (s)" slowdown "waits (median)"
for name in bare libbpf-tools scry; do
    m=$(median "$name")
    waits=-
    [ -f "$out/$name.total" ] && waits=$(median "$name.total")
    printf '%-14s %10.3f %9.2fx %16s\n' "$name" "$m" "$(ratio "$m" "$bare")" "$waits"
done
echo "scry / libbpf-tools wall time: $(ratio "$(median scry)" "$(median libbpf-tools)")"
