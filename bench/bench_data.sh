#!/bin/sh
# bench/bench_data.sh SCRY OUT [SECONDS=20] [FREQ=10000] [WORKLOAD=deep]:
# the large recording bench/export.sh and bench/serve.sh time scry on:
# `scry record -a -F FREQ -g -e cpu-clock -e sched:sched_switch -- sleep
# SECONDS` with WORKLOAD busy on every CPU, about FREQ x CPUs x SECONDS
# samples (400k with the defaults on 2 CPUs), plus the switches.
set -eu

scry=$1
data=$2
seconds=${3:-20}
freq=${4:-10000}
workload=${5:-deep}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/scry-bench-data.XXXXXX)
trap 'kill $(cat "$work/pids" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM

cc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
    -o "$work/$workload" "$repo/workloads/$workload.c"
: > "$work/pids"
i=0
while [ "$i" -lt "$(nproc)" ]; do
    "$work/$workload" 1000000000 & echo $! >> "$work/pids"
    i=$((i + 1))
done
echo "recording $seconds s system-wide at $freq Hz..." >&2
"$scry" record -q -a -F "$freq" -g -e cpu-clock -e sched:sched_switch -o "$data" -- sleep "$seconds"
