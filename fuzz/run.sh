#!/bin/sh
# Runs the fuzz targets, each for SECONDS (default 300), on seeded corpora:
#   fuzz/run.sh [SECONDS] [TARGET...]      (default: every target)
# CI runs `fuzz/run.sh 45` (scripts/test): about 2 min of fuzzing on top of
# the build. A crash, a leak or an out-of-memory fails the run, and the
# input is left in fuzz/artifacts/TARGET/ (replay it with
# `RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET ARTIFACT`).
#
# Seeds: perf_data_reader gets small files recorded by perf (plain with
# callchains, multi-event, system-wide, tracepoint, -z compressed, pipe
# format, group reads) when perf and perf events are there; tracepoint_format
# gets this kernel's own format files (FORMAT \0 RECORD BYTES).
# SCRY_FUZZ_STRICT=1 makes the last-resort catch_unwind findings crashes too.
set -eu
cd "$(dirname "$0")"
secs=${1:-300}
[ $# -gt 0 ] && shift
targets=${*:-"perf_data_reader tracepoint_format"}
./build.sh

seed_perf_data() {
    corpus=corpus/perf_data_reader
    mkdir -p "$corpus"
    [ -n "$(ls -A "$corpus")" ] && return 0
    command -v perf >/dev/null 2>&1 || return 0
    cc -O1 -fno-omit-frame-pointer -o target/calls ../workloads/calls.c
    # Each seed is optional: a machine without a facility skips it.
    perf record -q -g -F 999 -o "$corpus/g.data" -- target/calls 300000 || true
    perf record -q -e cpu-clock -e page-faults -o "$corpus/m.data" -- target/calls 100000 || true
    perf record -q -a -F 499 -o "$corpus/a.data" -- sleep 0.05 || true
    perf record -q -e sched:sched_switch -a -o "$corpus/s.data" -- sleep 0.05 || true
    perf record -q -z -g -F 999 -o "$corpus/z.data" -- target/calls 300000 || true
    perf record -q -g -F 999 -o - -- target/calls 100000 > "$corpus/pipe.data" || true
    perf record -q -e '{cpu-clock,task-clock}:S' -o "$corpus/group.data" -- target/calls 100000 || true
    rm -f "$corpus"/*.old
}

seed_formats() {
    corpus=corpus/tracepoint_format
    mkdir -p "$corpus"
    [ -n "$(ls -A "$corpus")" ] && return 0
    for dir in /sys/kernel/tracing/events /sys/kernel/debug/tracing/events; do
        [ -r "$dir/sched/sched_switch/format" ] || continue
        n=0
        for f in "$dir"/sched/*/format "$dir"/raw_syscalls/*/format "$dir"/irq/*/format; do
            [ -r "$f" ] || continue
            n=$((n + 1))
            { cat "$f"; printf '\0'; head -c 64 /dev/urandom; } > "$corpus/format$n"
        done
        break
    done
}

status=0
for target in $targets; do
    case $target in
        perf_data_reader) seed_perf_data ;;
        tracepoint_format) seed_formats ;;
    esac
    mkdir -p "corpus/$target"
    echo "fuzz/run.sh: $target for ${secs}s"
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=262144 \
        -print_final_stats=1 || status=1
done
exit $status
