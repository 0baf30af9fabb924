#!/bin/sh
# Seeds a corpus with small files recorded by perf (plain with callchains,
# multi-event, system-wide, tracepoint, -z compressed, pipe format) and runs
# the perf_data_reader fuzzer for SECONDS (default 300).
# SCRY_FUZZ_STRICT=1 makes the last-resort catch_unwind findings crashes too.
set -eu
cd "$(dirname "$0")"
secs=${1:-300}
corpus=corpus/perf_data_reader
mkdir -p "$corpus"
if [ -z "$(ls -A "$corpus")" ]; then
    cc -O1 -fno-omit-frame-pointer -o target/calls ../workloads/calls.c
    perf record -q -g -F 999 -o "$corpus/g.data" -- target/calls 300000
    perf record -q -e cpu-clock -e page-faults -o "$corpus/m.data" -- target/calls 100000
    perf record -q -a -F 499 -o "$corpus/a.data" -- sleep 0.05
    perf record -q -e sched:sched_switch -a -o "$corpus/s.data" -- sleep 0.05
    perf record -q -z -g -F 999 -o "$corpus/z.data" -- target/calls 300000
    perf record -q -g -F 999 -o - -- target/calls 100000 > "$corpus/pipe.data"
fi
./build.sh perf_data_reader
RUSTC_BOOTSTRAP=1 cargo fuzz run perf_data_reader "$corpus" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=262144
