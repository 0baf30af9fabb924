#!/usr/bin/env bash
# bench/net.sh: the slowdown of a connection-heavy workload while `scry
# tcplife` reports every TCP session, next to libbpf-tools' tcplife (bcc's
# tool on libbpf), side by side in one run.
#
# Workload: workloads/conns N 100 100 4 (N loopback connections, one at a
# time, 100 bytes each way; both ends in one process, so each connection
# is two sessions), forked stopped (sh stops itself, then execs it once
# continued: same pid). Both tracers watch -p PID, write to a file (a
# terminal or a pipe would time the reader), and count as attached once
# they printed their header. Timed: from SIGCONT to the workload's exit.
# REPS repetitions, each a bare, a libbpf-tools and a scry run in an order
# rotated every repetition; per tracer the median wall time, and its
# slowdown: the median of the per repetition traced / bare ratios
# (bench/common.sh), spreads beside; the last line prints scry's time over
# the peer's the same way (below 1: scry slows the workload less). Each
# tracer's session count (2N) is checked.
#
# Usage: bench/net.sh   (env REPS=7, CONNS=5000, SCRY_BIN=path to skip the build)
# Needs: root, libbpf-tools (scripts/deps), cc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-7} CONNS=${CONNS:-5000}
for tool in tcplife stdbuf cc; do
    command -v "$tool" >/dev/null || { echo "bench/net.sh: no $tool (scripts/deps installs libbpf-tools)" >&2; exit 2; }
done
. bench/common.sh
bench_scry net.sh
conns=$(scripts/workload conns)
source bench/settle.sh

# run NAME [TRACER ARGS...]: one timed run of the workload, traced by
# TRACER -p PID.
run() {
    local name=$1; shift
    sh -c 'kill -STOP $$; exec "$0" "$@"' "$conns" "$CONNS" 100 100 4 0 2>/dev/null &
    local pid=$! tracer="" log="$out/$name.out"
    until [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ]; do sleep 0.01; done
    if [ $# -gt 0 ]; then
        stdbuf -oL "$@" -p "$pid" >"$log" 2>>"$out/$name.err" &
        tracer=$!
        until [ -s "$log" ]; do sleep 0.01; done   # its header: attached
    fi
    local t0=$EPOCHREALTIME
    kill -CONT "$pid"
    wait "$pid"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    if [ -n "$tracer" ]; then
        local want=$((2 * CONNS)) pattern=" conns " count
        settle "$log" "$pattern" "$want"
        kill -INT "$tracer" 2>/dev/null || true
        wait "$tracer" || true
        count=$(grep -c -- "$pattern" "$log" || true)
        [ "$count" = "$want" ] || echo "bench/net.sh: $name printed $count sessions, not $want (lost events)" >&2
    fi
}

for rep in $(seq "$REPS"); do
    for name in $(rotated "$rep" bare libbpf-tools scry); do
        case $name in
            bare) run bare ;;
            libbpf-tools) run libbpf-tools tcplife ;;
            scry) run scry "$scry" tcplife ;;
        esac
    done
done

echo "medians of $REPS repetitions (min..max); slowdown: per repetition traced / bare"
echo "tcplife on $CONNS loopback connections ($((2 * CONNS)) sessions):"
slowdown_table "" bare libbpf-tools scry
echo "scry / libbpf-tools wall time, tcplife: $(versus "" scry libbpf-tools)"
