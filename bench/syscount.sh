#!/usr/bin/env bash
# bench/syscount.sh: the slowdown of a syscall-heavy workload while
# `scry syscount` counts its system calls in the kernel, next to
# libbpf-tools' `syscount` (bcc's tool on libbpf), side by side in one run.
#
# Workload: workloads/calls N (exactly N getppid system calls), forked
# stopped (sh stops itself, then execs it once continued: same pid), so each
# tracer attaches with -p PID before the first call. Timed: from SIGCONT to
# the workload's exit. For each: the median wall time of REPS interleaved
# runs, in an order rotated each repetition; slowdown: the median of the
# per repetition ratios traced / bare, with its spread (bench/common.sh's
# slowdown_table); the last line prints scry's time as a ratio to the
# peer's, per repetition (below 1 means scry slows the workload less).
# Each tracer's getppid count is checked to be N; each runs under
# `timeout -s KILL`.
#
# Usage: bench/syscount.sh   (env REPS=7, CALLS=1000000, SCRY_BIN=path to skip the build)
# Needs: root, libbpf-tools (scripts/deps), cc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-7} CALLS=${CALLS:-1000000}
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

for rep in $(seq "$REPS"); do
    for name in $(rotated "$rep" bare libbpf-tools scry); do
        case $name in
            bare) run bare ;;
            libbpf-tools) run libbpf-tools timeout -s KILL 120 syscount ;;
            scry) run scry timeout -s KILL 120 "$scry" syscount ;;
        esac
    done
done

echo "bench/syscount.sh: $CALLS getppid calls, $REPS repetitions (load average $(cut -d' ' -f1-3 /proc/loadavg))"
slowdown_table "" bare libbpf-tools scry
echo "scry / libbpf-tools wall time: $(versus "" scry libbpf-tools)"
