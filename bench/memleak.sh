#!/usr/bin/env bash
# bench/memleak.sh: the slowdown of an allocation-heavy workload (the
# uprobe-heavy case: every malloc traps twice, every free once) while
# `scry memleak -p PID` follows every allocation, next to bpftrace's
# equivalent uprobe program (libbpf-tools' memleak is not in Debian's
# libbpf-tools): malloc's size by thread, at its return the size, time and
# user stack by address, free deleting; side by side in one run.
#
# Workload: workloads/mallocs N wait (N malloc/free pairs once it reads a
# line: the tracer attaches to the program itself, past its exec). Each tracer
# watches -p PID, writes to a file, and counts as attached once it printed
# its line saying so (scry: "Attaching to pid ..."; bpftrace: its BEGIN
# probe's line, printed after every probe attached). Timed: from the line
# written to the workload's exit. REPS repetitions, each a bare, a bpftrace
# and a scry run in an order rotated every repetition; per tracer the
# median wall time, and its slowdown: the median of the per repetition
# traced / bare ratios (bench/common.sh), spreads beside; the last line
# prints scry's time over bpftrace's the same way (below 1: scry slows the
# workload less).
#
# Usage: bench/memleak.sh   (env REPS=7, PAIRS=1000000, SCRY_BIN=path to
#   skip the build)
# Needs: root, bpftrace (scripts/deps), cc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-7} PAIRS=${PAIRS:-1000000}
for tool in bpftrace cc; do
    command -v "$tool" >/dev/null || { echo "bench/memleak.sh: no $tool (scripts/deps)" >&2; exit 2; }
done
. bench/common.sh
bench_scry memleak.sh
mallocs=$(scripts/workload mallocs)
libc=$(ldd "$mallocs" | awk '/libc\.so/ {print $3}')
[ -n "$libc" ] || { echo "bench/memleak.sh: $mallocs maps no libc" >&2; exit 2; }

# bpftrace's memleak: bcc's memleak.py reduced to malloc and free.
program='BEGIN { printf("attached\n"); }
uprobe:'"$libc"':malloc { @size[tid] = arg0; }
uretprobe:'"$libc"':malloc /@size[tid]/ {
    @bytes[retval] = @size[tid]; @when[retval] = nsecs; @stack[retval] = ustack;
    delete(@size[tid]);
}
uprobe:'"$libc"':free { delete(@bytes[arg0]); delete(@when[arg0]); delete(@stack[arg0]); }
END { clear(@size); clear(@bytes); clear(@when); clear(@stack); }'

# run NAME READY [TRACER ARGS...]: one timed run, traced by TRACER -p
# PID, attached once its output holds READY (bpftrace prints "Attaching N
# probes..." before it attaches: its BEGIN line is the sign).
run() {
    local name=$1 attached=$2; shift 2
    local fifo="$out/go" ready="$out/ready"
    # The last run's "ready" must not pass for this one's.
    rm -f "$fifo" "$ready"; mkfifo "$fifo"
    "$mallocs" "$PAIRS" wait <"$fifo" >"$ready" &
    local pid=$! tracer="" log="$out/$name.out"
    exec 3>"$fifo"
    until [ -s "$ready" ]; do sleep 0.01; done
    if [ $# -gt 0 ]; then
        # The last run's log must not pass for this one's either: the
        # tracer's shell truncates it only after this loop may have read
        # it (once, that timed a bare run and scry then found the workload
        # gone: "-p PID: no such process").
        rm -f "$log"
        "$@" -p "$pid" >"$log" 2>>"$out/$name.err" &
        tracer=$!
        until grep -q "$attached" "$log" 2>/dev/null; do
            kill -0 "$tracer" 2>/dev/null || { echo "bench/memleak.sh: $name did not start" >&2; cat "$out/$name.err" >&2; exit 2; }
            sleep 0.01
        done
    fi
    local t0=$EPOCHREALTIME
    echo go >&3
    wait "$pid"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    exec 3>&-
    if [ -n "$tracer" ]; then
        kill -INT "$tracer" 2>/dev/null || true
        wait "$tracer" || true
    fi
}

for rep in $(seq "$REPS"); do
    for name in $(rotated "$rep" bare bpftrace scry); do
        case $name in
            bare) run bare "" ;;
            bpftrace) run bpftrace '^attached' bpftrace -e "$program" ;;
            scry) run scry '^Attaching to pid' "$scry" memleak ;;
        esac
    done
done

echo "medians of $REPS repetitions (min..max); slowdown: per repetition traced / bare"
echo "memleak on $PAIRS malloc/free pairs:"
slowdown_table "" bare bpftrace scry
for name in bpftrace scry; do
    [ -s "$out/$name.err" ] && { echo "$name's stderr:"; sort "$out/$name.err" | uniq -c | head -5; }
done
echo "scry / bpftrace wall time, memleak: $(versus "" scry bpftrace)"
