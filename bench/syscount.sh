#!/usr/bin/env bash
# bench/syscount.sh: the slowdown of a syscall-heavy workload while
# `scry syscount` counts its system calls in the kernel, next to
# libbpf-tools' `syscount` (bcc's tool on libbpf), side by side in one run.
#
# Workload: workloads/calls N (exactly N getppid system calls), forked
# stopped (sh stops itself, then execs it once continued: same pid), so each
# tracer attaches with -p PID before the first call. Timed: from SIGCONT to
# the workload's exit. For each: the median wall time of REPS interleaved
# runs; slowdown = traced / bare; the last line prints scry's time as a
# ratio to the peer's (below 1 means scry slows the workload less). Each
# tracer's getppid count is checked to be N.
#
# Usage: bench/syscount.sh   (env REPS=5, CALLS=1000000, SCRY_BIN=path to skip the build)
# Needs: root, libbpf-tools (scripts/deps), cc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5} CALLS=${CALLS:-1000000}
for tool in syscount stdbuf cc; do
    command -v "$tool" >/dev/null || { echo "bench/syscount.sh: no $tool (scripts/deps installs libbpf-tools)" >&2; exit 2; }
done
. bench/common.sh
bench_scry syscount.sh
calls=$(scripts/workload calls)

# run NAME [TRACER ARGS...]: one timed run of the workload, under TRACER -p PID.
run() {
    local name=$1; shift
    sh -c 'kill -STOP $$; exec "$0" "$@"' "$calls" "$CALLS" &
    local pid=$! tracer=""
    until [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ]; do sleep 0.01; done
    if [ $# -gt 0 ]; then
        rm -f "$out/fifo"; mkfifo "$out/fifo"
        stdbuf -oL "$@" -p "$pid" >"$out/fifo" 2>>"$out/$name.err" &
        tracer=$!
        exec 3<"$out/fifo"
        read -r _ <&3   # its first line: attached
    fi
    local t0=$EPOCHREALTIME
    kill -CONT "$pid"
    wait "$pid"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    if [ -n "$tracer" ]; then
        # scry ends when the -p process exits; libbpf-tools needs SIGINT.
        kill -INT "$tracer" 2>/dev/null || true
        wait "$tracer" || true
        count=$(cat <&3 | awk '$1 == "getppid" {print $2}')
        exec 3<&-
        [ "$count" = "$CALLS" ] || echo "bench/syscount.sh: $name counted '${count}' getppid, not $CALLS" >&2
    fi
}

for _ in $(seq "$REPS"); do
    run bare
    run libbpf-tools syscount
    run scry "$scry" syscount
done

bare=$(median bare)
printf '%-14s %10s %10s\n' tracer "wall (s)" slowdown
for name in bare libbpf-tools scry; do
    m=$(median "$name")
    printf '%-14s %10.3f %9.2fx\n' "$name" "$m" "$(ratio "$m" "$bare")"
done
echo "scry / libbpf-tools wall time: $(ratio "$(median scry)" "$(median libbpf-tools)")"
