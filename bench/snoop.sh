#!/usr/bin/env bash
# bench/snoop.sh: the slowdown of an open-heavy, an exec-heavy and a
# signal-heavy workload while `scry opensnoop` / `scry execsnoop` /
# `scry killsnoop` stream every event, next to libbpf-tools' opensnoop /
# execsnoop / killsnoop (bcc's tools on libbpf), side by side in one run.
#
# Workloads: workloads/opens N K DIR (N opens, K failing) and
# workloads/execs N /bin/true (N fork+execve), workloads/signals N 0 PID
# (N kill/tkill/tgkill of SIGUSR1 to itself), forked stopped (sh stops
# itself, then execs it once continued: same pid). opensnoop and killsnoop
# tracers watch -p PID; execsnoop has no -p in libbpf-tools, so both watch the system.
# Each tracer writes to a file (a terminal or a pipe would time the
# reader), and counts as attached once it printed its header. Timed: from
# SIGCONT to the workload's exit. REPS repetitions, each a bare, a
# libbpf-tools and a scry run in an order rotated every repetition; per
# tracer the median wall time, and its slowdown: the median of the per
# repetition traced / bare ratios (bench/common.sh), spreads beside; the
# last lines print scry's time over the peer's the same way (below 1:
# scry slows the workload less). Each tracer's line count is checked.
#
# Usage: bench/snoop.sh   (env REPS=7, OPENS=200000, EXECS=2000, KILLS=200000,
#   KINDS="opens execs kills" the workloads to run, SCRY_BIN=path to skip the build)
# Needs: root, libbpf-tools (scripts/deps), cc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-7} OPENS=${OPENS:-200000} EXECS=${EXECS:-2000} KILLS=${KILLS:-200000}
KINDS=${KINDS:-opens execs kills}
for tool in opensnoop execsnoop killsnoop stdbuf cc; do
    command -v "$tool" >/dev/null || { echo "bench/snoop.sh: no $tool (scripts/deps installs libbpf-tools)" >&2; exit 2; }
done
. bench/common.sh
bench_scry snoop.sh
opens=$(scripts/workload opens)
execs=$(scripts/workload execs)
signals=$(scripts/workload signals)
: >"$out/present"

# settle LOG PATTERN WANT (bench/settle.sh).
source bench/settle.sh

# run KIND NAME [TRACER ARGS...]: one timed run of workload KIND (opens,
# execs or kills), traced by TRACER (with -p PID for opens and kills).
run() {
    local kind=$1 name=$2; shift 2
    if [ "$kind" = opens ]; then
        sh -c 'kill -STOP $$; exec "$0" "$@"' "$opens" "$OPENS" 0 "$out" &
    elif [ "$kind" = kills ]; then
        # 4194304: no pid (none of the signals goes there: K = 0).
        sh -c 'kill -STOP $$; exec "$0" "$@"' "$signals" "$KILLS" 0 4194304 &
    else
        sh -c 'kill -STOP $$; exec "$0" "$@"' "$execs" "$EXECS" /bin/true &
    fi
    local pid=$! tracer="" log="$out/$kind-$name.out"
    until [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ]; do sleep 0.01; done
    if [ $# -gt 0 ]; then
        local target=()
        [ "$kind" != execs ] && target=(-p "$pid")
        stdbuf -oL "$@" "${target[@]}" >"$log" 2>>"$out/$kind-$name.err" &
        tracer=$!
        until [ -s "$log" ]; do sleep 0.01; done   # its header: attached
    fi
    local t0=$EPOCHREALTIME
    kill -CONT "$pid"
    wait "$pid"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$kind-$name"
    if [ -n "$tracer" ]; then
        local want=$OPENS pattern="$out/present" count
        [ "$kind" = execs ] && want=$EXECS pattern=' /bin/true execs [0-9]'
        [ "$kind" = kills ] && want=$KILLS pattern=' signals  *10  '
        settle "$log" "$pattern" "$want"
        kill -INT "$tracer" 2>/dev/null || true
        wait "$tracer" || true
        count=$(grep -c -- "$pattern" "$log" || true)
        [ "$count" = "$want" ] || echo "bench/snoop.sh: $name $kind printed $count lines, not $want (lost events)" >&2
    fi
}

for rep in $(seq "$REPS"); do
    for kind in $KINDS; do
        for name in $(rotated "$rep" bare libbpf-tools scry); do
            case $name in
                bare) run "$kind" bare ;;
                libbpf-tools) run "$kind" libbpf-tools "${kind%s}snoop" ;;
                scry) run "$kind" scry "$scry" "${kind%s}snoop" ;;
            esac
        done
    done
done

echo "medians of $REPS repetitions (min..max); slowdown: per repetition traced / bare"
for kind in $KINDS; do
    n=$OPENS; [ "$kind" = execs ] && n=$EXECS; [ "$kind" = kills ] && n=$KILLS
    echo "${kind%s}snoop on $n $kind:"
    slowdown_table "$kind-" bare libbpf-tools scry
done
for kind in $KINDS; do
    echo "scry / libbpf-tools wall time, ${kind%s}snoop: $(versus "$kind-" scry libbpf-tools)"
done
