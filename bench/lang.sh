#!/usr/bin/env bash
# bench/lang.sh: `scry run` against bpftrace on the same one-liners, side by
# side in one run, ratios printed.
#
# 1. Command to first event: a program with a tracepoint probe whose BEGIN
#    prints a line and exits (BEGIN runs, in both tools, once every probe is
#    attached): the wall time from the command's start to that line read
#    from its output (parse, compile, load, attach, first event; the
#    tool's teardown after it is not counted). Median of REPS runs each.
# 2. Cost per event: workloads/calls N (exactly N getppid) under
#    `tracepoint:syscalls:sys_enter_getppid /pid == PID/ { @ = count(); }`,
#    forked stopped so the tracer is ready (its BEGIN line read) before the
#    first call. Timed from SIGCONT to the workload's exit; cost per event
#    = (traced - bare) / N. Each tracer's count is checked to be N.
#
# Every tracer runs under `timeout -s KILL LIMIT` (default 30 s): one
# that does not exit after its `exit()` or its SIGINT (bpftrace has hung
# in its teardown here) is killed, and the bench goes on.
#
# Usage: bench/lang.sh   (env REPS=5, CALLS=1000000, LIMIT=30, SCRY_BIN=path to skip the build)
# Needs: root, bpftrace (scripts/deps), cc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5} CALLS=${CALLS:-1000000} LIMIT=${LIMIT:-30}
for tool in bpftrace stdbuf cc timeout; do
    command -v "$tool" >/dev/null || { echo "bench/lang.sh: no $tool (scripts/deps installs bpftrace)" >&2; exit 2; }
done
. bench/common.sh
bench_scry lang.sh
calls=$(scripts/workload calls)

START='tracepoint:syscalls:sys_enter_getppid { @ = count(); } BEGIN { printf("ready\n"); exit(); }'
# start NAME CMD...: the wall time from the start to the `ready` line.
start() {
    local name=$1; shift
    rm -f "$out/fifo"; mkfifo "$out/fifo"
    local t0=$EPOCHREALTIME
    timeout -s KILL "$LIMIT" stdbuf -oL "$@" >"$out/fifo" 2>>"$out/$name.err" &
    local tool=$!
    exec 3<"$out/fifo"
    while read -r line <&3; do [ "$line" = ready ] && break; done
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    cat <&3 >/dev/null
    exec 3<&-
    wait "$tool" || true
}

# cost NAME [TOOL ARGS]: one timed run of the workload, traced by TOOL -e PROG.
cost() {
    local name=$1; shift
    sh -c 'kill -STOP $$; exec "$0" "$@"' "$calls" "$CALLS" &
    local pid=$! tracer=""
    until [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ]; do sleep 0.01; done
    if [ $# -gt 0 ]; then
        local prog="BEGIN { printf(\"ready\\n\"); } tracepoint:syscalls:sys_enter_getppid /pid == $pid/ { @ = count(); }"
        rm -f "$out/fifo"; mkfifo "$out/fifo"
        timeout -s KILL "$LIMIT" stdbuf -oL "$@" -e "$prog" >"$out/fifo" 2>>"$out/$name.err" &
        tracer=$!
        exec 3<"$out/fifo"
        while read -r line <&3; do [ "$line" = ready ] && break; done
    fi
    local t0=$EPOCHREALTIME
    kill -CONT "$pid"
    wait "$pid"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    if [ -n "$tracer" ]; then
        kill -INT "$tracer" 2>/dev/null || true
        wait "$tracer" || true
        count=$(cat <&3 | awk '$1 == "@:" {print $2}')
        exec 3<&-
        [ "$count" = "$CALLS" ] || echo "bench/lang.sh: $name counted '${count}' getppid, not $CALLS" >&2
    fi
}

for _ in $(seq "$REPS"); do
    start scry_start "$scry" run -e "$START"
    start bpftrace_start bpftrace -e "$START"
    cost bare
    cost scry "$scry" run
    cost bpftrace bpftrace
done
s_start=$(median scry_start) b_start=$(median bpftrace_start)
bare=$(median bare) s=$(median scry) b=$(median bpftrace)
per() { awk -v t="$1" -v b="$bare" -v n="$CALLS" 'BEGIN {printf "%.1f", (t - b) / n * 1e9}'; }
printf '%-28s %12s %12s %8s\n' "" scry bpftrace ratio
printf '%-28s %10.1fms %10.1fms %8s\n' "command to first event" \
    "$(awk -v t="$s_start" 'BEGIN {print t * 1000}')" "$(awk -v t="$b_start" 'BEGIN {print t * 1000}')" "$(ratio "$s_start" "$b_start")"
printf '%-28s %10.3fs %10.3fs %8s  (bare %.3fs)\n' "$CALLS getppid, traced" "$s" "$b" "$(ratio "$s" "$b")" "$bare"
printf '%-28s %10sns %10sns %8s\n' "cost per event" "$(per "$s")" "$(per "$b")" \
    "$(awk -v s="$s" -v b="$b" -v z="$bare" 'BEGIN {d = b - z; printf "%.3f", (d > 0 ? (s - z) / d : 0)}')"
